/**
 * Section merge (lib/core/differ/merge.ts, lib/core/differ/merge-lines.ts): every rule of docs/api.md's "Section merge" (the push route) with an
 * exact expected page, and properties over seeded random pages.
 */
import { describe, expect, it } from 'vitest';
import { MERGE_YAML_CHARS, mergePages, mergePagesAsync, mergeSteps, type PageMerge } from '../lib/core/differ/merge.ts';
import { mergeLines } from '../lib/core/differ/merge-lines.ts';
import { parsePage } from '../lib/core/page/parse.ts';

const page = (front: string, ...parts: string[]) => `---\n${front}\n---\n${parts.join('\n')}`;
const BASE = page('title: ADR 1\ntags: [a, b]\nstatus: draft', 'Intro.\n', '## Context\nWe need X.\n', '## Decision\nUse Y.\n', '## Consequences\nSome.\n');

function clean(r: PageMerge): string {
  if (!r.clean) throw new Error(`expected a clean merge, got conflicts ${r.conflicting.join(', ')}`);
  return r.text;
}

describe('mergeLines', () => {
  it('applies hunks that neither overlap nor touch', () => {
    expect(mergeLines(['a', 'b', 'c', 'd', 'e'], ['A', 'b', 'c', 'd', 'e'], ['a', 'b', 'c', 'd', 'E'])).toEqual({ clean: true, lines: ['A', 'b', 'c', 'd', 'E'] });
  });
  it('refuses touching hunks, and overlapping ones that differ', () => {
    expect(mergeLines(['a', 'b', 'c'], ['A', 'b', 'c'], ['a', 'B', 'c'])).toEqual({ clean: false });
    expect(mergeLines(['a', 'b', 'c'], ['a', 'X', 'c'], ['a', 'Y', 'c'])).toEqual({ clean: false });
    // Two insertions at one point touch.
    expect(mergeLines(['a', 'b'], ['a', 'x', 'b'], ['a', 'y', 'b'])).toEqual({ clean: false });
  });
  it('takes the same change made on both sides once', () => {
    expect(mergeLines(['a', 'b', 'c', 'd'], ['a', 'B', 'c', 'D'], ['a', 'B', 'c', 'd'])).toEqual({ clean: true, lines: ['a', 'B', 'c', 'D'] });
  });
  it('handles insertions at the ends and deletions', () => {
    expect(mergeLines(['a', 'b', 'c'], ['x', 'a', 'b', 'c'], ['a', 'b', 'c', 'y'])).toEqual({ clean: true, lines: ['x', 'a', 'b', 'c', 'y'] });
    expect(mergeLines(['a', 'b', 'c', 'd', 'e'], ['b', 'c', 'd', 'e'], ['a', 'b', 'c', 'd'])).toEqual({ clean: true, lines: ['b', 'c', 'd'] });
  });
});

describe('mergePages: frontmatter', () => {
  it('takes a key changed on one side, and an added and a removed key', () => {
    const theirs = BASE.replace('status: draft', 'status: accepted');
    const ours = BASE.replace('title: ADR 1\n', '').replace('status: draft', 'status: draft\nowner: kim');
    expect(clean(mergePages(BASE, theirs, ours))).toBe(page('tags: [a, b]\nstatus: accepted\nowner: kim', 'Intro.\n', '## Context\nWe need X.\n', '## Decision\nUse Y.\n', '## Consequences\nSome.\n'));
  });
  it('merges lists of strings as sets: theirs order, then ours additions in ours order', () => {
    const theirs = BASE.replace('tags: [a, b]', 'tags: [b, a, t]');
    const ours = BASE.replace('tags: [a, b]', 'tags: [z, b, y]');
    expect(clean(mergePages(BASE, theirs, ours))).toBe(BASE.replace('tags: [a, b]', 'tags: [b, t, z, y]'));
  });
  it('a key changed differently on both sides is a conflict; the same change is taken once', () => {
    const r = mergePages(BASE, BASE.replace('status: draft', 'status: done'), BASE.replace('status: draft', 'status: wip'));
    expect(r).toEqual({ clean: false, conflicting: ['frontmatter.status'] });
    const same = BASE.replace('status: draft', 'status: done');
    expect(clean(mergePages(BASE, same.replace('Use Y.', 'Use Z.'), same.replace('Some.', 'More.')))).toBe(
      same.replace('Use Y.', 'Use Z.').replace('Some.', 'More.'),
    );
  });
  it('a key removed on one side and changed on the other is a conflict', () => {
    const r = mergePages(BASE, BASE.replace('status: draft\n', ''), BASE.replace('status: draft', 'status: done'));
    expect(r).toEqual({ clean: false, conflicting: ['frontmatter.status'] });
  });
});

describe('mergePages: sections', () => {
  it('different sections changed on each side: both kept, in place', () => {
    const theirs = BASE.replace('Use Y.', 'Use Y, because Z.');
    const ours = BASE.replace('Some.', 'Some more.');
    const r = mergePages(BASE, theirs, ours);
    expect(clean(r)).toBe(BASE.replace('Use Y.', 'Use Y, because Z.').replace('Some.', 'Some more.'));
    expect(r.clean && r.parts).toEqual([
      { name: '## Decision', change: 'modified', side: 'theirs' },
      { name: '## Consequences', change: 'modified', side: 'ours' },
    ]);
  });
  it('a section added on one side goes after the section that precedes it there', () => {
    const theirs = BASE.replace('## Decision', '## Options\nA or B.\n\n## Decision');
    const ours = BASE.replace('## Consequences', '## Risks\nSome risk.\n\n## Consequences') + '\n## Notes\nLast.\n';
    expect(clean(mergePages(BASE, theirs, ours))).toBe(
      page('title: ADR 1\ntags: [a, b]\nstatus: draft', 'Intro.\n', '## Context\nWe need X.\n', '## Options\nA or B.\n', '## Decision\nUse Y.\n', '## Risks\nSome risk.\n', '## Consequences\nSome.\n', '## Notes\nLast.\n'),
    );
  });
  it('both sides adding after the same section: theirs first when theirs is theirs', () => {
    const theirs = BASE.replace('## Decision', '## T\nt\n\n## Decision');
    const ours = BASE.replace('## Decision', '## O\no\n\n## Decision');
    expect(clean(mergePages(BASE, theirs, ours))).toContain('## Context\nWe need X.\n\n## O\no\n\n## T\nt\n\n## Decision');
    expect(clean(mergePages(BASE, ours, theirs))).toContain('## Context\nWe need X.\n\n## T\nt\n\n## O\no\n\n## Decision');
  });
  it('deleted on one side and unchanged on the other → deleted; changed on the other → conflict', () => {
    const without = BASE.replace('## Context\nWe need X.\n\n', '');
    expect(clean(mergePages(BASE, without, BASE.replace('Some.', 'More.')))).toBe(without.replace('Some.', 'More.'));
    expect(clean(mergePages(BASE, BASE.replace('Some.', 'More.'), without))).toBe(without.replace('Some.', 'More.'));
    expect(mergePages(BASE, without, BASE.replace('We need X.', 'We need W.'))).toEqual({ clean: false, conflicting: ['## Context'] });
    expect(mergePages(BASE, BASE.replace('We need X.', 'We need W.'), without)).toEqual({ clean: false, conflicting: ['## Context'] });
  });
  it('the last section deleted by ours: the page ends where the one before it ends', () => {
    const without = BASE.replace('\n## Consequences\nSome.\n', '');
    expect(clean(mergePages(BASE, BASE.replace('Use Y.', 'Use Z.'), without))).toBe(without.replace('Use Y.', 'Use Z.'));
  });
  it('changed on both sides: a line-level merge of its body, a conflict when hunks touch', () => {
    const b = page('title: t', '## S\nl1\nl2\nl3\nl4\nl5\n');
    expect(clean(mergePages(b, b.replace('l1', 'L1'), b.replace('l5', 'L5')))).toBe(page('title: t', '## S\nL1\nl2\nl3\nl4\nL5\n'));
    expect(mergePages(b, b.replace('l2', 'L2'), b.replace('l3', 'L3'))).toEqual({ clean: false, conflicting: ['## S'] });
  });
  it('the preamble merges like a section and conflicts as _preamble', () => {
    expect(clean(mergePages(BASE, BASE.replace('Intro.', 'Intro!'), BASE.replace('Some.', 'More.')))).toBe(BASE.replace('Intro.', 'Intro!').replace('Some.', 'More.'));
    expect(mergePages(BASE, BASE.replace('Intro.', 'Intro!'), BASE.replace('Intro.', 'Intro?'))).toEqual({ clean: false, conflicting: ['_preamble'] });
  });
  it('repeated headings pair by occurrence', () => {
    const b = page('title: t', '## Note\none\n', '## Note\ntwo\n');
    expect(clean(mergePages(b, b.replace('one', 'ONE'), b.replace('two', 'TWO')))).toBe(page('title: t', '## Note\nONE\n', '## Note\nTWO\n'));
  });
  it('reports every conflict at once, in an order independent of the sides', () => {
    const theirs = BASE.replace('status: draft', 'status: a').replace('Use Y.', 'Use A.').replace('We need X.', 'X!');
    const ours = BASE.replace('status: draft', 'status: b').replace('Use Y.', 'Use B.').replace('## Context\nWe need X.\n\n', '');
    const r = mergePages(BASE, theirs, ours);
    expect(r).toEqual({ clean: false, conflicting: ['frontmatter.status', '## Context', '## Decision'] });
    expect(mergePages(BASE, ours, theirs)).toEqual(r);
  });
});

describe('mergePages: files that are not pages', () => {
  it('merge line by line over the whole text', () => {
    const b = 'one\ntwo\nthree\nfour\nfive\n';
    expect(clean(mergePages(b, b.replace('one', 'ONE'), b.replace('five', 'FIVE')))).toBe('ONE\ntwo\nthree\nfour\nFIVE\n');
    expect(mergePages(b, b.replace('two', '2'), b.replace('two', 'II'))).toEqual({ clean: false, conflicting: ['_preamble'] });
  });
  it('one side that stops being a page: whole-text merge', () => {
    const theirs = BASE.replace('Use Y.', 'Use Z.');
    const ours = BASE.replace('---\ntitle', 'title').replace('Some.', 'More.');
    const r = mergePages(BASE, theirs, ours);
    expect(parsePage(ours).frontmatter).toBeNull();
    expect(clean(r)).toBe(ours.replace('Use Y.', 'Use Z.'));
  });
});

describe('mergePages: every frontmatter key, and the block as text', () => {
  const KEYS = page('__proto__: p\nconstructor: c\ntoString: s\nhasOwnProperty: h\ntitle: t\nstatus: draft', '## A\na\n');

  it('keys named like object machinery survive: kept, taken from one side, or in conflict by name', () => {
    const theirs = KEYS.replace('title: t', 'title: T');
    const ours = KEYS.replace('status: draft', 'status: done');
    expect(clean(mergePages(KEYS, theirs, ours))).toBe(theirs.replace('status: draft', 'status: done'));
    // One side changes __proto__ and another key, the other side a third key.
    const protoChanged = KEYS.replace('__proto__: p', '__proto__: q').replace('toString: s', 'toString: S');
    expect(clean(mergePages(KEYS, protoChanged, ours))).toBe(protoChanged.replace('status: draft', 'status: done'));
    expect(clean(mergePages(KEYS, ours, protoChanged))).toBe(protoChanged.replace('status: draft', 'status: done'));
    // A key only one side removes is removed.
    const noCtor = KEYS.replace('constructor: c\n', '');
    expect(clean(mergePages(KEYS, noCtor, ours))).toBe(noCtor.replace('status: draft', 'status: done'));
    const r = mergePages(KEYS, KEYS.replace('__proto__: p', '__proto__: x').replace('title: t', 'title: T'), KEYS.replace('__proto__: p', '__proto__: y'));
    expect(r).toEqual({ clean: false, conflicting: ['frontmatter.__proto__'] });
    const parts = mergePages(KEYS, theirs, ours);
    expect(parts.clean && parts.parts).toEqual([
      { name: 'frontmatter.title', change: 'modified', side: 'theirs' },
      { name: 'frontmatter.status', change: 'modified', side: 'ours' },
    ]);
  });

  it('a change of comments, key order or formatting on one side while the other changed the block → conflict on frontmatter', () => {
    const base = page('title: t\n# why: none yet\nstatus: draft\nowner: kim', '## A\na\n');
    const keyChange = base.replace('status: draft', 'status: done');
    const edits = [
      base.replace('# why: none yet', '# why: asked by ops'), // a comment
      base.replace('status: draft\nowner: kim', 'owner: kim\nstatus: draft'), // key order
      base.replace('owner: kim', 'owner: "kim"'), // formatting
    ];
    for (const other of edits) {
      expect(mergePages(base, keyChange, other)).toEqual({ clean: false, conflicting: ['frontmatter'] });
      expect(mergePages(base, other, keyChange)).toEqual({ clean: false, conflicting: ['frontmatter'] });
      // The other side left the block as it was: the change is kept as written.
      const bodyChange = base.replace('a\n', 'b\n');
      expect(clean(mergePages(base, other, bodyChange))).toBe(other.replace('a\n', 'b\n'));
      expect(clean(mergePages(base, bodyChange, other))).toBe(other.replace('a\n', 'b\n'));
    }
    // Reported first, beside a key in conflict.
    const both = mergePages(base, keyChange.replace('# why: none yet', '# why: ops'), base.replace('status: draft', 'status: wip'));
    expect(both).toEqual({ clean: false, conflicting: ['frontmatter', 'frontmatter.status'] });
  });

  it('a block larger than the YAML cap: one side\'s change is taken as written; changes on both sides are a conflict', () => {
    const keys = Array.from({ length: 1_500 }, (_, i) => `k${i}: v${i}`);
    const base = page(keys.join('\n'), '## A\na\n');
    expect(base.length).toBeGreaterThan(MERGE_YAML_CHARS);
    const theirs = base.replace('k5: v5\n', 'k5: theirs\n');
    const ours = base.replace('k1495: v1495\n', 'k1495: ours\n');
    expect(clean(mergePages(base, theirs, base.replace('a\n', 'b\n')))).toBe(theirs.replace('a\n', 'b\n'));
    expect(mergePages(base, theirs, ours)).toEqual({ clean: false, conflicting: ['frontmatter'] });
    // Under the cap, the same edits merge.
    const small = page(keys.slice(0, 100).join('\n'), '## A\na\n');
    expect(clean(mergePages(small, small.replace('k5: v5\n', 'k5: theirs\n'), small.replace('k95: v95\n', 'k95: ours\n')))).toBe(
      small.replace('k5: v5\n', 'k5: theirs\n').replace('k95: v95\n', 'k95: ours\n'),
    );
  });

  it('changes of keys on both sides merge into theirs block: comments kept, an added key after its predecessor', () => {
    const base = page('title: t # the title\n# why: none yet\nstatus: draft # for now\nowner: kim\ntags: [a, b]', '## A\na\n');
    const theirs = base.replace('title: t #', 'title: T #').replace('tags: [a, b]', 'tags: [a, b, c]');
    const ours = base.replace('status: draft #', 'status: done #').replace('owner: kim', 'owner: kim\nreviewer: lee');
    expect(clean(mergePages(base, theirs, ours))).toBe(
      page('title: T # the title\n# why: none yet\nstatus: done # for now\nowner: kim\nreviewer: lee\ntags: [a, b, c]', '## A\na\n'),
    );
    // A quoted string changed stays quoted; a key removed on one side goes.
    const quoted = page('title: "t"\nstatus: draft\nowner: kim', '## A\na\n');
    expect(clean(mergePages(quoted, quoted.replace('"t"', '"T"'), quoted.replace('owner: kim\n', '')))).toBe(page('title: "T"\nstatus: draft', '## A\na\n'));
  });
});

describe('mergePages: the page\'s own text and spacing', () => {
  const POOLER = '---\n---\nConnections go through the pooler.\n\n## Local note\nMine.\n';

  it('an empty frontmatter block: a deleted preamble goes with its blank line, an edited one is kept', () => {
    const theirs = POOLER.replace('Mine.', 'Mine, edited.');
    expect(clean(mergePages(POOLER, theirs, POOLER.replace('Connections go through the pooler.\n\n', '')))).toBe('---\n---\n## Local note\nMine, edited.\n');
    expect(clean(mergePages(POOLER, theirs, POOLER.replace('Connections go', 'All connections go')))).toBe(
      '---\n---\nAll connections go through the pooler.\n\n## Local note\nMine, edited.\n',
    );
    expect(clean(mergePages(POOLER, POOLER.replace('Connections go', 'All connections go'), theirs))).toBe(
      '---\n---\nAll connections go through the pooler.\n\n## Local note\nMine, edited.\n',
    );
  });

  it('the blank lines around sections are each page\'s own', () => {
    // Theirs separates sections with two blank lines, ours with none; ours adds a section after ## B.
    const base = page('title: t', '## A\na\n', '## B\nb\n', '## C\nc\n');
    const theirs = base.replace(/\n\n## /g, '\n\n\n## ').replace('a\n', 'A\n');
    const ours = base.replace(/\n\n## /g, '\n## ').replace('## C', '## New\nnew\n## C');
    expect(clean(mergePages(base, theirs, ours))).toBe(page('title: t', '## A\nA\n\n', '## B\nb\n\n', '## New\nnew', '## C\nc\n'));
  });
});

describe('mergePages: large inputs', () => {
  const big = (n: number, body = (i: number) => `line ${i}`) => page('title: big', ...Array.from({ length: n }, (_, i) => `## Part ${i}\n${body(i)}\n`));

  it('a page of 20,000 sections merges in steps that pause, the same text as at once', async () => {
    const base = big(20_000);
    const theirs = base.replace('line 10\n', 'line 10, theirs\n');
    const ours = base.replace('line 19990\n', 'line 19990, ours\n').replace('## Part 5000\n', '## Added\nours\n\n## Part 5000\n');
    const expected = theirs.replace('line 19990\n', 'line 19990, ours\n').replace('## Part 5000\n', '## Added\nours\n\n## Part 5000\n');
    const steps = mergeSteps(base, theirs, ours);
    let pauses = 0;
    let r = steps.next();
    for (; !r.done; r = steps.next()) pauses++;
    expect(clean(r.value)).toBe(expected);
    // Work in slices (a slice is about a hundred thousand units of work or a few milliseconds).
    expect(pauses).toBeGreaterThanOrEqual(10);
    expect(clean(await mergePagesAsync(base, theirs, ours))).toBe(expected);
    expect(clean(mergePages(base, theirs, ours))).toBe(expected);
  });

  it('20,000 sections added by ours between theirs\', each after its predecessor, and 5,000 repeated headings paired by occurrence', () => {
    const base = big(200);
    const theirs = base.replace('line 0\n', 'line 0, theirs\n');
    const withAdded = (text: string) => text.replace(/(## Part (\d+)\n[^\n]*\n)/g, (m, _all, i) => `${m}\n${Array.from({ length: 100 }, (_, k) => `## New ${i}.${k}\nnew\n`).join('\n')}`);
    expect(clean(mergePages(base, theirs, withAdded(base)))).toBe(withAdded(theirs));
    const notes = page('title: notes', ...Array.from({ length: 5_000 }, (_, i) => `## Note\n${i}\n`));
    const t = notes.replace('## Note\n7\n', '## Note\n7 theirs\n');
    const o = notes.replace('## Note\n4993\n', '## Note\n4993 ours\n');
    expect(clean(mergePages(notes, t, o))).toBe(t.replace('## Note\n4993\n', '## Note\n4993 ours\n'));
  });

  it('a section of 200,000 lines with an edit on each side merges (no spread of its lines onto the stack)', () => {
    const lines = Array.from({ length: 200_000 }, (_, i) => `l${i}`);
    const base = page('title: long', `## Log\n${lines.join('\n')}\n`);
    const theirs = base.replace('\nl10\n', '\nl10 theirs\n');
    const ours = base.replace('\nl199990\n', '\nl199990 ours\n');
    expect(clean(mergePages(base, theirs, ours))).toBe(theirs.replace('\nl199990\n', '\nl199990 ours\n'));
    // The same text without frontmatter merges line by line.
    const plain = (s: string) => s.slice(s.indexOf('## Log'));
    expect(clean(mergePages(plain(base), plain(theirs), plain(ours)))).toBe(plain(theirs.replace('\nl199990\n', '\nl199990 ours\n')));
    // 200,000 lines inserted by one side.
    const r = mergeLines(['a', 'b', 'c'], ['A', 'b', 'c'], ['a', 'b', 'c', ...lines]);
    expect(r.clean && r.lines.length).toBe(200_003);
  });

  it('diffs too large for the merge\'s work budget are conflicts, never hangs or wrong text', () => {
    // Every other line changed on both sides of a 4,000-line section, at different lines.
    const lines = Array.from({ length: 4_000 }, (_, i) => `l${i}`);
    const base = page('title: t', `## S\n${lines.join('\n')}\n`, '## Other\nx\n');
    const edit = (tag: string, odd: number) => page('title: t', `## S\n${lines.map((l, i) => (i % 4 === odd ? `${l} ${tag}` : l)).join('\n')}\n`, '## Other\nx\n');
    expect(mergePages(base, edit('T', 0), edit('O', 2))).toEqual({ clean: false, conflicting: ['## S'] });
    // The same edits on a section of 40 lines merge.
    const few = lines.slice(0, 40);
    const small = page('title: t', `## S\n${few.join('\n')}\n`);
    const smallEdit = (tag: string, odd: number) => page('title: t', `## S\n${few.map((l, i) => (i % 4 === odd ? `${l} ${tag}` : l)).join('\n')}\n`);
    expect(clean(mergePages(small, smallEdit('T', 0), smallEdit('O', 2)))).toBe(
      page('title: t', `## S\n${few.map((l, i) => (i % 4 === 0 ? `${l} T` : i % 4 === 2 ? `${l} O` : l)).join('\n')}\n`),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// Properties over seeded random pages
// ---------------------------------------------------------------------------------------------------------

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Model {
  front: Array<[string, string | string[]]>;
  sections: Array<[string, string[]]>;
}

function render(m: Model): string {
  const fm = m.front.map(([k, v]) => (Array.isArray(v) ? `${k}: [${v.join(', ')}]` : `${k}: ${v}`)).join('\n');
  return `---\n${fm}\n---\n` + m.sections.map(([h, lines]) => `## ${h}\n${lines.join('\n')}\n`).join('\n');
}

function randomModel(r: () => number): Model {
  const n = 2 + Math.floor(r() * 6);
  return {
    front: [
      ['title', `t${Math.floor(r() * 100)}`],
      ['tags', ['x', 'y', 'z'].filter(() => r() < 0.6)],
    ],
    sections: Array.from({ length: n }, (_, i) => [`S${i}`, Array.from({ length: 2 + Math.floor(r() * 4) }, (_, j) => `line ${i}.${j} ${Math.floor(r() * 1000)}`)]),
  };
}

const copy = (m: Model): Model => JSON.parse(JSON.stringify(m)) as Model;

/** One side's edit: a change to the sections at `mine` (and a frontmatter edit of its own key). */
function edit(m: Model, r: () => number, mine: number[], tag: string): Model {
  const out = copy(m);
  for (const i of mine) {
    const lines = out.sections[i]![1];
    const kind = Math.floor(r() * 3);
    if (kind === 0) lines[Math.floor(r() * lines.length)] = `${tag} changed ${Math.floor(r() * 1000)}`;
    else if (kind === 1) lines.push(`${tag} added ${Math.floor(r() * 1000)}`);
    else lines.splice(Math.floor(r() * lines.length), 1);
  }
  out.front.push([`by_${tag}`, `v${Math.floor(r() * 100)}`]);
  return out;
}

describe('mergePages: properties', () => {
  const SEEDS = Array.from({ length: 300 }, (_, i) => 1000 + i);

  it('disjoint edits always merge and keep both sides', () => {
    for (const seed of SEEDS) {
      const r = rng(seed);
      const base = randomModel(r);
      const idx = base.sections.map((_, i) => i).sort(() => r() - 0.5);
      const half = Math.floor(idx.length / 2);
      const theirs = edit(base, r, idx.slice(0, half), 'T');
      const ours = edit(base, r, idx.slice(half), 'O');
      const m = mergePages(render(base), render(theirs), render(ours));
      const text = clean(m);
      const parsed = parsePage(text);
      for (const i of idx.slice(0, half)) expect(parsed.sections[i]!.body).toBe(theirs.sections[i]![1].join('\n'));
      for (const i of idx.slice(half)) expect(parsed.sections[i]!.body).toBe(ours.sections[i]![1].join('\n'));
      expect(parsed.frontmatter).toMatchObject({ by_T: theirs.front[2]![1], by_O: ours.front[2]![1] });
    }
  });

  it('merge(b, x, x) = x and merge(b, b, x) = x and merge(b, x, b) = x, byte for byte', () => {
    for (const seed of SEEDS) {
      const r = rng(seed);
      const base = render(randomModel(r));
      const x = render(edit(randomModel(r), r, [0, 1], 'X'));
      expect(mergePages(base, x, x)).toMatchObject({ clean: true, text: x });
      expect(mergePages(base, base, x)).toMatchObject({ clean: true, text: x });
      expect(mergePages(base, x, base)).toMatchObject({ clean: true, text: x });
    }
  });

  it('when every side has a blank line before each heading that follows text, so does the merged page', () => {
    // Random line edits of small pages (an empty frontmatter block among them), headings given a blank line before them.
    const spaced = (lines: string[]) => {
      const out: string[] = [];
      for (const l of lines) {
        if (l.startsWith('## ') && out.length > 0 && out[out.length - 1] !== '') out.push('');
        out.push(l);
      }
      return out;
    };
    let merged = 0;
    for (let seed = 0; seed < 3_000; seed++) {
      const r = rng(seed);
      const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
      const words = ['', 'a', 'b', '## H1', '## H2', 'p.', 'c'];
      const base = spaced(Array.from({ length: Math.floor(r() * 8) }, () => pick(words)));
      const edit = () => {
        const l = [...base];
        for (let n = 1 + Math.floor(r() * 3); n > 0; n--) {
          const at = Math.floor(r() * (l.length + 1));
          const kind = Math.floor(r() * 3);
          if (kind === 0) l.splice(at, 0, pick(words));
          else if (kind === 1) l.splice(at, 1);
          else l[at] = pick(words);
        }
        return spaced(l);
      };
      const front = pick(['---\n---\n', '---\ntitle: t\n---\n', '---\ntitle: t\n---\n\n']);
      const m = mergePages(front + base.join('\n') + '\n', front + edit().join('\n') + '\n', front + edit().join('\n') + '\n');
      if (!m.clean) continue;
      merged++;
      expect(m.text.slice(front.length), `seed ${seed}`).not.toMatch(/[^\n]\n## /);
    }
    expect(merged).toBeGreaterThan(1_000);
  });

  it('swapping the sides changes nothing but the order of additions; conflicts are symmetric', () => {
    for (const seed of SEEDS) {
      const r = rng(seed);
      const base = randomModel(r);
      const all = base.sections.map((_, i) => i);
      // Overlapping random edits: sometimes clean, sometimes not.
      const theirs = edit(base, r, all.filter(() => r() < 0.5), 'T');
      const ours = edit(base, r, all.filter(() => r() < 0.5), 'O');
      if (r() < 0.5) theirs.sections.push(['New T', ['t']]);
      if (r() < 0.5) ours.sections.push(['New O', ['o']]);
      const a = mergePages(render(base), render(theirs), render(ours));
      const b = mergePages(render(base), render(ours), render(theirs));
      expect(a.clean).toBe(b.clean);
      if (!a.clean || !b.clean) {
        expect(a).toEqual(b);
        continue;
      }
      const pa = parsePage(a.text);
      const pb = parsePage(b.text);
      const bodies = (p: ReturnType<typeof parsePage>) => new Map(p.sections.map((s) => [s.heading, s.body]));
      expect(bodies(pa)).toEqual(bodies(pb));
      expect(pa.frontmatter).toEqual(pb.frontmatter);
      // Order: the same once the additions are taken out.
      const common = (p: ReturnType<typeof parsePage>) => p.sections.map((s) => s.heading).filter((h) => !h.startsWith('## New'));
      expect(common(pa)).toEqual(common(pb));
    }
  });
});
