/**
 * The dashboard's pure pieces, without a browser: link resolution (links.ts), the editor's page model
 * (fields.ts), conflict resolution (resolve.ts, against the server's own merge) and the pre-pass that keeps
 * inline styles, event handlers and <base> out of the HTML parser (content.ts withoutPolicyTriggers) and
 * what the live views make of the event stream's events (live.ts; the stream's parser is lib/core/sse/parser.ts, tested in test/sse-client.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { isRelativeHref, parseWikiLink, resolveRelativeHref, resolveWikiTarget } from '../dashboard/src/links.ts';
import { modelOf, newPageModel, splitTags, textOf } from '../dashboard/src/fields.ts';
import { conflictItems, resolvePage, type Choice } from '../dashboard/src/resolve.ts';
import { withoutPolicyTriggers } from '../dashboard/src/content.ts';
import { mergePages } from '../lib/core/differ/merge.ts';
import { backoffMs, changesSince, MAX_BACKOFF_MS, memberEventOf, nameList, pushEventOf } from '../dashboard/src/live.ts';

const PAGES = new Set([
  'wiki/concepts/storage.md',
  'wiki/entities/postgres.md',
  'wiki/concepts/cache.md',
  'wiki/analyses/cache.md',
  'raw/sessions/2026-11-23',
  'notes/readme.md',
]);

describe('links between pages', () => {
  it('parses [[target|text]]', () => {
    expect(parseWikiLink('postgres')).toEqual({ target: 'postgres', text: 'postgres' });
    expect(parseWikiLink(' entities/postgres | the database ')).toEqual({ target: 'entities/postgres', text: 'the database' });
    expect(parseWikiLink('postgres|')).toEqual({ target: 'postgres', text: 'postgres' });
    expect(parseWikiLink(' |x')).toBeNull();
  });

  it('resolves a slug among the page types; two types make it ambiguous; none, missing with its slug', () => {
    expect(resolveWikiTarget('postgres', PAGES)).toEqual({ kind: 'page', path: 'wiki/entities/postgres.md' });
    expect(resolveWikiTarget('postgres#Replication', PAGES)).toEqual({ kind: 'page', path: 'wiki/entities/postgres.md' });
    expect(resolveWikiTarget('2026-11-23', PAGES)).toEqual({ kind: 'page', path: 'raw/sessions/2026-11-23' });
    expect(resolveWikiTarget('cache', PAGES)).toEqual({ kind: 'ambiguous', paths: ['wiki/concepts/cache.md', 'wiki/analyses/cache.md'] });
    expect(resolveWikiTarget('nothing', PAGES)).toEqual({ kind: 'missing', slug: 'nothing' });
    expect(resolveWikiTarget('a:b', PAGES)).toEqual({ kind: 'missing' });
  });

  it('picks the type with [[type/slug]], by name, plural or folder; a longer target is a path', () => {
    for (const t of ['analysis/cache', 'analyses/cache', 'Analyses/cache']) {
      expect(resolveWikiTarget(t, PAGES)).toEqual({ kind: 'page', path: 'wiki/analyses/cache.md' });
    }
    expect(resolveWikiTarget('entities/mysql', PAGES)).toEqual({ kind: 'missing', path: 'wiki/entities/mysql.md', type: 'entity', slug: 'mysql' });
    expect(resolveWikiTarget('notes/readme', PAGES)).toEqual({ kind: 'page', path: 'notes/readme.md' });
    expect(resolveWikiTarget('wiki/concepts/storage.md', PAGES)).toEqual({ kind: 'page', path: 'wiki/concepts/storage.md' });
    expect(resolveWikiTarget('wiki/concepts/new', PAGES)).toEqual({ kind: 'missing', path: 'wiki/concepts/new.md', type: 'concept', slug: 'new' });
  });

  it('resolves relative links from the linking page’s folder; addresses elsewhere are not relative', () => {
    const from = 'wiki/concepts/storage.md';
    expect(resolveRelativeHref('../entities/postgres.md', from, PAGES)).toEqual({ kind: 'page', path: 'wiki/entities/postgres.md' });
    expect(resolveRelativeHref('./cache.md#top', from, PAGES)).toEqual({ kind: 'page', path: 'wiki/concepts/cache.md' });
    expect(resolveRelativeHref('/notes/readme.md', from, PAGES)).toEqual({ kind: 'page', path: 'notes/readme.md' });
    expect(resolveRelativeHref('../entities/my%20db.md', from, PAGES)).toEqual({ kind: 'missing', path: 'wiki/entities/my db.md', type: 'entity', slug: 'my db' });
    expect(resolveRelativeHref('../../notes/other.md', from, PAGES)).toEqual({ kind: 'missing', path: 'notes/other.md' });
    expect(resolveRelativeHref('../entities/gone.md', from, PAGES)).toEqual({ kind: 'missing', path: 'wiki/entities/gone.md', type: 'entity', slug: 'gone' });
    expect(resolveRelativeHref('../../../../x.md', from, PAGES)).toEqual({ kind: 'missing' });
    expect(resolveRelativeHref('%E0%A4%A', from, PAGES)).toEqual({ kind: 'missing' });
    for (const h of ['https://x.example/a.md', '//x.example/a.md', 'mailto:a@b', '#top', '?q=1', 'JavaScript:alert(1)', '']) {
      expect(isRelativeHref(h), h).toBe(false);
      expect(resolveRelativeHref(h, from, PAGES)).toBeNull();
    }
  });
});

describe("the editor's page model", () => {
  const PAGE = `---\ntype: concept  # the kind\ntags: [process]\nupdated: 2026-01-01\n---\nWhy.\n## Decision\nUse git.\n`;

  it('reads the four fields; the text is the page byte for byte while they are untouched', () => {
    const m = modelOf(PAGE);
    expect(m).toMatchObject({ mode: 'fields', fields: { title: '', type: 'concept', tags: 'process', summary: '' }, otherKeys: ['updated'], locked: [] });
    expect(m.body).toBe('Why.\n## Decision\nUse git.\n');
    expect(textOf(m)).toBe(PAGE);
    expect(textOf({ ...m, fields: { ...m.fields, tags: ' process,, ' } })).toBe(PAGE);
  });

  it('edits only the fields that changed, in place, keeping comments, order and inline lists', () => {
    const m = modelOf(PAGE);
    m.fields.title = 'Decision log: "why"';
    m.fields.tags = 'process, storage, process';
    expect(textOf(m)).toBe(`---\ntype: concept # the kind\ntags: [process, storage]\nupdated: 2026-01-01\ntitle: 'Decision log: "why"'\n---\nWhy.\n## Decision\nUse git.\n`);
    m.fields.type = '';
    m.fields.tags = '';
    expect(textOf(m)).toBe(`---\nupdated: 2026-01-01\ntitle: 'Decision log: "why"'\n---\nWhy.\n## Decision\nUse git.\n`);
  });

  it('adds a frontmatter block only when a field is set; a new page lists type first', () => {
    const plain = modelOf('Loose notes.\n');
    expect(textOf(plain)).toBe('Loose notes.\n');
    plain.fields.title = 'Notes';
    expect(textOf(plain)).toBe('---\ntitle: Notes\n---\nLoose notes.\n');
    expect(textOf(newPageModel('entity', 'Acme'))).toBe('---\ntype: entity\ntitle: Acme\n---\n');
    const empty = modelOf('---\n---\nbody');
    expect(textOf(empty)).toBe('---\n---\nbody');
  });

  it('edits a page whose frontmatter cannot be read as one text; fields that are not text stay locked', () => {
    const bad = modelOf('---\n: bad: [\n---\nx');
    expect(bad.mode).toBe('raw');
    expect(bad.body).toBe('---\n: bad: [\n---\nx');
    expect(textOf(bad)).toBe(bad.body);
    expect(modelOf('---\ntitle: open\nno close').mode).toBe('raw');
    const locked = modelOf('---\ntags:\n  - {a: 1}\ntitle: 3\n---\n');
    expect(locked.locked).toEqual(['tags']);
    expect(locked.fields.title).toBe('3');
    locked.fields.title = 'Three';
    expect(textOf(locked)).toBe('---\ntags:\n  - {a: 1}\ntitle: Three\n---\n');
  });

  it('splits tags on commas, trimmed, without duplicates', () => {
    expect(splitTags(' a, b ,,a ,c ')).toEqual(['a', 'b', 'c']);
  });
});

describe('resolving a conflict', () => {
  const BASE = `---\ntitle: Log\ntags: [a]\n---\nIntro.\n\n## Decision\nUse git.\n\n## Risks\nNone.\n\n## Notes\nN1.\n`;
  const THEIRS = `---\ntitle: Their log\ntags: [a, b]\n---\nIntro, theirs.\n\n## Decision\nUse git and SQLite.\n\n## Notes\nN1.\n`;
  const MINE = `---\ntitle: My log\ntags: [a, c]\n---\nIntro.\n\n## Decision\nUse git and Postgres.\n\n## Risks\nSome.\n\n## Notes\nN1, mine.\n\n## Added\nNew.\n`;
  const conflicting = () => {
    const m = mergePages(BASE, THEIRS, MINE);
    if (m.clean) throw new Error('expected a conflict');
    return m.conflicting;
  };
  const choose = (items: ReturnType<typeof conflictItems>, pick: (id: string) => Choice) => new Map(items.map((i) => [i.id, pick(i.id)]));

  it('names each part three ways, as the server named them', () => {
    expect(conflicting()).toEqual(['frontmatter.title', '## Decision', '## Risks']);
    const items = conflictItems(BASE, THEIRS, MINE, conflicting());
    expect(items.map((i) => [i.kind, i.label, i.base, i.theirs, i.mine])).toEqual([
      ['field', 'Field “title”', 'Log', 'Their log', 'My log'],
      ['part', 'Section “Decision”', 'Use git.', 'Use git and SQLite.', 'Use git and Postgres.'],
      ['part', 'Section “Risks”', 'None.', null, 'Some.'],
    ]);
  });

  it('every choice wins and everything that merged stays merged', () => {
    const items = conflictItems(BASE, THEIRS, MINE, conflicting());
    const both = '\n\n## Notes\nN1, mine.\n\n## Added\nNew.\n';
    expect(resolvePage(BASE, THEIRS, MINE, items, choose(items, () => ({ take: 'theirs' })))).toEqual({
      ok: true,
      text: `---\ntitle: Their log\ntags: [a, b, c]\n---\nIntro, theirs.\n\n## Decision\nUse git and SQLite.${both}`,
    });
    expect(resolvePage(BASE, THEIRS, MINE, items, choose(items, () => ({ take: 'mine' })))).toEqual({
      ok: true,
      text: `---\ntitle: My log\ntags: [a, b, c]\n---\nIntro, theirs.\n\n## Decision\nUse git and Postgres.\n\n## Risks\nSome.${both}`,
    });
    const edited = resolvePage(BASE, THEIRS, MINE, items, choose(items, (id) => ({ take: 'edit', text: id.startsWith('frontmatter.') ? '"Our: log"' : 'Edited.\n\n' })));
    expect(edited).toEqual({
      ok: true,
      text: `---\ntitle: "Our: log"\ntags: [a, b, c]\n---\nIntro, theirs.\n\n## Decision\nEdited.\n\n## Risks\nEdited.${both}`,
    });
    // The resolved page merges cleanly on top of theirs, as the server will see it.
    if (edited.ok) expect(mergePages(THEIRS, THEIRS, edited.text)).toMatchObject({ clean: true, text: edited.text });
  });

  it('asks for a choice per part, and for valid YAML in an edited field', () => {
    const items = conflictItems(BASE, THEIRS, MINE, conflicting());
    expect(resolvePage(BASE, THEIRS, MINE, items, new Map())).toEqual({ ok: false, error: 'Choose what to keep for Field “title”.' });
    const bad = choose(items, (id) => (id.startsWith('frontmatter.') ? { take: 'edit', text: '[unclosed' } : { take: 'mine' }));
    const r = resolvePage(BASE, THEIRS, MINE, items, bad);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/^Field “title”: the value is not valid YAML/);
  });

  it('a deletion against a change: keeping the deletion deletes, taking the change keeps it', () => {
    const base = '---\n---\n## A\none\n\n## B\ntwo\n';
    const theirs = '---\n---\n## A\none\n\n## B\ntwo, changed\n';
    const mine = '---\n---\n## A\none, mine\n';
    const m = mergePages(base, theirs, mine);
    expect(m).toEqual({ clean: false, conflicting: ['## B'] });
    const items = conflictItems(base, theirs, mine, ['## B']);
    expect(items.map((i) => [i.base, i.theirs, i.mine])).toEqual([['two', 'two, changed', null]]);
    expect(resolvePage(base, theirs, mine, items, new Map([[items[0]!.id, { take: 'mine' }]]))).toEqual({ ok: true, text: '---\n---\n## A\none, mine\n' });
    expect(resolvePage(base, theirs, mine, items, new Map([[items[0]!.id, { take: 'theirs' }]]))).toEqual({
      ok: true,
      text: '---\n---\n## A\none, mine\n\n## B\ntwo, changed\n',
    });
  });

  it('the frontmatter block as an item: a comment changed beside changed keys, each choice wins', () => {
    const base = '---\ntitle: Log\n# owner: ops\nstatus: draft\n---\n## A\na\n';
    const theirs = '---\ntitle: Log\n# owner: platform team\nstatus: draft\n---\n## A\na, theirs\n';
    const mine = '---\ntitle: Log\n# owner: ops\nstatus: done\n---\n## A\na\n\n## B\nb\n';
    expect(mergePages(base, theirs, mine)).toEqual({ clean: false, conflicting: ['frontmatter'] });
    const items = conflictItems(base, theirs, mine, ['frontmatter']);
    expect(items.map((i) => [i.kind, i.label, i.base, i.theirs, i.mine])).toEqual([
      ['block', 'The frontmatter block (comments, key order or formatting)', 'title: Log\n# owner: ops\nstatus: draft', 'title: Log\n# owner: platform team\nstatus: draft', 'title: Log\n# owner: ops\nstatus: done'],
    ]);
    const body = '## A\na, theirs\n\n## B\nb\n';
    expect(resolvePage(base, theirs, mine, items, new Map([['frontmatter', { take: 'theirs' }]]))).toEqual({ ok: true, text: `---\ntitle: Log\n# owner: platform team\nstatus: draft\n---\n${body}` });
    expect(resolvePage(base, theirs, mine, items, new Map([['frontmatter', { take: 'mine' }]]))).toEqual({ ok: true, text: `---\ntitle: Log\n# owner: ops\nstatus: done\n---\n${body}` });
    const edit = '---\ntitle: Log\n# owner: platform team\nstatus: done\n---\n';
    expect(resolvePage(base, theirs, mine, items, new Map([['frontmatter', { take: 'edit', text: edit }]]))).toEqual({ ok: true, text: `${edit}${body}` });
    const bad = resolvePage(base, theirs, mine, items, new Map([['frontmatter', { take: 'edit', text: '- a list' }]]));
    expect(!bad.ok && bad.error).toMatch(/^The frontmatter block \(comments, key order or formatting\): not a YAML mapping/);
  });

  it('a repeated heading is decided per occurrence that differs', () => {
    const base = '---\n---\n## Note\na\n\n## Note\nb\n';
    const theirs = '---\n---\n## Note\na\n\n## Note\nb, theirs\n';
    const mine = '---\n---\n## Note\na\n\n## Note\nb, mine\n';
    const items = conflictItems(base, theirs, mine, ['## Note']);
    expect(items.map((i) => [i.label, i.theirs, i.mine])).toEqual([['Section “Note” (occurrence 2)', 'b, theirs', 'b, mine']]);
    expect(resolvePage(base, theirs, mine, items, new Map([[items[0]!.id, { take: 'mine' }]]))).toEqual({ ok: true, text: '---\n---\n## Note\na\n\n## Note\nb, mine\n' });
  });

  it('a page that is not a page on a side, or a conflict without a base, is one whole text', () => {
    for (const [base, conflicting] of [
      ['one\ntwo\n', ['_preamble']],
      [null, undefined],
      ['---\n---\nx\n', undefined],
    ] as const) {
      const items = conflictItems(base, 'one\ntheirs\n', 'one\nmine\n', conflicting as string[] | undefined);
      expect(items.map((i) => [i.kind, i.label])).toEqual([['whole', 'The whole page']]);
      expect(resolvePage(base, 'one\ntheirs\n', 'one\nmine\n', items, new Map([['whole', { take: 'mine' }]]))).toEqual({ ok: true, text: 'one\nmine\n' });
      expect(resolvePage(base, 'one\ntheirs\n', 'one\nmine\n', items, new Map([['whole', { take: 'edit', text: 'both\r\n' }]]))).toEqual({ ok: true, text: 'both\n' });
    }
  });
});

describe('inline styles, event handlers and <base> kept out of the HTML parser', () => {
  it('drops style and on… attributes, <style> and <base> elements, nothing else', () => {
    const cases: [string, string][] = [
      ['<p style="a">x</p>', '<p>x</p>'],
      ['<P STYLE = "a" title="b">y</P>', '<P title="b">y</P>'],
      ['<img src=x style=a style=b>', '<img src=x>'],
      ['a < b and <style>p{}</style> c', 'a < b and  c'],
      ['<STYLE media="x">p{}</STYLE >after', 'after'],
      ['<style>unclosed', ''],
      ['<styles>kept</styles>', '<styles>kept</styles>'],
      ['text <3 ok', 'text <3 ok'],
      ['<p>style="not an attribute"</p>', '<p>style="not an attribute"</p>'],
      ['<p title="nostyle=1">x', '<p title="nostyle=1">x'],
      // Event handlers, however they are spelled and placed.
      ['<img src=x onerror=alert(1)>', '<img src=x>'],
      ['<IMG SRC="x" ONERROR="alert(1)" alt=y>', '<IMG SRC="x" alt=y>'],
      ['<img/onerror=alert(1)>', '<img>'],
      ['<img src="x"onerror=alert(1)>', '<img src="x">'],
      ["<svg onload='a()'><circle onclick=b() r=4></circle></svg>", '<svg><circle r=4></circle></svg>'],
      ['<a href=x onclick>k</a>', '<a href=x>k</a>'],
      ['<details open\nontoggle\t=\n"x">d</details>', '<details open>d</details>'],
      // Text that only looks like a handler stays: inside a quoted value, in text, in an end tag.
      ['<p title="x onclick=y" data-on="1">t</p>', '<p title="x onclick=y" data-on="1">t</p>'],
      ['<a title=\'a > onclick=b\'>z</a>', '<a title=\'a > onclick=b\'>z</a>'],
      ['onclick=x <b>bold</b></p onclick=y>', 'onclick=x <b>bold</b></p onclick=y>'],
      ['<button-x online=1>', '<button-x>'],
      // <base>, whole, and nothing like it.
      ['a<base href=//evil.example/>b', 'ab'],
      ['<BASE HREF="https://evil.example/">c', 'c'],
      ['<base/href=x>', ''],
      ['<basefont size=3>', '<basefont size=3>'],
      ['<p title="<base href=x>">', '<p title="<base href=x>">'],
    ];
    for (const [input, output] of cases) expect(withoutPolicyTriggers(input), input).toBe(output);
  });

  it('takes a megabyte of unclosed tags, quotes or styles in one pass (a tag ends at its ">", or the text does)', () => {
    expect(withoutPolicyTriggers('<a'.repeat(500_000))).toBe('<a'.repeat(500_000));
    expect(withoutPolicyTriggers('<style'.repeat(200_000))).toBe('');
    expect(withoutPolicyTriggers(`<p ${'x'.repeat(1_000_000)} style=`)).toBe(`<p ${'x'.repeat(1_000_000)}`);
    expect(withoutPolicyTriggers('<p title="'.repeat(100_000))).toBe('<p title="'.repeat(100_000));
    expect(withoutPolicyTriggers('<p a=1 '.repeat(100_000) + '>')).toBe('<p a=1 '.repeat(100_000) + '>');
    expect(withoutPolicyTriggers('<i onx=1 '.repeat(100_000) + '>')).not.toContain('onx');
  });
});

describe('live events (live.ts)', () => {
  const PUSH = { repo_id: 'acme', sha: 'a1', author: 'Bob', email: 'bob@example.com', time: '2026-05-17T10:00:00Z', message: 'm', paths: [{ path: 'x.md', status: 'modified' }] };

  it('reads a push event, keeping only what the wire has; anything else is no push', () => {
    expect(pushEventOf({ ...PUSH, more: 3, merged: ['x.md', 5], extra: '<b>' })).toEqual({ ...PUSH, more: 3, merged: ['x.md'] });
    expect(pushEventOf({ ...PUSH, paths: [{ path: 'x.md', status: 'renamed' }] })).toBeNull();
    expect(pushEventOf({ ...PUSH, sha: 1 })).toBeNull();
    expect(pushEventOf([PUSH])).toBeNull();
    expect(memberEventOf({ repo_id: 'acme', user_id: 'u', email: 'e', change: 'role', role: 'owner' })).toEqual({ repo_id: 'acme', user_id: 'u', email: 'e', change: 'role', role: 'owner' });
    expect(memberEventOf({ repo_id: 'acme', user_id: 'u', email: 'e', change: 'left' })).toBeNull();
  });

  it('waits longer after each failed attempt, up to the cap', () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffMs(n, () => 1))).toEqual([1000, 2000, 4000, 8000, MAX_BACKOFF_MS]);
    expect(backoffMs(0, () => 0)).toBe(500);
    expect(backoffMs(40, () => 0)).toBe(MAX_BACKOFF_MS / 2);
  });

  it('names authors once, and finds the changes after the version shown', () => {
    expect(nameList([])).toBe('');
    expect(nameList(['Bob', 'Bob'])).toBe('Bob');
    expect(nameList(['Bob', 'Carol', 'Bob', 'Dan'])).toBe('Bob, Carol and Dan');
    const changes = [{ sha: 'a' }, { sha: 'b' }, { sha: 'c' }];
    expect(changesSince(changes, 'b')).toEqual([{ sha: 'c' }]);
    expect(changesSince(changes, 'c')).toEqual([]);
    expect(changesSince(changes, 'zz')).toEqual(changes);
    expect(changesSince(changes, null)).toEqual(changes);
  });
});
