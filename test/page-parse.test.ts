import { describe, expect, it } from 'vitest';
import {
  MAX_FRONTMATTER_BYTES,
  MAX_FRONTMATTER_NODES,
  PAGE_TYPES,
  isPageType,
  isValidSlug,
  normalizeText,
  pagePathFor,
  pageRefOfPath,
  parsePage,
  parseWithYaml,
  typeOfPath,
  type ParsedPage,
} from '../lib/core/page/parse.ts';
import { parseSimpleFrontmatter } from '../lib/core/page/simple-yaml.ts';

const L = (...lines: string[]) => lines.join('\n');

describe('parsePage: structure', () => {
  const cases: Array<{ name: string; text: string; expect: ParsedPage }> = [
    {
      name: 'empty document is a valid empty page',
      text: '',
      expect: { text: '', empty: true, frontmatter: {}, frontmatterRaw: null, preamble: '', sections: [] },
    },
    {
      name: 'whitespace-only document is an empty page',
      text: ' \n\t\n\n',
      expect: { text: ' \n\t\n\n', empty: true, frontmatter: {}, frontmatterRaw: null, preamble: '', sections: [] },
    },
    {
      name: 'full page: frontmatter, preamble, sections, ### inside parent, trailing blanks trimmed',
      text: L('---', 'title: X', 'tags: [a, b]', 'updated: 2026-05-17T10:00:00Z', '---', '', '# X', '', 'Intro.', '', '## Decision  ', '', 'Use Go.', '', '### Why', 'speed', '', '', '## Context', 'ctx', '   ', '\t', ''),
      expect: {
        text: L('---', 'title: X', 'tags: [a, b]', 'updated: 2026-05-17T10:00:00Z', '---', '', '# X', '', 'Intro.', '', '## Decision  ', '', 'Use Go.', '', '### Why', 'speed', '', '', '## Context', 'ctx', '   ', '\t', ''),
        empty: false,
        frontmatter: { title: 'X', tags: ['a', 'b'], updated: '2026-05-17T10:00:00Z' },
        frontmatterRaw: L('title: X', 'tags: [a, b]', 'updated: 2026-05-17T10:00:00Z'),
        preamble: L('', '# X', '', 'Intro.'),
        sections: [
          { heading: '## Decision', body: L('', 'Use Go.', '', '### Why', 'speed'), line: 11 },
          { heading: '## Context', body: 'ctx', line: 19 },
        ],
      },
    },
    {
      name: 'no frontmatter: whole text is body',
      text: L('# Title', '## A', 'a'),
      expect: {
        text: L('# Title', '## A', 'a'),
        empty: false,
        frontmatter: null,
        frontmatterProblem: 'missing',
        frontmatterError: 'no frontmatter: the first line is not ---',
        frontmatterRaw: null,
        preamble: '# Title',
        sections: [{ heading: '## A', body: 'a', line: 2 }],
      },
    },
    {
      name: 'unterminated frontmatter: no block, the --- line is body',
      text: L('---', 'a: 1', '## A', 'x'),
      expect: {
        text: L('---', 'a: 1', '## A', 'x'),
        empty: false,
        frontmatter: null,
        frontmatterProblem: 'unterminated',
        frontmatterError: 'frontmatter opened by --- is never closed',
        frontmatterRaw: null,
        preamble: L('---', 'a: 1'),
        sections: [{ heading: '## A', body: 'x', line: 3 }],
      },
    },
    {
      name: 'only frontmatter; closing line without newline; fences with trailing blanks',
      text: L('---  ', 'a: 1', '---\t'),
      expect: { text: L('---  ', 'a: 1', '---\t'), empty: false, frontmatter: { a: 1 }, frontmatterRaw: 'a: 1', preamble: '', sections: [] },
    },
    {
      name: 'empty frontmatter block is the empty mapping; later --- lines are body',
      text: L('---', '---', 'text', '---', 'more', '## A', '---'),
      expect: {
        text: L('---', '---', 'text', '---', 'more', '## A', '---'),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: L('text', '---', 'more'),
        sections: [{ heading: '## A', body: '---', line: 6 }],
      },
    },
    {
      name: 'headings: column 0 only, "## " required; empty title heading',
      text: L('---', '---', ' ## indented', '##nospace', '##', '#### deep', '##\ttab', '## ', 'body'),
      expect: {
        text: L('---', '---', ' ## indented', '##nospace', '##', '#### deep', '##\ttab', '## ', 'body'),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: L(' ## indented', '##nospace', '##', '#### deep', '##\ttab'),
        sections: [{ heading: '##', body: 'body', line: 8 }],
      },
    },
    {
      name: 'fenced code: ``` and ~~~ hide ## lines; longer fences need longer closers; info strings',
      text: L('---', '---', '## A', '```js', '## no', '```', '~~~', '## no', '```', '~~~', '````', '## no', '```', '````', '## B', 'b'),
      expect: {
        text: L('---', '---', '## A', '```js', '## no', '```', '~~~', '## no', '```', '~~~', '````', '## no', '```', '````', '## B', 'b'),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: '',
        sections: [
          { heading: '## A', body: L('```js', '## no', '```', '~~~', '## no', '```', '~~~', '````', '## no', '```', '````'), line: 3 },
          { heading: '## B', body: 'b', line: 15 },
        ],
      },
    },
    {
      name: 'fence rules: 4-space indent is not a fence; backtick info with backtick is not a fence; closer with text is not a closer',
      text: L('---', '---', '    ```', '## A', '``` a`b', '## B', '```', '``` x', '## hidden', '```', '## C'),
      expect: {
        text: L('---', '---', '    ```', '## A', '``` a`b', '## B', '```', '``` x', '## hidden', '```', '## C'),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: '    ```',
        sections: [
          { heading: '## A', body: '``` a`b', line: 4 },
          { heading: '## B', body: L('```', '``` x', '## hidden', '```'), line: 6 },
          { heading: '## C', body: '', line: 11 },
        ],
      },
    },
    {
      name: 'an unclosed fence runs to the end of the document (CommonMark)',
      text: L('---', '---', '## A', '  ```', '## B', '## C'),
      expect: {
        text: L('---', '---', '## A', '  ```', '## B', '## C'),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: '',
        sections: [{ heading: '## A', body: L('  ```', '## B', '## C'), line: 3 }],
      },
    },
    {
      name: 'CRLF and lone CR normalised, BOM dropped',
      text: '\uFEFF---\r\na: x\r\n---\r\n## A\rline\r\n\r\n',
      expect: {
        text: '---\na: x\n---\n## A\nline\n\n',
        empty: false,
        frontmatter: { a: 'x' },
        frontmatterRaw: 'a: x',
        preamble: '',
        sections: [{ heading: '## A', body: 'line', line: 4 }],
      },
    },
    {
      name: 'leading blank lines of a body are kept, trailing spaces of its last line too',
      text: L('---', '---', '## A', '', '', 'x  ', '  ', ''),
      expect: {
        text: L('---', '---', '## A', '', '', 'x  ', '  ', ''),
        empty: false,
        frontmatter: {},
        frontmatterRaw: '',
        preamble: '',
        sections: [{ heading: '## A', body: L('', '', 'x  '), line: 3 }],
      },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(parsePage(c.text)).toStrictEqual(c.expect);
    });
  }
});

describe('parsePage: frontmatter YAML', () => {
  const fm = (yaml: string) => parsePage(`---\n${yaml}\n---\n`);
  const cases: Array<[string, string, Partial<ParsedPage>]> = [
    ['mapping', 'a: 1\nb: [x, y]\nc: {d: e}', { frontmatter: { a: 1, b: ['x', 'y'], c: { d: 'e' } } }],
    ['comments only → {}', '# just a comment', { frontmatter: {} }],
    ['scalar → not a mapping', 'hello', { frontmatter: null, frontmatterProblem: 'not-mapping', frontmatterError: 'frontmatter is not a mapping' }],
    ['list → not a mapping', '- a\n- b', { frontmatter: null, frontmatterProblem: 'not-mapping', frontmatterError: 'frontmatter is not a mapping' }],
    ['duplicate key → invalid', 'a: 1\nb: 2\na: 3', { frontmatter: null, frontmatterProblem: 'invalid', frontmatterError: 'invalid YAML: duplicate key "a"' }],
    ['duplicate nested key → invalid', 'a:\n  x: 1\n  x: 2', { frontmatter: null, frontmatterProblem: 'invalid', frontmatterError: 'invalid YAML: duplicate key "x"' }],
    ['1 and "1" would collide as property names → duplicate', '1: a\n"1": b', { frontmatter: null, frontmatterProblem: 'invalid', frontmatterError: 'invalid YAML: duplicate key "1"' }],
    ['timestamps stay strings (core schema)', 'updated: 2026-05-17T10:00:00Z\nday: 2026-05-17', { frontmatter: { updated: '2026-05-17T10:00:00Z', day: '2026-05-17' } }],
    ['YAML 1.1 tags are not resolved', 'a: !!binary aGVsbG8=\nb: !!timestamp 2001-12-14', { frontmatter: { a: 'aGVsbG8=', b: '2001-12-14' } }],
    ['__proto__ is an ordinary key', '__proto__: {polluted: true}\nb: 1', {}],
    ['aliases are expanded into plain copies', 'a: &x [1, 2]\nb: *x', { frontmatter: { a: [1, 2], b: [1, 2] } }],
    ['alias cycle → too deep', 'a: &a [*a]', { frontmatter: null, frontmatterProblem: 'too-deep', frontmatterError: 'frontmatter nested deeper than 64' }],
    ['~ and null keys collide → duplicate', '~: a\nnull: b', { frontmatter: null, frontmatterProblem: 'invalid', frontmatterError: 'invalid YAML: duplicate key ""' }],
    ['null values', 'a:\nb: ~\nc: null', { frontmatter: { a: null, b: null, c: null } }],
  ];
  for (const [name, yaml, want] of cases) {
    it(name, () => {
      const p = fm(yaml);
      for (const [k, v] of Object.entries(want)) expect(p[k as keyof ParsedPage], k).toStrictEqual(v);
      if (name.startsWith('__proto__')) {
        expect(Object.keys(p.frontmatter!)).toEqual(['__proto__', 'b']);
        expect(Object.getPrototypeOf(p.frontmatter)).toBe(Object.prototype);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(JSON.parse(JSON.stringify(p.frontmatter))).toStrictEqual(JSON.parse('{"__proto__":{"polluted":true},"b":1}'));
      }
    });
  }

  it('invalid syntax reports the first yaml error', () => {
    const p = fm('a: [1, 2\nb: }');
    expect(p.frontmatter).toBeNull();
    expect(p.frontmatterProblem).toBe('invalid');
    expect(p.frontmatterError).toMatch(/^invalid YAML: /);
  });

  it('tabs as indentation are invalid YAML', () => {
    expect(fm('a:\n\tb: 1').frontmatterProblem).toBe('invalid');
  });

  it('oversized block → too-large, without parsing', () => {
    const yaml = 'a: ' + 'x'.repeat(MAX_FRONTMATTER_BYTES);
    const p = fm(yaml);
    expect(p.frontmatterProblem).toBe('too-large');
  });

  it('alias bomb (billion laughs) → invalid by the alias-count cap, never expanded', () => {
    let y = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
    let prev = 'a';
    for (const c of 'bcdefghi') {
      y += `${c}: &${c} [${Array(9).fill('*' + prev).join(',')}]\n`;
      prev = c;
    }
    const p = fm(y);
    expect(p.frontmatter).toBeNull();
    expect(p.frontmatterProblem).toBe('invalid');
    expect(p.frontmatterError).toMatch(/alias/i);
  });

  it('wide alias expansion beyond the node budget → too-large', () => {
    const y = `a: &a [${Array.from({ length: 5000 }, (_, i) => i).join(',')}]\nb: [${Array(50).fill('*a').join(',')}]`;
    const p = fm(y);
    expect(p.frontmatterProblem).toBe('too-large');
  });

  const deep: Array<[string, string]> = [
    ['10,000-deep flow sequences', 'a: ' + '['.repeat(10_000) + ']'.repeat(10_000)],
    ['10,000-deep flow mappings', 'a: ' + '{b: '.repeat(10_000) + '1' + '}'.repeat(10_000)],
    ['10,000-deep compact block sequences', '- '.repeat(10_000) + 'x'],
    ['700-deep indentation (the most the size cap allows)', Array.from({ length: 700 }, (_, i) => ' '.repeat(i) + 'k:').join('\n')],
    ['65-deep flow (just over the cap)', 'a: ' + '['.repeat(64) + ']'.repeat(64)],
  ];
  for (const [name, yaml] of deep) {
    it(`deep nesting: ${name} → too-deep by the depth cap, no stack overflow`, () => {
      const p = fm(yaml);
      expect(p.frontmatter).toBeNull();
      expect(p.frontmatterProblem).toBe('too-deep');
      expect(p.frontmatterError).toBe('frontmatter nested deeper than 64');
    });
  }

  it('nesting at the cap is accepted', () => {
    const p = fm('a: ' + '['.repeat(62) + ']'.repeat(62));
    expect(p.frontmatter).not.toBeNull();
  });
});

describe('parsePage: robustness and speed', () => {
  it('never throws on odd input', () => {
    const odd: unknown[] = ['\u0000\u0001\uFFFD', '---\n\u0000: \uFFFD\n---\n## \u0000', '\r\r\r', '---', '---\n---', '\uFEFF', null, undefined, 42];
    for (const t of odd) expect(() => parsePage(t as string)).not.toThrow();
    expect(parsePage(null as unknown as string).empty).toBe(true);
  });

  it('a multi-megabyte page parses whole (a hang fails by the suite timeout; speed is measured by npm run bench)', () => {
    const big = '---\na: 1\n---\n' + Array.from({ length: 50_000 }, (_, i) => `## S${i}\n${'word '.repeat(16)}`).join('\n');
    const p = parsePage(big);
    expect(p.sections.length).toBe(50_000);
  });

  it('long runs of blanks, fences and punctuation stay linear', () => {
    const n = 200_000;
    parsePage('---\n---\n## ' + ' '.repeat(n) + 'x\n' + ' '.repeat(n) + 'y\n' + '`'.repeat(n) + 'z\n---' + ' '.repeat(n) + 'q');
    parsePage('---' + ' '.repeat(n) + 'x\n## A');
    expect(parsePage('---\n---\n## A' + ' '.repeat(n)).sections[0]!.heading).toBe('## A');
  });

  it('normalizeText', () => {
    expect(normalizeText('\uFEFFa\r\nb\rc\n')).toBe('a\nb\nc\n');
    expect(normalizeText('a\uFEFF')).toBe('a\uFEFF');
  });
});

describe('page types and layout', () => {
  it('types', () => {
    expect(PAGE_TYPES).toEqual(['concept', 'entity', 'analysis', 'source']);
    expect(isPageType('concept')).toBe(true);
    expect(isPageType('Concept')).toBe(false);
    expect(isPageType(undefined)).toBe(false);
  });

  const layout: Array<[(typeof PAGE_TYPES)[number], string, string]> = [
    ['concept', 'event-sourcing', 'wiki/concepts/event-sourcing.md'],
    ['entity', 'acme', 'wiki/entities/acme.md'],
    ['analysis', 'q3', 'wiki/analyses/q3.md'],
    ['source', '2026-05-17-session', 'raw/sessions/2026-05-17-session'],
    ['source', 'notes.md', 'raw/sessions/notes.md'],
    ['concept', 'ünïcødé', 'wiki/concepts/ünïcødé.md'],
  ];
  for (const [type, slug, path] of layout) {
    it(`${type} ${slug} ↔ ${path}`, () => {
      expect(pagePathFor(type, slug)).toBe(path);
      expect(typeOfPath(path)).toBe(type);
      expect(pageRefOfPath(path)).toEqual({ type, slug });
    });
  }

  it('paths outside the layout', () => {
    for (const p of ['wiki/concepts/x.txt', 'wiki/concepts/.md', 'wiki/concepts/a/b.md', 'wiki/concept/x.md', 'raw/sessions/', 'raw/sessions/a/b', 'README.md', '', 'wiki/concepts/x', 'raw/sessions/..']) {
      expect(typeOfPath(p), p).toBeNull();
      expect(pageRefOfPath(p), p).toBeNull();
    }
    expect(typeOfPath(undefined as unknown as string)).toBeNull();
  });

  it('invalid slugs and types are refused', () => {
    for (const s of ['', '.', '..', 'a/b', 'a\\b', 'a\nb', 'a\u0000', '-rf', '.GIT', 'a\u0085']) {
      expect(isValidSlug(s)).toBe(false);
      expect(() => pagePathFor('concept', s)).toThrow(RangeError);
    }
    expect(() => pagePathFor('nope' as 'concept', 'x')).toThrow(RangeError);
  });
});

/**
 * The frontmatter fast path (lib/core/page/simple-yaml.ts) against the YAML library on the same text: where the
 * fast path answers, the answer must be the YAML path's, key order included; where it is unsure it must say
 * so (null). Documents are generated from a grammar rich in the cases where YAML reads differently.
 */
describe('frontmatter without the YAML parser: the same answers', () => {
  const MAX = MAX_FRONTMATTER_NODES;
  const same = (raw: string): 'fast' | 'yaml' => {
    const fast = parseSimpleFrontmatter(raw, MAX);
    if (fast === null) return 'yaml';
    const slow = parseWithYaml(raw);
    expect(slow, raw).toEqual({ ok: true, value: fast });
    if (slow.ok) expect(Object.keys(slow.value), raw).toEqual(Object.keys(fast));
    return 'fast';
  };

  it('answers the common shapes, as YAML does', () => {
    const common = [
      L('title: Release process', 'type: decision', 'tags: [release, ops]'),
      L('title: "Quoted: with colon # and hash"', "owner: 'single \"x\"'", 'tags: []'),
      L('title: It\'s fine', 'created: 2024-01-05', 'tags:', '  - one', '  - two words'),
      L('title: Ünïcödé Ζ 日本語', 'status: draft', '', 'aliases:', '- a', '- b'),
      L('title: a/b (c) + d - e & f? g! h=i; j@k 50% *x ~y', 'empty:'),
    ];
    for (const raw of common) expect(same(raw), raw).toBe('fast');
    expect(parseSimpleFrontmatter(common[2]!, MAX)).toEqual({ title: "It's fine", created: '2024-01-05', tags: ['one', 'two words'] });
    expect(parseSimpleFrontmatter(common[4]!, MAX)).toEqual({ title: 'a/b (c) + d - e & f? g! h=i; j@k 50% *x ~y', empty: null });
  });

  it('leaves every other shape to YAML', () => {
    const others = [
      'n: 12', 'f: 1.5', 'b: true', 'b: False', 'x: null', 'x: ~', 'x: .inf', 'x: 0x1f', 'y: -3',
      'k: v # comment', '# only a comment', 'k: &a x', 'k: *a', 'k: !tag x', 'k: |', 'k: >', 'k: "esc \\n"',
      "k: 'it''s'", 'k: a: b', 'k: {a: 1}', 'k: [a, [b]]', 'k: [a, "b, c"]', 'k:\n  nested: 1', 'k:\n  - a\n    - b',
      'k:\n  - a\n - b', 'k: a\nk: b', 'null: x', '__proto__: x', 'k : v', ' k: v', 'k:\tv', 'k: "  padded"',
      'k: two  spaces', '"k": v', 'k:v', 'k: [a,\n  b]', '- a', 'k: [1, 2]', 'k: [a, true]', 'k: a\r', 'k: v\t', 'k: \u2028x',
      'k:\n- a\n\n- b', 'k: -x', 'k: :x', 'k: ?x', 'k: @x', 'k: %x', 'k: `x`', 'k: ,x', 'k: 2024-1-5',
    ];
    for (const raw of others) expect(same(raw), JSON.stringify(raw)).toBe('yaml');
  });

  it('agrees with YAML on 20,000 generated documents', () => {
    let seed = 20261123;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const pick = <T,>(xs: readonly T[]): T => xs[rnd(xs.length)]!;
    const atoms = [
      'a', 'word', 'Two words', "it's", 'x-y', 'a.b', 'v1.0', 'Infinity', 'NaN', 'yes', 'No', 'on', 'y', 'null', 'Null', 'true',
      'TRUE', 'false', '~', '12', '-3', '+4', '1.5', '.5', '1e3', '0o17', '0x1F', '.inf', '-.Inf', '.NaN', '2024-01-05',
      '2024-01-05T10:00:00Z', '1_000', 'a: b', 'a #b', 'a#b', '#a', '&a', '*a', '!a', '|', '>', '-', '- a', '?', '? a', ':a',
      '@a', '`a`', '%a', 'a,b', '[a]', '{a}', 'a]', '"q"', "'q'", '"a\\"b"', "'a''b'", '"a: b"', "'#'", '""', "''", 'ü',
      'Ωμέγα', '日本', 'a  b', ' a', 'a ', 'a\r', 'a\t', '\ta', 'a\u0085', '\ufeffa', 'é́', '_x', 'a/b', '(a)', 'a+b', 'a&b', 'a=b', 'a;b', 'a@b', '50%', 'a*b', 'a~b',
    ];
    const keys = ['title', 'type', 'tags', 'k', 'x-y', 'a_b', '_z', 'null', 'True', 'y', '1', 'k k', '__proto__', 'title'];
    const value = (): string => {
      switch (rnd(6)) {
        case 0:
          return ` [${Array.from({ length: rnd(4) }, () => pick(atoms)).join(pick([', ', ',', ' , ']))}]`;
        case 1:
          return `\n${Array.from({ length: 1 + rnd(3) }, () => `${pick(['', '  ', ' '])}- ${pick(atoms)}`).join('\n')}`;
        case 2:
          return '';
        default:
          return ` ${pick(atoms)}${pick(['', '', ' ', ' # c'])}`;
      }
    };
    let fast = 0;
    for (let i = 0; i < 20_000; i++) {
      const lines = Array.from({ length: 1 + rnd(5) }, () => `${pick(keys)}:${value()}`);
      if (rnd(8) === 0) lines.splice(rnd(lines.length), 0, '');
      if (same(lines.join('\n')) === 'fast') fast++;
    }
    // Enough of them take the fast path for the comparison to mean something.
    expect(fast).toBeGreaterThan(1_000);
  });
});
