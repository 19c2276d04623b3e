import { describe, expect, it } from 'vitest';
import {
  annotateBlame,
  applyBlame,
  BLAME_MAX_REVISIONS,
  blameTimeline,
  detectRenames,
  diffPages,
  diffParsed,
  diffParsedAsync,
  WorkBudget,
  jaccard,
  lineDiff,
  parsePage,
  wordTokens,
  type CommitRef,
  type ParsedPage,
  type SectionDiff,
  type SectionEntry,
} from '../lib/core/differ/index.ts';

// ---------------------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------------------

const L = (...lines: string[]) => lines.join('\n');
/** A page: frontmatter block (null = none) then body. */
const P = (fm: string | null, ...body: string[]) => (fm === null ? '' : `---\n${fm}${fm === '' ? '' : '\n'}---\n`) + L(...body);
const D = (a: string, b: string) => diffPages(a, b, { from_sha: 'f1', to_sha: 't2' });

type Expected = Omit<Partial<SectionDiff>, 'frontmatter'> & { frontmatter?: Partial<SectionDiff['frontmatter']> };
/** A full expected SectionDiff with defaults for what a case leaves out. */
const X = (o: Expected = {}): SectionDiff => {
  const { frontmatter, ...rest } = o;
  return { from_sha: 'f1', to_sha: 't2', frontmatter: { changed: [], added: [], removed: [], ...frontmatter }, sections: [], ...rest };
};
const S = (heading: string, status: SectionEntry['status'], rest: Omit<SectionEntry, 'heading' | 'status'> = {}): SectionEntry => ({ heading, status, ...rest });
const same = (...lines: string[]) => lines.map((l) => '  ' + l).join('\n');
const minus = (...lines: string[]) => lines.map((l) => '- ' + l).join('\n');
const plus = (...lines: string[]) => lines.map((l) => '+ ' + l).join('\n');
const U = (heading: string, body: string) => S(heading, 'unchanged', { from: body, to: body, line_diff: same(...body.split('\n')) });

/** Words w1..wn (plus a prefix) for Jaccard cases. */
const words = (prefix: string, from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${from + i}`).join(' ');

/** Rebuild both sides from a line diff: the core invariant of the format. */
function sidesOf(lineDiffText: string | undefined): { from: string; to: string } {
  const from: string[] = [];
  const to: string[] = [];
  if (lineDiffText !== undefined && lineDiffText !== '') {
    for (const l of lineDiffText.split('\n')) {
      const tag = l.slice(0, 2);
      const text = l.slice(2);
      if (tag === '  ') {
        from.push(text);
        to.push(text);
      } else if (tag === '- ') from.push(text);
      else if (tag === '+ ') to.push(text);
      else throw new Error(`bad line_diff line ${JSON.stringify(l)}`);
    }
  }
  return { from: from.join('\n'), to: to.join('\n') };
}

const STATUSES = new Set(['added', 'removed', 'modified', 'unchanged', 'renamed']);

/** Structural invariants every SectionDiff must satisfy; returns the violations (empty when fine). */
function invariantProblems(d: SectionDiff, a: ParsedPage, b: ParsedPage, checkJson = true): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  if (checkJson) {
    const finite = JSON.stringify(d, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v));
    check(JSON.stringify(JSON.parse(JSON.stringify(d))) === finite, 'not JSON data');
  }
  const entries = d.preamble ? [d.preamble, ...d.sections] : d.sections;
  for (const e of entries) {
    const id = `${e.heading} (${e.status})`;
    check(STATUSES.has(e.status), `${id}: bad status`);
    check(!/[ \t]$/.test(e.heading), `${id}: heading has trailing blanks`);
    let sides: { from: string; to: string } | null = null;
    try {
      sides = sidesOf(e.line_diff);
    } catch (err) {
      problems.push(`${id}: ${String(err)}`);
    }
    if (e.status === 'renamed' && e.from === e.to) {
      // A rename with an unchanged body carries no line diff; the rename is the change.
      check(e.line_diff === undefined, `${id}: renamed with an unchanged body but a line_diff`);
    } else {
      check(sides?.from === (e.from ?? ''), `${id}: line_diff does not rebuild from`);
      check(sides?.to === (e.to ?? ''), `${id}: line_diff does not rebuild to`);
    }
    if (e.status === 'added') check(e.from === undefined, `${id}: added with from`);
    if (e.status === 'removed') check(e.to === undefined, `${id}: removed with to`);
    if (e.status === 'unchanged') check(e.from === e.to, `${id}: unchanged but different`);
    if (e.status === 'modified') check(e.from !== e.to, `${id}: modified but equal`);
    if (e.status === 'renamed') check(typeof e.old_heading === 'string' && e.old_heading !== e.heading, `${id}: renamed without old_heading`);
    else check(e.old_heading === undefined, `${id}: old_heading on a non-rename`);
    for (const k of ['from', 'to', 'line_diff'] as const) check(e[k] !== '', `${id}: empty ${k} not omitted`);
  }
  if (d.parse_fallback) {
    check(d.sections.length === 0, 'fallback with sections');
    check(d.preamble?.heading === '_preamble', 'fallback without _preamble');
  } else {
    // every new section is accounted for exactly once, and every old one
    const newSide = d.sections.filter((e) => e.status !== 'removed').map((e) => e.heading).sort();
    const oldSide = d.sections.filter((e) => e.status !== 'added').map((e) => e.old_heading ?? e.heading).sort();
    check(JSON.stringify(newSide) === JSON.stringify(b.sections.map((s) => s.heading).sort()), 'new-side headings do not match');
    check(JSON.stringify(oldSide) === JSON.stringify(a.sections.map((s) => s.heading).sort()), 'old-side headings do not match');
    const hasPreamble = a.preamble !== '' || b.preamble !== '';
    check(hasPreamble === (d.preamble !== undefined), 'preamble presence');
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------
// table-driven cases
// ---------------------------------------------------------------------------------------------------------

interface Case {
  name: string;
  from: string;
  to: string;
  expect: SectionDiff;
}

const FULL = P('title: X\ntags: [a, b]', '', '# X', '', '## A', 'alpha', '', '## B', 'beta', '');

const cases: Case[] = [
  // --- empty documents and the fallback ---------------------------------------------------------------
  { name: 'both empty documents', from: '', to: '', expect: X() },
  { name: 'empty vs whitespace-only: both valid empty pages', from: '', to: ' \n\n\t\n', expect: X() },
  {
    name: 'empty → full page: everything added, no fallback',
    from: '',
    to: FULL,
    expect: X({
      frontmatter: { added: [{ field: 'title', to: 'X' }, { field: 'tags', to: ['a', 'b'] }] },
      preamble: S('_preamble', 'added', { to: L('', '# X'), line_diff: plus('', '# X') }),
      sections: [S('## A', 'added', { to: 'alpha', line_diff: plus('alpha') }), S('## B', 'added', { to: 'beta', line_diff: plus('beta') })],
    }),
  },
  {
    name: 'full page → empty: everything removed',
    from: FULL,
    to: '',
    expect: X({
      frontmatter: { removed: [{ field: 'title', from: 'X' }, { field: 'tags', from: ['a', 'b'] }] },
      preamble: S('_preamble', 'removed', { from: L('', '# X'), line_diff: minus('', '# X') }),
      sections: [S('## A', 'removed', { from: 'alpha', line_diff: minus('alpha') }), S('## B', 'removed', { from: 'beta', line_diff: minus('beta') })],
    }),
  },
  {
    name: 'no frontmatter on both sides, identical: fallback, unchanged whole file',
    from: L('# T', '## A', 'x', ''),
    to: L('# T', '## A', 'x', '', ''),
    expect: X({ parse_fallback: true, preamble: U('_preamble', L('# T', '## A', 'x')) }),
  },
  {
    name: 'no frontmatter, modified: fallback with the whole-file line diff',
    from: L('# T', '## A', 'x'),
    to: L('# T', '## A', 'y', '## B'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('# T', '## A', 'x'), to: L('# T', '## A', 'y', '## B'), line_diff: L(same('# T', '## A'), minus('x'), plus('y', '## B')) }),
    }),
  },
  {
    name: 'frontmatter removed on the new side: fallback',
    from: P('a: 1', '## A', 'x'),
    to: L('## A', 'x'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('---', 'a: 1', '---', '## A', 'x'), to: L('## A', 'x'), line_diff: L(minus('---', 'a: 1', '---'), same('## A', 'x')) }),
    }),
  },
  {
    name: 'empty document → page without frontmatter: fallback, added',
    from: '',
    to: 'just text',
    expect: X({ parse_fallback: true, preamble: S('_preamble', 'added', { to: 'just text', line_diff: plus('just text') }) }),
  },
  {
    name: 'page without frontmatter → empty document: fallback, removed',
    from: 'just text\n\n',
    to: '\n',
    expect: X({ parse_fallback: true, preamble: S('_preamble', 'removed', { from: 'just text', line_diff: minus('just text') }) }),
  },
  {
    name: 'YAML list frontmatter is not a mapping: fallback',
    from: P('- a', 'x'),
    to: P('- a', 'y'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('---', '- a', '---', 'x'), to: L('---', '- a', '---', 'y'), line_diff: L(same('---', '- a', '---'), minus('x'), plus('y')) }),
    }),
  },
  {
    name: 'YAML scalar frontmatter: fallback even when identical',
    from: P('hello', '## A'),
    to: P('hello', '## A'),
    expect: X({ parse_fallback: true, preamble: U('_preamble', L('---', 'hello', '---', '## A')) }),
  },
  {
    name: 'invalid YAML on one side only: fallback',
    from: P('a: 1', '## A'),
    to: P('a: [1', '## A'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('---', 'a: 1', '---', '## A'), to: L('---', 'a: [1', '---', '## A'), line_diff: L(same('---'), minus('a: 1'), plus('a: [1'), same('---', '## A')) }),
    }),
  },
  {
    name: 'unterminated frontmatter: fallback',
    from: L('---', 'a: 1', '## A'),
    to: P('a: 1', '## A'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('---', 'a: 1', '## A'), to: L('---', 'a: 1', '---', '## A'), line_diff: L(same('---', 'a: 1'), plus('---'), same('## A')) }),
    }),
  },
  {
    name: 'duplicate frontmatter key: fallback',
    from: P('a: 1', 'x'),
    to: P('a: 1\na: 2', 'x'),
    expect: X({
      parse_fallback: true,
      preamble: S('_preamble', 'modified', { from: L('---', 'a: 1', '---', 'x'), to: L('---', 'a: 1', 'a: 2', '---', 'x'), line_diff: L(same('---', 'a: 1'), plus('a: 2'), same('---', 'x')) }),
    }),
  },
  {
    name: 'a blank line before the opening --- means no frontmatter: fallback',
    from: '\n' + P('a: 1', 'x'),
    to: '\n' + P('a: 1', 'x'),
    expect: X({ parse_fallback: true, preamble: U('_preamble', L('', '---', 'a: 1', '---', 'x')) }),
  },
  {
    name: 'fences with trailing blanks are still fences',
    from: L('---  ', 'a: 1', '--- ', '## A', 'x'),
    to: L('---', 'a: 2', '---', '## A', 'x'),
    expect: X({ frontmatter: { changed: [{ field: 'a', from: 1, to: 2 }] }, sections: [U('## A', 'x')] }),
  },
  // --- frontmatter ------------------------------------------------------------------------------------
  {
    name: 'empty frontmatter block → a field',
    from: P('', '## A', 'x'),
    to: P('status: draft', '## A', 'x'),
    expect: X({ frontmatter: { added: [{ field: 'status', to: 'draft' }] }, sections: [U('## A', 'x')] }),
  },
  {
    name: 'comment-only frontmatter equals an empty block',
    from: P('# nothing here', 'x'),
    to: P('', 'x'),
    expect: X({ preamble: U('_preamble', 'x') }),
  },
  {
    name: 'only frontmatter, scalar changed',
    from: P('title: Old'),
    to: P('title: New'),
    expect: X({ frontmatter: { changed: [{ field: 'title', from: 'Old', to: 'New' }] } }),
  },
  { name: 'only frontmatter, identical', from: P('title: T\ntags: [x]'), to: P('title: T\ntags: [x]'), expect: X() },
  {
    name: 'number → string is a change (types differ)',
    from: P('version: 1'),
    to: P('version: "1"'),
    expect: X({ frontmatter: { changed: [{ field: 'version', from: 1, to: '1' }] } }),
  },
  {
    name: 'scalar fields added and removed',
    from: P('a: 1\nold: x'),
    to: P('a: 1\nnew: y'),
    expect: X({ frontmatter: { added: [{ field: 'new', to: 'y' }], removed: [{ field: 'old', from: 'x' }] } }),
  },
  { name: 'list reordered: no change (set semantics)', from: P('tags: [a, b, c]'), to: P('tags: [c, a, b]'), expect: X() },
  {
    name: 'list members added and removed: one entry per member',
    from: P('tags: [a, b, c]'),
    to: P('tags: [d, c, a, e]'),
    expect: X({ frontmatter: { added: [{ field: 'tags', to: 'd' }, { field: 'tags', to: 'e' }], removed: [{ field: 'tags', from: 'b' }] } }),
  },
  { name: 'list duplicates are ignored', from: P('tags: [a, a, b]'), to: P('tags: [b, a]'), expect: X() },
  { name: 'block list vs flow list with the same members', from: P('tags:\n  - a\n  - b'), to: P('tags: [b, a]'), expect: X() },
  {
    name: 'list field added whole: one added entry with the whole list',
    from: P('a: 1'),
    to: P('a: 1\ntags: [x, y]'),
    expect: X({ frontmatter: { added: [{ field: 'tags', to: ['x', 'y'] }] } }),
  },
  {
    name: 'list field removed whole',
    from: P('tags: [x]\na: 1'),
    to: P('a: 1'),
    expect: X({ frontmatter: { removed: [{ field: 'tags', from: ['x'] }] } }),
  },
  {
    name: 'empty list → members: each member added',
    from: P('tags: []'),
    to: P('tags: [x]'),
    expect: X({ frontmatter: { added: [{ field: 'tags', to: 'x' }] } }),
  },
  {
    name: 'list ↔ scalar is a change of the whole value',
    from: P('tags: x'),
    to: P('tags: [x]'),
    expect: X({ frontmatter: { changed: [{ field: 'tags', from: 'x', to: ['x'] }] } }),
  },
  { name: 'nested mapping with keys reordered: no change', from: P('meta: {a: 1, b: 2}'), to: P('meta:\n  b: 2\n  a: 1'), expect: X() },
  {
    name: 'nested mapping value changed: whole values',
    from: P('meta: {a: 1, b: 2}'),
    to: P('meta: {a: 1, b: 3}'),
    expect: X({ frontmatter: { changed: [{ field: 'meta', from: { a: 1, b: 2 }, to: { a: 1, b: 3 } }] } }),
  },
  {
    name: 'null ↔ value keeps from: null',
    from: P('owner:'),
    to: P('owner: ana'),
    expect: X({ frontmatter: { changed: [{ field: 'owner', from: null, to: 'ana' }] } }),
  },
  { name: 'list of numbers reordered: no change', from: P('years: [2024, 2025]'), to: P('years: [2025, 2024]'), expect: X() },
  {
    name: 'list of mappings: structural members',
    from: P('links: [{url: a}, {url: b}]'),
    to: P('links: [{url: b}, {url: c}]'),
    expect: X({ frontmatter: { added: [{ field: 'links', to: { url: 'c' } }], removed: [{ field: 'links', from: { url: 'a' } }] } }),
  },
  {
    name: 'field order: new-page order, then old-only fields',
    from: P('z: 1\ngone: 1\ntags: [a]\nm: 1'),
    to: P('m: 2\ntags: [b]\nz: 2\nnew: 1'),
    expect: X({
      frontmatter: {
        changed: [{ field: 'm', from: 1, to: 2 }, { field: 'z', from: 1, to: 2 }],
        added: [{ field: 'tags', to: 'b' }, { field: 'new', to: 1 }],
        removed: [{ field: 'tags', from: 'a' }, { field: 'gone', from: 1 }],
      },
    }),
  },
  {
    name: 'timestamps compare as strings',
    from: P('updated: 2026-05-17T10:00:00Z'),
    to: P('updated: 2026-05-18T10:00:00Z'),
    expect: X({ frontmatter: { changed: [{ field: 'updated', from: '2026-05-17T10:00:00Z', to: '2026-05-18T10:00:00Z' }] } }),
  },
  {
    name: 'a `---` inside the body is body text, not frontmatter',
    from: P('a: 1', 'intro', '---', 'b: 2', '---', '## A', 'x'),
    to: P('a: 1', 'intro', '---', 'b: 3', '---', '## A', 'x'),
    expect: X({
      preamble: S('_preamble', 'modified', { from: L('intro', '---', 'b: 2', '---'), to: L('intro', '---', 'b: 3', '---'), line_diff: L(same('intro', '---'), minus('b: 2'), plus('b: 3'), same('---')) }),
      sections: [U('## A', 'x')],
    }),
  },
  // --- preamble ---------------------------------------------------------------------------------------
  { name: 'preamble only, unchanged', from: P('a: 1', 'Intro.'), to: P('a: 1', 'Intro.', '', ''), expect: X({ preamble: U('_preamble', 'Intro.') }) },
  {
    name: 'preamble added',
    from: P('a: 1', '## A', 'x'),
    to: P('a: 1', 'New intro', '## A', 'x'),
    expect: X({ preamble: S('_preamble', 'added', { to: 'New intro', line_diff: plus('New intro') }), sections: [U('## A', 'x')] }),
  },
  {
    name: 'preamble removed',
    from: P('a: 1', 'Old intro', '', '## A', 'x'),
    to: P('a: 1', '', '## A', 'x'),
    expect: X({ preamble: S('_preamble', 'removed', { from: 'Old intro', line_diff: minus('Old intro') }), sections: [U('## A', 'x')] }),
  },
  {
    name: 'preamble modified',
    from: P('a: 1', '# T', 'one'),
    to: P('a: 1', '# T', 'two'),
    expect: X({ preamble: S('_preamble', 'modified', { from: L('# T', 'one'), to: L('# T', 'two'), line_diff: L(same('# T'), minus('one'), plus('two')) }) }),
  },
  { name: 'blank-only preamble is no preamble', from: P('a: 1', '', '   ', '## A'), to: P('a: 1', '## A'), expect: X({ sections: [S('## A', 'unchanged')] }) },
  // --- sections ---------------------------------------------------------------------------------------
  {
    name: 'modified section: exact line diff',
    from: P('a: 1', '## A', 'one', 'two', 'three'),
    to: P('a: 1', '## A', 'one', '2', 'three', 'four'),
    expect: X({
      sections: [S('## A', 'modified', { from: L('one', 'two', 'three'), to: L('one', '2', 'three', 'four'), line_diff: L(same('one'), minus('two'), plus('2'), same('three'), plus('four')) })],
    }),
  },
  {
    name: 'unchanged sections carry from, to and an all-context line diff',
    from: P('a: 1', '## A', '', 'text', '', '## B', 'b'),
    to: P('a: 1', '## A', '', 'text', '', '## B', 'b'),
    expect: X({ sections: [U('## A', L('', 'text')), U('## B', 'b')] }),
  },
  {
    name: 'section added in the middle: new-page order',
    from: P('a: 1', '## A', 'a', '## C', 'c'),
    to: P('a: 1', '## A', 'a', '## B', 'b', '## C', 'c'),
    expect: X({ sections: [U('## A', 'a'), S('## B', 'added', { to: 'b', line_diff: plus('b') }), U('## C', 'c')] }),
  },
  {
    name: 'removed sections come after the new-page entries, in old-page order',
    from: P('a: 1', '## R1', 'one one', '## A', 'a', '## R2', 'two two', '## C', 'c'),
    to: P('a: 1', '## C', 'c', '## A', 'a'),
    expect: X({
      sections: [U('## C', 'c'), U('## A', 'a'), S('## R1', 'removed', { from: 'one one', line_diff: minus('one one') }), S('## R2', 'removed', { from: 'two two', line_diff: minus('two two') })],
    }),
  },
  { name: 'reordered sections are unchanged', from: P('a: 1', '## A', 'a', '## B', 'b'), to: P('a: 1', '## B', 'b', '## A', 'a'), expect: X({ sections: [U('## B', 'b'), U('## A', 'a')] }) },
  {
    name: 'trailing blank lines (spaces, tabs, CR) are a whitespace-only reflow: unchanged',
    from: P('a: 1', '## A', 'x', '', '   ', '## B', 'y'),
    to: P('a: 1', '## A', 'x', '\t', '## B', 'y', '', '', ''),
    expect: X({ sections: [U('## A', 'x'), U('## B', 'y')] }),
  },
  {
    name: 'trailing spaces on a text line are a change',
    from: P('a: 1', '## A', 'x'),
    to: P('a: 1', '## A', 'x  '),
    expect: X({ sections: [S('## A', 'modified', { from: 'x', to: 'x  ', line_diff: L(minus('x'), plus('x  ')) })] }),
  },
  {
    name: 'a blank line added after the heading is a change (only trailing blanks are trimmed)',
    from: P('a: 1', '## A', 'x'),
    to: P('a: 1', '## A', '', 'x'),
    expect: X({ sections: [S('## A', 'modified', { from: 'x', to: L('', 'x'), line_diff: L(plus(''), same('x')) })] }),
  },
  {
    name: 'duplicate headings pair by occurrence: the extra old one is removed',
    from: P('a: 1', '## Notes', 'first', '## Notes', 'second'),
    to: P('a: 1', '## Notes', 'first'),
    expect: X({ sections: [U('## Notes', 'first'), S('## Notes', 'removed', { from: 'second', line_diff: minus('second') })] }),
  },
  {
    name: 'duplicate headings on both sides: n-th with n-th',
    from: P('a: 1', '## Notes', 'one', '## X', 'x', '## Notes', 'two'),
    to: P('a: 1', '## Notes', 'one', '## Notes', 'TWO', '## Notes', 'three'),
    expect: X({
      sections: [
        U('## Notes', 'one'),
        S('## Notes', 'modified', { from: 'two', to: 'TWO', line_diff: L(minus('two'), plus('TWO')) }),
        S('## Notes', 'added', { to: 'three', line_diff: plus('three') }),
        S('## X', 'removed', { from: 'x', line_diff: minus('x') }),
      ],
    }),
  },
  {
    name: 'heading trailing blanks are not part of the heading',
    from: P('a: 1', '## Decision   ', 'x'),
    to: P('a: 1', '## Decision\t', 'x'),
    expect: X({ sections: [U('## Decision', 'x')] }),
  },
  {
    name: '### stays inside its parent section',
    from: P('a: 1', '## A', 'intro', '### Sub', 'old', '## B', 'b'),
    to: P('a: 1', '## A', 'intro', '### Sub', 'new', '### Sub2', 'more', '## B', 'b'),
    expect: X({
      sections: [
        S('## A', 'modified', { from: L('intro', '### Sub', 'old'), to: L('intro', '### Sub', 'new', '### Sub2', 'more'), line_diff: L(same('intro', '### Sub'), minus('old'), plus('new', '### Sub2', 'more')) }),
        U('## B', 'b'),
      ],
    }),
  },
  {
    name: '## inside a ``` fence is not a heading',
    from: P('a: 1', '## A', '```md', '## Fake', '```'),
    to: P('a: 1', '## A', '```md', '## Fake2', '```'),
    expect: X({
      sections: [S('## A', 'modified', { from: L('```md', '## Fake', '```'), to: L('```md', '## Fake2', '```'), line_diff: L(same('```md'), minus('## Fake'), plus('## Fake2'), same('```')) })],
    }),
  },
  {
    name: '## inside a ~~~ fence is not a heading; after the fence it is',
    from: P('a: 1', '## A', '~~~', '## Fake', '~~~', '## B', 'b'),
    to: P('a: 1', '## A', '~~~', '## Fake', '~~~', '## B', 'b'),
    expect: X({ sections: [U('## A', L('~~~', '## Fake', '~~~')), U('## B', 'b')] }),
  },
  {
    name: 'opening a fence that is never closed swallows the following headings',
    from: P('a: 1', '## A', 'x', '## B', 'b'),
    to: P('a: 1', '## A', '```', '## B', 'b'),
    expect: X({
      sections: [
        S('## A', 'modified', { from: 'x', to: L('```', '## B', 'b'), line_diff: L(minus('x'), plus('```', '## B', 'b')) }),
        S('## B', 'removed', { from: 'b', line_diff: minus('b') }),
      ],
    }),
  },
  {
    name: 'indented, spaced or unspaced ## lines are not headings',
    from: P('a: 1', '## A', ' ## not', '##not', '##'),
    to: P('a: 1', '## A', ' ## not', '##not', '##'),
    expect: X({ sections: [U('## A', L(' ## not', '##not', '##'))] }),
  },
  {
    name: 'headings are case-sensitive: a case change with the same body is a rename',
    from: P('a: 1', '## decision', 'use go'),
    to: P('a: 1', '## Decision', 'use go'),
    expect: X({ sections: [S('## Decision', 'renamed', { old_heading: '## decision', from: 'use go', to: 'use go' })] }),
  },
  {
    name: 'empty-bodied section added: no to, no line_diff',
    from: P('a: 1', '## A', 'a'),
    to: P('a: 1', '## A', 'a', '## Todo', '', ''),
    expect: X({ sections: [U('## A', 'a'), S('## Todo', 'added')] }),
  },
  { name: 'empty-bodied section unchanged', from: P('a: 1', '## Todo'), to: P('a: 1', '## Todo', ''), expect: X({ sections: [S('## Todo', 'unchanged')] }) },
  {
    name: 'section emptied: modified with only from',
    from: P('a: 1', '## A', 'x', 'y'),
    to: P('a: 1', '## A'),
    expect: X({ sections: [S('## A', 'modified', { from: L('x', 'y'), line_diff: minus('x', 'y') })] }),
  },
  {
    name: 'unicode headings and bodies',
    from: P('título: café', '## Décision 🚀', 'naïve 日本語', '## Ω'),
    to: P('título: café', '## Décision 🚀', 'naïve 日本語 ✓', '## Ω'),
    expect: X({
      sections: [S('## Décision 🚀', 'modified', { from: 'naïve 日本語', to: 'naïve 日本語 ✓', line_diff: L(minus('naïve 日本語'), plus('naïve 日本語 ✓')) }), S('## Ω', 'unchanged')],
    }),
  },
  {
    name: 'combining sequences are compared as written (no Unicode normalisation)',
    from: P('a: 1', '## Cafe\u0301', 'x'),
    to: P('a: 1', '## Caf\u00e9', 'x'),
    expect: X({ sections: [S('## Café', 'renamed', { old_heading: '## Cafe\u0301', from: 'x', to: 'x' })] }),
  },
  {
    name: 'NUL, U+FFFD and control characters are just text',
    from: P('a: 1', '## A\u0000', 'x\uFFFD\u0001'),
    to: P('a: 1', '## A\u0000', 'x\uFFFD\u0002'),
    expect: X({ sections: [S('## A\u0000', 'modified', { from: 'x\uFFFD\u0001', to: 'x\uFFFD\u0002', line_diff: L(minus('x\uFFFD\u0001'), plus('x\uFFFD\u0002')) })] }),
  },
  {
    name: 'Windows line endings on one side only: all unchanged',
    from: P('title: T\ntags: [a]', 'Intro', '## A', 'x', '## B', 'y'),
    to: P('title: T\ntags: [a]', 'Intro', '## A', 'x', '## B', 'y').replace(/\n/g, '\r\n'),
    expect: X({ preamble: U('_preamble', 'Intro'), sections: [U('## A', 'x'), U('## B', 'y')] }),
  },
  {
    name: 'Windows line endings on both sides, with a change',
    from: '---\r\na: 1\r\n---\r\n## A\r\nx\r\n',
    to: '---\r\na: 2\r\n---\r\n## A\r\ny\r\n\r\n',
    expect: X({ frontmatter: { changed: [{ field: 'a', from: 1, to: 2 }] }, sections: [S('## A', 'modified', { from: 'x', to: 'y', line_diff: L(minus('x'), plus('y')) })] }),
  },
  {
    name: 'old Mac line endings (lone CR)',
    from: '---\ra: 1\r---\r## A\rx',
    to: P('a: 1', '## A', 'x'),
    expect: X({ sections: [U('## A', 'x')] }),
  },
  {
    name: 'byte-order mark on one side: unchanged',
    from: '\uFEFF' + P('a: 1', '## A', 'x'),
    to: P('a: 1', '## A', 'x'),
    expect: X({ sections: [U('## A', 'x')] }),
  },
  // --- renames ----------------------------------------------------------------------------------------
  {
    name: 'rename at exactly 70% (70 of 100 tokens): renamed',
    from: P('a: 1', '## Old', words('w', 1, 85)),
    to: P('a: 1', '## New', words('w', 1, 70) + ' ' + words('x', 1, 15)),
    expect: X({
      sections: [
        S('## New', 'renamed', {
          old_heading: '## Old',
          from: words('w', 1, 85),
          to: words('w', 1, 70) + ' ' + words('x', 1, 15),
          line_diff: L(minus(words('w', 1, 85)), plus(words('w', 1, 70) + ' ' + words('x', 1, 15))),
        }),
      ],
    }),
  },
  {
    name: 'rename just above 70% (71 of 100): renamed',
    from: P('a: 1', '## Old', words('w', 1, 85)),
    to: P('a: 1', '## New', words('w', 1, 71) + ' ' + words('x', 1, 15)),
    expect: X({
      sections: [
        S('## New', 'renamed', {
          old_heading: '## Old',
          from: words('w', 1, 85),
          to: words('w', 1, 71) + ' ' + words('x', 1, 15),
          line_diff: L(minus(words('w', 1, 85)), plus(words('w', 1, 71) + ' ' + words('x', 1, 15))),
        }),
      ],
    }),
  },
  {
    name: 'just below 70% (69 of 100): added + removed',
    from: P('a: 1', '## Old', words('w', 1, 85)),
    to: P('a: 1', '## New', words('w', 1, 69) + ' ' + words('x', 1, 15)),
    expect: X({
      sections: [
        S('## New', 'added', { to: words('w', 1, 69) + ' ' + words('x', 1, 15), line_diff: plus(words('w', 1, 69) + ' ' + words('x', 1, 15)) }),
        S('## Old', 'removed', { from: words('w', 1, 85), line_diff: minus(words('w', 1, 85)) }),
      ],
    }),
  },
  {
    name: 'tokens are lowercased and punctuation-trimmed, repeats ignored',
    from: P('a: 1', '## Old', 'Hello, *World*! hello'),
    to: P('a: 1', '## New', '`hello` world.'),
    expect: X({
      sections: [S('## New', 'renamed', { old_heading: '## Old', from: 'Hello, *World*! hello', to: '`hello` world.', line_diff: L(minus('Hello, *World*! hello'), plus('`hello` world.')) })],
    }),
  },
  {
    name: 'a renamed entry takes the place of the removed one; its added entry disappears',
    from: P('a: 1', '## Gone', 'zzz', '## Old name', 'the quick brown fox', '## Keep', 'k'),
    to: P('a: 1', '## New name', 'the quick brown fox', '## Keep', 'k', '## Fresh', 'f'),
    expect: X({
      sections: [
        U('## Keep', 'k'),
        S('## Fresh', 'added', { to: 'f', line_diff: plus('f') }),
        S('## Gone', 'removed', { from: 'zzz', line_diff: minus('zzz') }),
        S('## New name', 'renamed', { old_heading: '## Old name', from: 'the quick brown fox', to: 'the quick brown fox' }),
      ],
    }),
  },
  {
    name: 'renamed with an edited body (10 of 11 tokens)',
    from: P('a: 1', '## Context', 'one two three four five', 'six seven eight nine ten'),
    to: P('a: 1', '## Background', 'one two three four five', 'six seven eight nine ten eleven'),
    expect: X({
      sections: [
        S('## Background', 'renamed', {
          old_heading: '## Context',
          from: L('one two three four five', 'six seven eight nine ten'),
          to: L('one two three four five', 'six seven eight nine ten eleven'),
          line_diff: L(same('one two three four five'), minus('six seven eight nine ten'), plus('six seven eight nine ten eleven')),
        }),
      ],
    }),
  },
  {
    name: 'greedy best first: the best pair wins, the runner-up pairs with what is left',
    // R1 = a..j (10); R2 = a..h + y z (10); A1 = a..j (1.0 with R1, 8/12 with R2); A2 = a..i + y z (9/12 with R1, 9/11 with R2)
    from: P('a: 1', '## R1', 'a b c d e f g h i j', '## R2', 'a b c d e f g h y z'),
    to: P('a: 1', '## A1', 'a b c d e f g h i j', '## A2', 'a b c d e f g h i y z'),
    expect: X({
      sections: [
        S('## A1', 'renamed', { old_heading: '## R1', from: 'a b c d e f g h i j', to: 'a b c d e f g h i j' }),
        S('## A2', 'renamed', { old_heading: '## R2', from: 'a b c d e f g h y z', to: 'a b c d e f g h i y z', line_diff: L(minus('a b c d e f g h y z'), plus('a b c d e f g h i y z')) }),
      ],
    }),
  },
  {
    name: 'greedy best first, not in input order: R1~A2 (0.9) beats the earlier R1~A1 (0.75), leaving R2 and A1 unpaired',
    // R1 = a..j; A1 = a..i + x w (9/12 = 0.75 with R1, 8/13 with R2); A2 = a..i (9/10 = 0.9 with R1);
    // R2 = a..h + y z (8/11 ≈ 0.73 with A2). Taken in input order (R1~A1 first) it would be R1→A1, R2→A2.
    from: P('a: 1', '## R1', 'a b c d e f g h i j', '## R2', 'a b c d e f g h y z'),
    to: P('a: 1', '## A1', 'a b c d e f g h i x w', '## A2', 'a b c d e f g h i'),
    expect: X({
      sections: [
        S('## A1', 'added', { to: 'a b c d e f g h i x w', line_diff: plus('a b c d e f g h i x w') }),
        S('## A2', 'renamed', { old_heading: '## R1', from: 'a b c d e f g h i j', to: 'a b c d e f g h i', line_diff: L(minus('a b c d e f g h i j'), plus('a b c d e f g h i')) }),
        S('## R2', 'removed', { from: 'a b c d e f g h y z', line_diff: minus('a b c d e f g h y z') }),
      ],
    }),
  },
  {
    name: 'ties go to the earlier old section, then the earlier new section',
    from: P('a: 1', '## R1', 'same words here', '## R2', 'same words here'),
    to: P('a: 1', '## A1', 'same words here'),
    expect: X({
      sections: [
        S('## A1', 'renamed', { old_heading: '## R1', from: 'same words here', to: 'same words here' }),
        S('## R2', 'removed', { from: 'same words here', line_diff: minus('same words here') }),
      ],
    }),
  },
  {
    name: 'empty bodies never rename',
    from: P('a: 1', '## Todo'),
    to: P('a: 1', '## Tasks'),
    expect: X({ sections: [S('## Tasks', 'added'), S('## Todo', 'removed')] }),
  },
  {
    name: 'punctuation-only bodies have no tokens and never rename',
    from: P('a: 1', '## A', '---', '***'),
    to: P('a: 1', '## B', '---', '***'),
    expect: X({ sections: [S('## B', 'added', { to: L('---', '***'), line_diff: plus('---', '***') }), S('## A', 'removed', { from: L('---', '***'), line_diff: minus('---', '***') })] }),
  },
  {
    name: 'a heading that still exists is never a rename source',
    from: P('a: 1', '## A', 'shared body text'),
    to: P('a: 1', '## A', 'shared body text', '## B', 'shared body text'),
    expect: X({ sections: [U('## A', 'shared body text'), S('## B', 'added', { to: 'shared body text', line_diff: plus('shared body text') })] }),
  },
];

describe('diffPages: table', () => {
  it('has at least 60 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });
  for (const c of cases) {
    it(c.name, () => {
      const d = D(c.from, c.to);
      expect(d).toStrictEqual(c.expect);
      expect(invariantProblems(d, parsePage(c.from), parsePage(c.to))).toEqual([]);
      // diffParsed on pre-parsed pages gives the same answer
      expect(diffParsed(parsePage(c.from), parsePage(c.to), { from_sha: 'f1', to_sha: 't2' })).toStrictEqual(d);
    });
  }
});

describe('diffPages: defaults and misc', () => {
  it('shas default to "" (evolution: the first commit against the empty document)', () => {
    const d = diffPages('', P('a: 1'), { to_sha: 'abc' });
    expect(d).toStrictEqual({ from_sha: '', to_sha: 'abc', frontmatter: { changed: [], added: [{ field: 'a', to: 1 }], removed: [] }, sections: [] });
    expect(diffPages('', '').from_sha).toBe('');
  });

  it('very long section with one changed line: exact, not truncated', () => {
    const body = Array.from({ length: 20_000 }, (_, i) => `line ${i}`);
    const changed = body.slice();
    changed[10_000] = 'CHANGED';
    const d = diffPages(P('a: 1', '## Big', body.join('\n')), P('a: 1', '## Big', changed.join('\n')));
    expect(d.truncated).toBeUndefined();
    const e = d.sections[0]!;
    expect(e.status).toBe('modified');
    const lines = e.line_diff!.split('\n');
    expect(lines.length).toBe(20_001);
    expect(lines.filter((l) => !l.startsWith('  '))).toEqual(['- line 10000', '+ CHANGED']);
    expect(lines[9_999]).toBe('  line 9999');
  });

  it('values in the frontmatter lists are JSON data', () => {
    const d = D(P('a: .nan\nb: .inf'), P('a: 1\nb: -.inf'));
    expect(d.frontmatter.changed).toStrictEqual([
      { field: 'a', from: NaN, to: 1 },
      { field: 'b', from: Infinity, to: -Infinity },
    ]);
  });

  it('the result shares no mutable state with a second call', () => {
    const a = D(FULL, '');
    const b = D(FULL, '');
    a.sections.pop();
    expect(b.sections.length).toBe(2);
  });

  it('never throws on hostile ParsedPage objects (internal failures degrade to a truncated fallback)', () => {
    const bad = { text: 'x', empty: false, frontmatter: {}, frontmatterRaw: null, preamble: '', sections: null } as unknown as ParsedPage;
    const d = diffParsed(bad, parsePage(P('a: 1', '## A')));
    expect(d.parse_fallback).toBe(true);
    expect(d.truncated).toBe(true);
    expect(d.preamble?.heading).toBe('_preamble');
    expect(() => diffParsed(null as unknown as ParsedPage, undefined as unknown as ParsedPage)).not.toThrow();
    expect(() => diffPages(undefined as unknown as string, null as unknown as string)).not.toThrow();
  });
});

// ---------------------------------------------------------------------------------------------------------
// lineDiff, tokens
// ---------------------------------------------------------------------------------------------------------

describe('lineDiff', () => {
  it('lists removals before additions between common lines, for any edit path', () => {
    const r = prng(99);
    for (let i = 0; i < 500; i++) {
      const gen = () => Array.from({ length: Math.floor(r() * 12) }, () => 'abcde'[Math.floor(r() * 5)]!).join('\n');
      const a = gen();
      const b = gen();
      const { text, truncated } = lineDiff(a, b);
      expect(truncated).toBe(false);
      expect(text).not.toMatch(/^\+ .*\n- /m);
      expect(sidesOf(text)).toStrictEqual({ from: a, to: b });
    }
  });

  const cases: Array<[string, string, string]> = [
    ['', '', ''],
    ['a', 'a', '  a'],
    ['a\n', 'a', '  a'],
    ['', 'a\nb', '+ a\n+ b'],
    ['a\nb', '', '- a\n- b'],
    ['a\nb\nc', 'a\nx\nc\nd', '  a\n- b\n+ x\n  c\n+ d'],
    ['a\r\nb', 'a\nb', '  a\n  b'],
    ['\n', '', '- '],
    ['x\n\ny', 'x\ny', '  x\n- \n  y'],
    ['a\nb\nc\nd', 'd\na\nb\nc', '+ d\n  a\n  b\n  c\n- d'],
    ['k\na\nb\nk', 'k\nx\na\ny\nk', '  k\n+ x\n  a\n- b\n+ y\n  k'],
    ['k\na\nb\nc\nk', 'k\nx\ny\nk', '  k\n- a\n- b\n- c\n+ x\n+ y\n  k'],
  ];
  for (const [a, b, want] of cases) {
    it(`${JSON.stringify(a)} → ${JSON.stringify(b)}`, () => {
      expect(lineDiff(a, b)).toStrictEqual({ text: want, truncated: false });
    });
  }
});

describe('word tokens and Jaccard', () => {
  it('tokenizes', () => {
    expect([...wordTokens('Hello, World!  (hello) «мир» — don\'t 42% #tag `code` **b**')]).toEqual(['hello', 'world', 'мир', "don't", '42', 'tag', 'code', 'b']);
  });
  it('jaccard', () => {
    expect(jaccard(new Set(), new Set())).toBe(0);
    expect(jaccard(new Set(['a']), new Set(['a']))).toBe(1);
    expect(jaccard(new Set(['a', 'b']), new Set(['b', 'c']))).toBeCloseTo(1 / 3);
  });
});

// ---------------------------------------------------------------------------------------------------------
// blame
// ---------------------------------------------------------------------------------------------------------

const commit = (n: number): CommitRef => ({
  sha: n.toString(16).padStart(40, '0'),
  author: `author${n}`,
  email: `a${n}@example.com`,
  time: `2026-01-01T00:00:${String(n % 60).padStart(2, '0')}Z`,
  message: `commit ${n}`,
});
const revs = (...texts: Array<string | null>) => texts.map((t, i) => ({ commit: commit(i + 1), page: t === null ? null : parsePage(t) }));

describe('annotateBlame', () => {
  const v1 = P('a: 1', 'Intro', '## A', 'a');
  const v2 = P('a: 1', 'Intro', '## A', 'a', '## B', 'b');
  const v3 = P('a: 1', 'Intro 2', '## A', 'a2', '## B', 'b', '## C', 'c');

  it('attributes each heading to the first revision in which it appeared; removed entries and the preamble never', () => {
    const v4 = P('a: 1', 'Intro 2', '## A', 'a2', '## C', 'c', '## D', 'd');
    const d = diffPages(v3, v4, { from_sha: 'x', to_sha: 'y' });
    const b = annotateBlame(d, revs(v1, v2, v3, v4));
    expect(d.preamble).toBeDefined();
    expect(b).toStrictEqual({
      ...d,
      // Blame attributes headings; the preamble has none, so it is never annotated.
      preamble: d.preamble,
      sections: [
        { ...d.sections[0]!, introduced_by: commit(1) },
        { ...d.sections[1]!, introduced_by: commit(3) },
        { ...d.sections[2]!, introduced_by: commit(4) },
        d.sections[3]!, // ## B removed
      ],
    });
    expect(d.sections.map((s) => [s.heading, s.status])).toEqual([
      ['## A', 'unchanged'],
      ['## C', 'unchanged'],
      ['## D', 'added'],
      ['## B', 'removed'],
    ]);
  });

  it('is pure: the input diff is not modified', () => {
    const d = diffPages(v1, v2);
    const before = JSON.stringify(d);
    annotateBlame(d, revs(v1, v2));
    expect(JSON.stringify(d)).toBe(before);
  });

  it('skips unreadable revisions (null pages)', () => {
    const d = diffPages(v1, v3);
    const b = annotateBlame(d, revs(null, v2, null, v3));
    expect(b.sections.map((s) => [s.heading, s.introduced_by?.sha])).toEqual([
      ['## A', commit(2).sha],
      ['## B', commit(2).sha],
      ['## C', commit(4).sha],
    ]);
  });

  it('a heading removed and re-added keeps its first appearance', () => {
    const d = diffPages(v1, v2);
    const b = annotateBlame(d, revs(v2, v1, v2));
    expect(b.sections.find((s) => s.heading === '## B')?.introduced_by).toStrictEqual(commit(1));
  });

  it('a renamed section prefers the old heading attribution, else the new one', () => {
    const r1 = P('a: 1', '## Context', 'some words about the context here');
    const r2 = P('a: 1', '## Context', 'some words about the context here', '## Z', 'z');
    const r3 = P('a: 1', '## Background', 'some words about the context here', '## Z', 'z');
    const d = diffPages(r2, r3);
    expect(d.sections.map((s) => s.status)).toEqual(['unchanged', 'renamed']);
    expect(annotateBlame(d, revs(r1, r2, r3)).sections[1]!.introduced_by).toStrictEqual(commit(1));
    // the old heading is outside the walk: fall back to the new heading's first appearance
    expect(annotateBlame(d, revs(r3)).sections[1]!.introduced_by).toStrictEqual(commit(1));
    expect(annotateBlame(d, revs(P('a: 1'), r3)).sections[1]!.introduced_by).toStrictEqual(commit(2));
  });

  it('repeated headings are attributed per occurrence', () => {
    const r1 = P('a: 1', '## Notes', 'one');
    const r2 = P('a: 1', '## Notes', 'one', '## X', 'x');
    const r3 = P('a: 1', '## Notes', 'one', '## X', 'x', '## Notes', 'two');
    const d = diffPages(r1, r3);
    const b = annotateBlame(d, revs(r1, r2, r3));
    expect(b.sections.map((s) => [s.heading, s.status, s.introduced_by?.sha])).toEqual([
      ['## Notes', 'unchanged', commit(1).sha],
      ['## X', 'added', commit(2).sha],
      ['## Notes', 'added', commit(3).sha],
    ]);
  });

  it('a heading older than the walk gets no attribution', () => {
    const d = diffPages(v1, v2);
    const b = annotateBlame(d, revs(P('a: 1', '## B', 'b')));
    expect(b.sections[0]!.introduced_by).toBeUndefined();
    expect(b.sections[1]!.introduced_by).toStrictEqual(commit(1));
  });

  it(`uses at most the ${BLAME_MAX_REVISIONS} newest revisions`, () => {
    const texts: string[] = [v1];
    for (let i = 0; i < 250; i++) texts.push(P('a: 1', '## B', `b${i}`));
    const d = diffPages(v1, texts[texts.length - 1]!);
    const b = annotateBlame(d, revs(...texts));
    // the walk starts at revision 52 (251 revisions, newest 200): ## A (only in revision 1) is out of it
    expect(b.sections.map((s) => [s.heading, s.introduced_by?.sha])).toEqual([
      ['## B', commit(52).sha],
      ['## A', undefined],
    ]);
    expect(BLAME_MAX_REVISIONS).toBe(200);
  });

  it('a fallback diff is returned unchanged', () => {
    const d = diffPages('no frontmatter', v1);
    expect(annotateBlame(d, revs(v1))).toBe(d);
  });

  it('never throws on malformed revisions; returns the plain diff', () => {
    const d = diffPages(v1, v2);
    const junk = [null, {}, { commit: null, page: parsePage(v1) }, { commit: commit(1), page: { sections: 'nope' } }] as unknown as Array<{ commit: CommitRef; page: ParsedPage | null }>;
    expect(() => annotateBlame(d, junk)).not.toThrow();
    expect(annotateBlame(d, null as unknown as [])).toBe(d);
  });
});

describe('blame timeline: one walk, every window', () => {
  /** The definition, walked window by window: the first revision of [start, end] with each heading occurrence. */
  function reference(revisions: Array<{ commit: CommitRef; page: ParsedPage | null }>, start: number, end: number) {
    const first = new Map<string, string>();
    for (let j = start; j <= end; j++) {
      const page = revisions[j]!.page;
      if (!page) continue;
      const counts = new Map<string, number>();
      for (const s of page.sections) {
        const n = counts.get(s.heading) ?? 0;
        counts.set(s.heading, n + 1);
        if (!first.has(`${n}|${s.heading}`)) first.set(`${n}|${s.heading}`, revisions[j]!.commit.sha);
      }
    }
    return { first };
  }

  it('answers every window of 150 random histories exactly as walking that window alone', () => {
    const r = prng(612);
    const heads = ['## A', '## B', '## C', '## A', '## B', '## D'];
    for (let h = 0; h < 150; h++) {
      const n = 1 + Math.floor(r() * 12);
      const texts: Array<string | null> = [];
      for (let j = 0; j < n; j++) {
        if (r() < 0.15) {
          texts.push(null); // a deletion or an unreadable revision
          continue;
        }
        const body = heads.filter(() => r() < 0.5).flatMap((hd) => [hd, 'x']);
        texts.push(P('a: 1', ...(r() < 0.5 ? ['intro'] : []), ...body));
      }
      const revisions = revs(...texts);
      const timeline = blameTimeline(revisions);
      for (let end = 0; end < n; end++) {
        for (let start = 0; start <= end; start++) {
          const want = reference(revisions, start, end);
          const index = timeline.window(start, end);
          for (const hd of ['## A', '## B', '## C', '## D']) {
            for (let occ = 0; occ < 3; occ++) {
              const key = occ === 0 ? hd : `${occ}\u0000${hd}`;
              expect(index.first.get(key)?.sha, `history ${h} [${start}, ${end}] ${occ} ${hd}`).toBe(want.first.get(`${occ}|${hd}`));
            }
          }
        }
      }
      // And through a diff ending at the newest revision: the same as annotateBlame on the window.
      const last = texts[n - 1];
      if (last) {
        const d = diffPages(texts[n - 2] ?? '', last);
        const start = Math.max(0, n - 4);
        expect(applyBlame(d, timeline.window(start, n - 1))).toStrictEqual(annotateBlame(d, revisions.slice(start)));
      }
    }
  });
});

describe('work budget: one per request, shared by its diffs', () => {
  // ## A's middle (two, x / 2, x, 3) shares a line, so it needs Myers; ## B is unchanged; ## Old → ## New is a rename.
  const a = P('a: 1', '## A', 'one', 'two', 'x', 'three', '## B', 'same', '## Old', 'the quick brown fox');
  const b = P('a: 1', '## A', 'one', '2', 'x', '3', 'three', '## B', 'same', '## New', 'the quick brown fox');
  const exact = X({
    sections: [
      S('## A', 'modified', { from: L('one', 'two', 'x', 'three'), to: L('one', '2', 'x', '3', 'three'), line_diff: L(same('one'), minus('two'), plus('2'), same('x'), plus('3'), same('three')) }),
      U('## B', 'same'),
      S('## New', 'renamed', { old_heading: '## Old', from: 'the quick brown fox', to: 'the quick brown fox' }),
    ],
  });
  /** What a spent budget gives: A as a whole-middle replacement, no rename, truncated. B is still exact. */
  const coarse = X({
    sections: [
      S('## A', 'modified', { from: L('one', 'two', 'x', 'three'), to: L('one', '2', 'x', '3', 'three'), line_diff: L(same('one'), minus('two', 'x'), plus('2', 'x', '3'), same('three')) }),
      U('## B', 'same'),
      S('## New', 'added', { to: 'the quick brown fox', line_diff: plus('the quick brown fox') }),
      S('## Old', 'removed', { from: 'the quick brown fox', line_diff: minus('the quick brown fox') }),
    ],
    truncated: true,
  });
  const pa = parsePage(a);
  const pb = parsePage(b);
  const shas = { from_sha: 'f1', to_sha: 't2' };

  it('with room to spare the diff is exact, and what it spent is counted', () => {
    const budget = new WorkBudget(1_000_000);
    expect(diffParsed(pa, pb, shas, budget)).toStrictEqual(exact);
    expect(budget.spent).toBeGreaterThan(0);
    expect(budget.exhausted).toBe(false);
  });

  it('a spent budget: line diffs become whole-block replacements, rename detection is skipped, truncated', () => {
    expect(diffParsed(pa, pb, shas, new WorkBudget(0))).toStrictEqual(coarse);
    expect(detectRenames(['the quick brown fox'], ['the quick brown fox'], new WorkBudget(0))).toStrictEqual({ pairs: new Map(), truncated: true });
    expect(detectRenames(['the quick brown fox'], ['the quick brown fox'])).toStrictEqual({ pairs: new Map([[0, 0]]), truncated: false });
  });

  it('the diffs of one request share it: the first spends it exactly, the second is coarse', () => {
    const probe = new WorkBudget(1_000_000);
    diffParsed(pa, pb, shas, probe);
    const budget = new WorkBudget(probe.spent);
    expect(diffParsed(pa, pb, shas, budget)).toStrictEqual(exact);
    expect(budget.remaining).toBe(0);
    expect(diffParsed(pa, pb, shas, budget)).toStrictEqual(coarse);
    // Without a budget (the CLI, the agent tool server) only the per-diff caps apply.
    expect(diffParsed(pa, pb, shas)).toStrictEqual(exact);
  });

  it('diffParsedAsync gives the same answers, handing the event loop a turn on long diffs', async () => {
    const big = (v: number) => P('a: 1', ...Array.from({ length: 3_000 }, (_, i) => [`## S${i}`, `body ${i} ${i % 7 === v ? 'edited' : ''}`]).flat());
    const [p1, p2] = [parsePage(big(0)), parsePage(big(1))];
    const sync = diffParsed(p1, p2, shas);
    expect(sync.sections.filter((e) => e.status === 'modified').length).toBe(858);

    let turned = false;
    setImmediate(() => (turned = true));
    expect(await diffParsedAsync(p1, p2, shas, new WorkBudget(1e9, 10_000))).toStrictEqual(sync);
    expect(turned).toBe(true);

    // With no turn due, it completes without giving one.
    turned = false;
    setImmediate(() => (turned = true));
    expect(await diffParsedAsync(pa, pb, shas, WorkBudget.unlimited())).toStrictEqual(exact);
    expect(turned).toBe(false);
    await new Promise((r) => setImmediate(r));
  });
});

// ---------------------------------------------------------------------------------------------------------
// property tests
// ---------------------------------------------------------------------------------------------------------

/** mulberry32: a tiny seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  '---', '## Decision', '## Context', '## Notes', '## ', '##', ' ## x', '### Sub', '# Title', '```', '```js', '~~~', '````',
  'title: T', 'tags: [a, b]', 'tags:', '  - x', '- item', 'a: &x [1, 2]', 'b: *x', 'k: {a: 1}', 'k: [', '"unterminated', '? key', ': v',
  'alpha beta gamma', 'delta epsilon', 'the quick brown fox', 'lorem ipsum dolor sit amet', '', '', '   ', '\t',
  'café ☃ 日本語 🚀', 'e\u0301', '\u0000', '\uFFFD\uFFFD', '\u0001\u001b[0m', '\uFEFF', '\u2028', 'x\ry', '%YAML 1.1', '!!binary aGk=', '{{{', ']]]',
];

function randomText(r: () => number): string {
  const n = Math.floor(r() * 30);
  const lines: string[] = [];
  if (r() < 0.6) {
    lines.push('---');
    const k = Math.floor(r() * 4);
    for (let i = 0; i < k; i++) lines.push(PIECES[Math.floor(r() * 30) % PIECES.length]!);
    if (r() < 0.9) lines.push('---');
  }
  for (let i = 0; i < n; i++) {
    let line = PIECES[Math.floor(r() * PIECES.length)]!;
    if (r() < 0.1) line += String.fromCharCode(Math.floor(r() * 0x3000));
    if (r() < 0.05) line = Array.from({ length: 1 + Math.floor(r() * 8) }, () => String.fromCharCode(Math.floor(r() * 0xffff))).join('');
    lines.push(line);
  }
  const eol = r() < 0.2 ? '\r\n' : r() < 0.05 ? '\r' : '\n';
  return lines.join(eol) + (r() < 0.5 ? eol : '');
}

/** A structurally valid page from random parts. */
function randomPage(r: () => number): string {
  const fields = ['title: T' + Math.floor(r() * 3), 'tags: [' + ['a', 'b', 'c', 'd'].filter(() => r() < 0.5).join(', ') + ']', 'n: ' + Math.floor(r() * 5)];
  const heads = ['## A', '## B', '## C', '## A', '## Notes'];
  const body: string[] = [];
  if (r() < 0.5) body.push('Intro ' + Math.floor(r() * 3));
  const k = Math.floor(r() * 6);
  for (let i = 0; i < k; i++) {
    body.push(heads[Math.floor(r() * heads.length)]!);
    const m = Math.floor(r() * 4);
    for (let j = 0; j < m; j++) body.push(PIECES[13 + Math.floor(r() * 25)]!.replace(/^---$/, 'x'));
  }
  return P(fields.filter(() => r() < 0.7).join('\n'), ...body);
}

describe('property: a page against itself is all unchanged', () => {
  it('holds for 2,000 generated pages and 2,000 random texts, also across line-ending styles', () => {
    const r = prng(42);
    for (let i = 0; i < 4000; i++) {
      const t = i % 2 === 0 ? randomPage(r) : randomText(r);
      const p = parsePage(t);
      for (const d of [diffParsed(p, p), diffPages(t, t.replace(/\r\n?|\n/g, '\r\n'))]) {
        const ok =
          d.frontmatter.changed.length + d.frontmatter.added.length + d.frontmatter.removed.length === 0 &&
          d.truncated === undefined &&
          d.sections.every((e) => e.status === 'unchanged') &&
          (d.preamble === undefined || d.preamble.status === 'unchanged') &&
          (d.parse_fallback === true || d.sections.length === p.sections.length);
        if (!ok) expect({ t, d }).toBeUndefined();
      }
    }
  });
});

describe('property: the differ never throws', () => {
  it('10,000 generated input pairs, with the invariants of the format', () => {
    const r = prng(20260517);
    for (let i = 0; i < 10_000; i++) {
      const a = r() < 0.5 ? randomText(r) : randomPage(r);
      const b = r() < 0.3 ? a.replace(/a/g, 'b') : r() < 0.5 ? randomText(r) : randomPage(r);
      // parse once, diff the parsed pages (diffPages is parsePage + diffParsed; the table checks they agree)
      const pa = parsePage(a);
      const pb = parsePage(b);
      const d = diffParsed(pa, pb, { from_sha: 'f', to_sha: 't' });
      const problems = invariantProblems(d, pa, pb, i % 10 === 0);
      if (d.parse_fallback !== (pa.frontmatter === null || pb.frontmatter === null ? true : undefined)) problems.push('parse_fallback');
      if (problems.length > 0) expect({ a, b, problems }).toBeUndefined();
      if (i % 10 === 0) {
        const revisions = [{ commit: commit(1), page: pa }, { commit: commit(2), page: null }, { commit: commit(3), page: pb }];
        const blamed = annotateBlame(d, revisions);
        if (blamed.sections.length !== d.sections.length) expect(blamed).toStrictEqual(d);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------------
// hostile input
// ---------------------------------------------------------------------------------------------------------

describe('hostile input', () => {
  // No timing assertions here: a hang fails through the suite's per-test timeout; speed is measured by
  // `npm run bench`.
  const run = <T>(f: () => T): T => f();

  it('billion laughs in the frontmatter: parse_fallback (the alias-count cap refuses it unexpanded)', () => {
    let y = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]';
    let prev = 'a';
    for (const c of 'bcdefghi') {
      y += `\n${c}: &${c} [${Array(9).fill('*' + prev).join(',')}]`;
      prev = c;
    }
    const d = run(() => D(P(y, '## A', 'x'), P('a: 1', '## A', 'x')));
    expect(d.parse_fallback).toBe(true);
    expect(d.sections).toEqual([]);
    expect(d.preamble?.status).toBe('modified');
    // The cap's effect: the YAML was refused, not expanded into 9^9 strings.
    expect(parsePage(P(y, '## A', 'x')).frontmatterError).toMatch(/alias/i);
  });

  it('10,000-deep nesting: parse_fallback by the depth cap, no stack overflow', () => {
    for (const y of ['a: ' + '['.repeat(10_000) + ']'.repeat(10_000), 'a: ' + '{b: '.repeat(10_000) + '1' + '}'.repeat(10_000), '- '.repeat(10_000) + 'x']) {
      const d = run(() => D(P(y, 'x'), P(y, 'x')));
      expect(d).toStrictEqual(X({ parse_fallback: true, preamble: U('_preamble', L('---', y, '---', 'x')) }));
      expect(parsePage(P(y, 'x')).frontmatterProblem).toBe('too-deep');
    }
  });

  it('binary garbage on both sides', () => {
    const r = prng(7);
    const bytes = Array.from({ length: 200_000 }, () => String.fromCharCode(Math.floor(r() * 256))).join('');
    const d = run(() => D(bytes, bytes.slice(1000) + '\u0000'));
    expect(d.parse_fallback).toBe(true);
    const sides = sidesOf(d.preamble!.line_diff);
    expect(sides.from).toBe(d.preamble!.from);
    expect(sides.to).toBe(d.preamble!.to);
  });

  it('a multi-megabyte page with a local edit: exact, not truncated', () => {
    const body = Array.from({ length: 40_000 }, (_, i) => `## S${i}\nsection ${i} has some text that goes on for a while ${'x'.repeat(60)}`);
    const a = P('a: 1', body.join('\n'));
    const b = a.replace('section 20000 has', 'section 20000 HAS');
    expect(a.length).toBeGreaterThan(4_000_000);
    const d = run(() => D(a, b));
    expect(d.truncated).toBeUndefined();
    expect(d.sections.length).toBe(40_000);
    expect(d.sections.filter((s) => s.status !== 'unchanged').map((s) => s.heading)).toEqual(['## S20000']);
  });

  it('a multi-megabyte section rewritten throughout: the Myers cap makes it coarse (truncated), still a correct diff', () => {
    const lines = Array.from({ length: 150_000 }, (_, i) => `line ${i} of a very large section with filler text`);
    const edited = lines.map((l, i) => (i % 7 === 3 ? l.toUpperCase() : l));
    const a = P('a: 1', '## Big', lines.join('\n'));
    const b = P('a: 1', '## Big', edited.join('\n'));
    expect(a.length).toBeGreaterThan(7_000_000);
    const d = run(() => D(a, b));
    expect(d.truncated).toBe(true);
    const e = d.sections[0]!;
    expect(e.status).toBe('modified');
    const sides = sidesOf(e.line_diff);
    expect(sides.from).toBe(e.from);
    expect(sides.to).toBe(e.to);
    // the exact common prefix is kept as context
    expect(e.line_diff!.split('\n').slice(0, 4)).toEqual(['  line 0 of a very large section with filler text', '  line 1 of a very large section with filler text', '  line 2 of a very large section with filler text', '- line 3 of a very large section with filler text']);
    // coarse: every old line of the middle, then every new one
    expect(e.line_diff!.includes('- line 149999 of a very large section with filler text\n+ LINE 3 OF A VERY LARGE SECTION WITH FILLER TEXT\n')).toBe(true);
    expect(e.line_diff!.endsWith('\n+ LINE 149999 OF A VERY LARGE SECTION WITH FILLER TEXT')).toBe(true);
  });

  it('a multi-megabyte page without frontmatter: fallback, truncated when the edits are many', () => {
    const lines = Array.from({ length: 120_000 }, (_, i) => `row ${i} ${'y'.repeat(30)}`);
    const a = lines.join('\n');
    const b = lines.map((l, i) => (i % 5 === 0 ? l + '!' : l)).join('\n');
    const d = run(() => D(a, b));
    expect(d.parse_fallback).toBe(true);
    expect(d.truncated).toBe(true);
    expect(sidesOf(d.preamble!.line_diff).to).toBe(d.preamble!.to);
  });

  it('thousands of simultaneously renamed sections: bounded, truncated', () => {
    const make = (h: string) => P('a: 1', Array.from({ length: 2_000 }, (_, i) => `## ${h}${i}\nalpha beta gamma delta ${i}`).join('\n'));
    const d = run(() => D(make('Old'), make('New')));
    expect(d.truncated).toBe(true);
    expect(d.sections.length).toBe(4_000);
  });

  it('long inner runs of blanks or punctuation stay linear (no regex backtracking)', () => {
    const n = 100_000;
    const d = run(() =>
      D(P('a: 1', '## H' + ' '.repeat(n) + 'x', 'a' + '!'.repeat(n) + 'b words'), P('a: 1', '## G' + ' '.repeat(n) + 'x', 'a' + '!'.repeat(n) + 'b words')),
    );
    expect(d.sections.map((s) => s.status)).toEqual(['renamed']);
  });

  it('lineDiff marks coarse diffs as truncated', () => {
    const a = Array.from({ length: 100_000 }, (_, i) => `l${i}`);
    const b = a.map((l, i) => (i % 3 === 0 ? l + 'x' : l));
    const r = lineDiff(a.join('\n'), b.join('\n'));
    expect(r.truncated).toBe(true);
    expect(sidesOf(r.text)).toStrictEqual({ from: a.join('\n'), to: b.join('\n') });
  });
});

describe('two rules of the diff contract: renames and blame', () => {
  it('a renamed section whose body did not change carries no line_diff; an edited one does', () => {
    const same = diffPages(P('a: 1', '## Context', 'why we did it', '## Keep', 'k'), P('a: 1', '## Background', 'why we did it', '## Keep', 'k'));
    expect(same.sections[1]).toStrictEqual({ heading: '## Background', status: 'renamed', old_heading: '## Context', from: 'why we did it', to: 'why we did it' });
    // Trailing blank lines are trimmed before comparing: still the same body.
    const reflowed = diffPages(P('a: 1', '## Context', 'why we did it', '', ''), P('a: 1', '## Background', 'why we did it'));
    expect(reflowed.sections[0]).not.toHaveProperty('line_diff');
    const edited = diffPages(P('a: 1', '## Context', 'one two three four five six seven eight nine ten'), P('a: 1', '## Background', 'one two three four five six seven eight nine ten eleven'));
    expect(edited.sections[0]).toMatchObject({ status: 'renamed', line_diff: '- one two three four five six seven eight nine ten\n+ one two three four five six seven eight nine ten eleven' });
    // Unchanged (not renamed) sections keep their all-"  " line diff.
    expect(same.sections[0]).toMatchObject({ status: 'unchanged', line_diff: '  k' });
  });

  it('the preamble is never annotated with introduced_by, whatever its status', () => {
    const r1 = P('a: 1', 'Intro', '## A', 'a');
    const r2 = P('a: 1', 'Intro changed', '## A', 'a');
    const r3 = P('a: 1', '## A', 'a');
    for (const [from, to] of [[r1, r2], [r1, r1], [r3, r1], [r2, r3]] as const) {
      const d = annotateBlame(diffPages(from, to), revs(r1, r2, r3, to));
      expect(d.preamble).toBeDefined();
      expect(d.preamble).not.toHaveProperty('introduced_by');
      expect(d.sections[0]!.introduced_by).toStrictEqual(commit(1));
    }
    expect(JSON.stringify(blameTimeline(revs(r1, r2)).window(0, 1))).not.toContain('Preamble');
  });
});
