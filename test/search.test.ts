/**
 * Full-text search: the query language (lib/core/search-query.ts), what a page contributes to the index
 * (lib/search/document.ts), the snippet's shape, and — on the Node build — an index rebuilt from git after
 * the database is lost, made for a database from before the search tables, and caught up after falling
 * behind. The HTTP cases shared with the Workers build are test/search-cases.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { copyFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { parseQuery, MAX_PREFIXES, MAX_WORDS, MIN_PREFIX_CHARS, SearchQueryError } from '../lib/core/search-query.ts';
import { toHttpError } from '../lib/core/errors.ts';
import { searchDocument, tagKey, tagNeedle } from '../lib/search/document.ts';
import { shapeSnippet, scoreOf } from '../lib/search/results.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { searchCases } from './search-cases.ts';
import { runKr } from './helpers/cli.ts';

const enc = new TextEncoder();

describe('query language → FTS5 MATCH', () => {
  const match = (q: string) => parseQuery(q).match;

  it('words, phrases, prefixes and exclusions become FTS5 strings joined by AND / NOT', () => {
    expect(match('kestrel')).toBe('"kestrel"');
    expect(match('  kestrel   falcon ')).toBe('"kestrel" AND "falcon"');
    expect(match('"blue heron"')).toBe('"blue heron"');
    expect(match('migr*')).toBe('"migr"*');
    expect(match('"blue her"*')).toBe('"blue her"*');
    expect(match('falcon -peregrine -"small falcon" -lan*')).toBe('("falcon") NOT ("peregrine" OR "small falcon" OR "lan"*)');
    expect(match('a"b c"')).toBe('"a" AND "b c"');
  });

  it('FTS5 syntax typed by the user stays text: operators, column filters, NEAR, ^, +, parentheses', () => {
    expect(match('a OR b NOT c')).toBe('"a" AND "OR" AND "b" AND "NOT" AND "c"');
    expect(match('NEAR(a b)')).toBe('"NEAR(a" AND "b)"');
    expect(match('title:secret')).toBe('"title:secret"');
    expect(match('{title body}:x')).toBe('"{title" AND "body}:x"');
    expect(match('^start +plus')).toBe('"^start" AND "+plus"');
    expect(match('xx*yyy*')).toBe('"xx*yyy"*');
    // Nothing but FTS strings, AND, NOT, OR, parentheses and * outside the strings.
    for (const q of ['a) OR (b', "' OR 1=1 --", 'rank MATCH x', 'col : "x" *']) {
      const m = match(q);
      const outside = m.replace(/"(?:[^"]|"")*"/g, '');
      expect(outside, q).toMatch(/^(?:\s|AND|OR|NOT|\(|\)|\*)*$/);
    }
  });

  it('a quote inside a phrase cannot close it; control characters separate words', () => {
    expect(match('"a b" c')).toBe('"a b" AND "c"');
    expect(match('a\u0000b')).toBe('"a" AND "b"');
    expect(parseQuery('e\u0301te\u0301').terms[0]!.text).toBe('été');
  });

  it('refuses what cannot be searched', () => {
    const refusal = (q: string | undefined) => {
      try {
        parseQuery(q);
      } catch (e) {
        expect(e).toBeInstanceOf(SearchQueryError);
        expect(toHttpError(e)?.status).toBe(400);
        return (e as Error).message;
      }
      return null;
    };
    expect(refusal(undefined)).toBe('q required');
    expect(refusal('')).toBe('q required');
    expect(refusal(' \t\n')).toBe('q required');
    expect(refusal('"a')).toBe('invalid query: unbalanced quote');
    expect(refusal('a "b" "')).toBe('invalid query: unbalanced quote');
    expect(refusal('*')).toBe('invalid query: nothing to search for (only operators or punctuation)');
    expect(refusal('- * "" :: ()')).toBe('invalid query: nothing to search for (only operators or punctuation)');
    expect(refusal('-a -b')).toBe('invalid query: only exclusions; add a word to search for');
    expect(refusal('x'.repeat(200))).toBeNull();
    expect(refusal('x'.repeat(201))).toBe('invalid query: a term is longer than 200 characters');
    expect(refusal(`"${'y '.repeat(150)}"`)).toBe('invalid query: a term is longer than 200 characters');
  });

  it('keeps every query within its cost budget: words, prefixes, prefix length', () => {
    const refusal = (q: string) => {
      try {
        parseQuery(q);
        return null;
      } catch (e) {
        expect(e).toBeInstanceOf(SearchQueryError);
        return (e as Error).message;
      }
    };
    expect([MAX_WORDS, MAX_PREFIXES, MIN_PREFIX_CHARS]).toEqual([16, 4, 3]);
    const words = 'invalid query: more than 16 words';
    expect(refusal('w '.repeat(16))).toBeNull();
    expect(refusal('w '.repeat(17))).toBe(words);
    expect(refusal('a '.repeat(5000))).toBe(words);
    // A phrase's words count one each, as do exclusions and a word's parts (`foo-bar` is two).
    expect(refusal(`"${'y '.repeat(16)}"`)).toBeNull();
    expect(refusal(`"${'y '.repeat(17)}"`)).toBe(words);
    expect(refusal(`${'y '.repeat(8)} "${'z '.repeat(8)}" -extra`)).toBe(words);
    expect(refusal('a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p')).toBeNull();
    expect(refusal('a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q')).toBe(words);
    // Terms with nothing to search for cost nothing: a 10 KB query of stars is read, and has nothing in it.
    expect(refusal('* '.repeat(5000))).toBe('invalid query: nothing to search for (only operators or punctuation)');
    expect(refusal(`${'- '.repeat(100)} word`)).toBeNull();

    const prefixes = 'invalid query: more than 4 prefixes (word*)';
    expect(refusal('abc* bcd* cde* -def*')).toBeNull();
    expect(refusal('abc* bcd* cde* def* efg*')).toBe(prefixes);
    expect(refusal('abc* bcd* "cde fgh"* -def* efg*')).toBe(prefixes);
    const short = 'invalid query: a prefix needs at least 3 letters or digits before *';
    for (const q of ['ab*', 'a*', '-ab*', '"blue he"*', 'abc-d*', 'x*y*', 'ab**']) expect(refusal(q), q).toBe(short);
    for (const q of ['abc*', '"blue her"*', 'été*', '中文字*', '123*', 'abc**']) expect(refusal(q), q).toBeNull();
    // The word count comes first: a long query is refused for its length, whatever its prefixes.
    expect(refusal(`${'w '.repeat(17)} a*`)).toBe(words);
  });
});

describe('a page in the index', () => {
  it('title, type, tags and summary from the frontmatter; headings apart from the body', () => {
    const d = searchDocument(
      'wiki/concepts/x.md',
      enc.encode('---\ntitle: Cache\ntags: [perf, 3, perf]\nsummary: How we cache\n---\n# Top\nintro\n## Eviction\nLRU\n### Deep\nmore\n'),
    );
    expect(d).toEqual({ title: 'Cache', type: 'concept', tags: ['perf', '3'], summary: 'How we cache', headings: 'Top\nEviction', body: 'intro\nLRU\n### Deep\nmore' });
    expect(searchDocument('raw/sessions/s', enc.encode('---\ntype: analysis\ntags: one\n---\nx')).type).toBe('analysis');
    expect(searchDocument('raw/sessions/s', enc.encode('x'))).toMatchObject({ title: null, type: 'source', tags: [] });
    expect(searchDocument('notes/n.md', enc.encode('---\n: [bad\n---\n## H\nx')).type).toBeNull();
  });

  it('control characters (the snippet marks) never reach the index; tags are matched exactly', () => {
    const d = searchDocument('a.md', enc.encode('## A\u0002B\nx\u0003y\u0000z'));
    expect(d.body + d.headings).not.toMatch(/[\u0000-\u0008]/);
    expect(tagKey(['a', 'b c'])).toBe('\u001fa\u001fb c\u001f');
    expect(tagKey([])).toBeNull();
    expect(tagKey(['ab'])!.includes(tagNeedle('a'))).toBe(false);
    expect(tagKey(['a', 'ab'])!.includes(tagNeedle(' a '))).toBe(true);
  });

  it('snippets: marks become « », the page\'s own « » become ‹ ›, whitespace folds; scores are -bm25', () => {
    expect(shapeSnippet('…said «hi»\n\nto the \u0002wren\u0003 and…')).toBe('…said ‹hi› to the «wren» and…');
    expect(scoreOf(-1.234567891)).toBe(1.23457);
    expect(scoreOf(0)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Node: the index is derived, rebuilt from git
// ---------------------------------------------------------------------------------------------------------

describe('node: the search index is rebuilt from git', () => {
  let srv: TestServer | undefined;
  let root: { path: string; cleanup: () => Promise<void> } | undefined;
  afterEach(async () => {
    await srv?.stop();
    srv = undefined;
    await root?.cleanup();
    root = undefined;
  });

  const push = async (files: Array<{ path: string; content?: string; delete?: boolean }>) => {
    const r = await srv!.api('/v1/repos/kb/sync/push', { method: 'POST', json: { files } });
    expect(r.status).toBe(200);
    return ((await r.json()) as { new_head: string }).new_head;
  };
  const hits = async (q: string) => {
    const r = await srv!.api(`/v1/repos/kb/search?q=${encodeURIComponent(q)}`);
    expect(r.status).toBe(200);
    return ((await r.json()) as { results: Array<{ path: string; sha: string }> }).results.map((x) => `${x.path}@${x.sha.slice(0, 7)}`);
  };
  const dbPath = () => join(root!.path, 'service.db');
  const searchFile = () => join(root!.path, 'search', 'kb.db');
  const restart = async () => {
    await srv!.stop();
    srv = await startTestServer({ dataRoot: root!.path });
  };
  /**
   * The repository's file (search/kb.db) holds a row for exactly the pages at head, each from its blob at
   * head, is level with head, and service.db holds no full-text row.
   */
  const consistent = async () => {
    const head = await srv!.deps.db.all<{ path: string; blob: string }>("SELECT path, blob FROM git_head WHERE repo_id = 'kb' ORDER BY path");
    const last = await srv!.deps.db.get<{ seq: number; sha: string }>("SELECT seq, sha FROM git_commits WHERE repo_id = 'kb' ORDER BY seq DESC LIMIT 1");
    const c = createClient({ url: `file:${searchFile()}` });
    try {
      const docs = (await c.execute('SELECT repo_id, path, blob FROM search_docs ORDER BY path')).rows.map((r) => ({ ...r }));
      expect(docs).toEqual(head.map((h) => ({ repo_id: 'kb', path: h.path, blob: h.blob })));
      expect(Number((await c.execute('SELECT count(*) AS n FROM search_fts')).rows[0]!.n)).toBe(head.length);
      expect((await c.execute('SELECT repo_id, seq, sha FROM search_level')).rows.map((r) => ({ ...r }))).toEqual([{ repo_id: 'kb', ...last }]);
    } finally {
      c.close();
    }
    expect(await srv!.deps.db.get("SELECT 1 AS x FROM sqlite_master WHERE name = 'search_fts'")).toBeUndefined();
    expect(await srv!.deps.db.all('SELECT * FROM search_docs')).toEqual([]);
  };

  it('after service.db is deleted: a restart on the same data root finds every page again, with its sha', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    const first = await push([
      { path: 'a.md', content: '## Kestrel\nhovering' },
      { path: 'b.md', content: 'a gone page about kestrels' },
      { path: 'c.md', content: 'kestrel in the body' },
    ]);
    const second = await push([{ path: 'b.md', delete: true }, { path: 'd.md', content: '---\ntitle: Kestrel\n---\nnothing else' }]);
    const before = await hits('kestrel');
    expect(before).toEqual([`d.md@${second.slice(0, 7)}`, `a.md@${first.slice(0, 7)}`, `c.md@${first.slice(0, 7)}`]);
    await srv.stop();
    for (const f of ['service.db', 'service.db-wal', 'service.db-shm']) await rm(join(root.path, f), { force: true });
    srv = await startTestServer({ dataRoot: root.path });
    expect(await hits('kestrel')).toEqual(before);
    expect(await hits('gone')).toEqual([]);
    await consistent();
    expect(srv.logs.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it('a server that kept the rows in service.db: they are dropped there at start, and the file is filled', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: '## Plover\nshore' }, { path: 'b.md', content: 'plover in passing' }]);
    expect(await hits('plover')).toHaveLength(2);
    await srv.stop();
    // service.db as such a server left it: the FTS5 table and rows in search_docs; no file of the repository's.
    for (const f of ['', '-wal', '-shm']) await rm(`${searchFile()}${f}`, { force: true });
    const c = createClient({ url: `file:${dbPath()}` });
    await c.batch(
      [
        "CREATE VIRTUAL TABLE search_fts USING fts5(title, tags, summary, headings, body, tokenize = 'unicode61 remove_diacritics 2')",
        "INSERT INTO search_docs (id, repo_id, path, blob) VALUES (1, 'kb', 'a.md', 'old')",
        "INSERT INTO search_fts (rowid, title, tags, summary, headings, body) VALUES (1, '', '', '', 'Plover', 'shore')",
      ],
      'write',
    );
    c.close();
    srv = await startTestServer({ dataRoot: root.path });
    expect((await hits('plover')).map((h) => h.split('@')[0])).toEqual(['a.md', 'b.md']);
    await consistent();
  });

  it('a database from before the search tables (migration 0007): the index is whole again on the first sync', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: '## Plover\nshore' }, { path: 'b.md', content: 'plover in passing' }]);
    await srv.stop();
    // Back to the schema of migration 0006, with the path index itself intact.
    const c = createClient({ url: `file:${dbPath()}` });
    await c.batch(['DROP TABLE search_docs', 'DELETE FROM schema_migrations WHERE version = 7'], 'write');
    c.close();
    for (const f of ['', '-wal', '-shm']) await rm(`${searchFile()}${f}`, { force: true });
    srv = await startTestServer({ dataRoot: root.path });
    expect((await hits('plover')).map((h) => h.split('@')[0])).toEqual(['a.md', 'b.md']);
    await consistent();
  });

  it('a lost full-text table is made again and filled, though search_docs still had its rows', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: '## Grebe\ndives' }]);
    await srv.stop();
    const c = createClient({ url: `file:${searchFile()}` });
    await c.execute('DROP TABLE search_fts');
    expect(Number((await c.execute('SELECT count(*) AS n FROM search_docs')).rows[0]!.n)).toBe(1);
    c.close();
    srv = await startTestServer({ dataRoot: root.path });
    expect((await hits('grebe')).map((h) => h.split('@')[0])).toEqual(['a.md']);
    await consistent();
  });

  it('a deleted search file, or one that is not a database, is made again from git', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    const head = await push([{ path: 'a.md', content: '## Gannet\nplunges' }, { path: 'b.md', content: 'a gannet colony' }]);
    const before = await hits('gannet');
    expect(before).toEqual([`a.md@${head.slice(0, 7)}`, `b.md@${head.slice(0, 7)}`]);
    await srv.stop();
    for (const f of ['', '-wal', '-shm']) await rm(`${searchFile()}${f}`, { force: true });
    srv = await startTestServer({ dataRoot: root.path });
    expect(await hits('gannet')).toEqual(before);
    await consistent();
    await srv.stop();
    for (const f of ['-wal', '-shm']) await rm(`${searchFile()}${f}`, { force: true });
    await writeFile(searchFile(), 'this is not a database, but it is long enough to look like one '.repeat(100));
    srv = await startTestServer({ dataRoot: root.path });
    expect(await hits('gannet')).toEqual(before);
    await consistent();
    expect(srv.logs.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it("dropSearch (a repository deleted) removes the repository's file; the rows come back only from git", async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: '## Puffin\nburrows' }]);
    expect((await hits('puffin')).map((h) => h.split('@')[0])).toEqual(['a.md']);
    await srv.deps.repos.index.dropSearch('kb');
    for (const f of ['', '-wal', '-shm']) expect(existsSync(`${searchFile()}${f}`), f).toBe(false);
    // No thread still reads the old file: a search finds nothing until the rows are made from git again.
    expect(await hits('puffin')).toEqual([]);
    await restart();
    expect((await hits('puffin')).map((h) => h.split('@')[0])).toEqual(['a.md']);
    await consistent();
  });

  it('a search file from an older backup is caught up from the commit it was level with', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: 'albatross' }, { path: 'b.md', content: 'petrel' }, { path: 'c.md', content: 'skua' }]);
    await hits('albatross');
    await srv.stop();
    await copyFile(searchFile(), `${searchFile()}.backup`);
    srv = await startTestServer({ dataRoot: root.path });
    const head = await push([{ path: 'a.md', content: 'cormorant' }, { path: 'b.md', delete: true }, { path: 'd.md', content: 'gannet' }]);
    expect(await hits('cormorant')).toEqual([`a.md@${head.slice(0, 7)}`]);
    await srv.stop();
    for (const f of ['-wal', '-shm']) await rm(`${searchFile()}${f}`, { force: true });
    await copyFile(`${searchFile()}.backup`, searchFile());
    srv = await startTestServer({ dataRoot: root.path });
    expect(await hits('albatross')).toEqual([]);
    expect(await hits('petrel')).toEqual([]);
    expect(await hits('cormorant')).toEqual([`a.md@${head.slice(0, 7)}`]);
    expect(await hits('gannet')).toEqual([`d.md@${head.slice(0, 7)}`]);
    expect((await hits('skua')).map((h) => h.split('@')[0])).toEqual(['c.md']);
    await consistent();
  });

  it('an index left behind git (a database from an older backup) is caught up: new pages in, deleted ones out', async () => {
    root = await tempDir('kr-search-');
    srv = await startTestServer({ dataRoot: root.path });
    await push([{ path: 'a.md', content: 'albatross' }, { path: 'b.md', content: 'petrel' }]);
    await srv.stop();
    // The database as it stands (its write-ahead log included), kept aside.
    const files = ['service.db', 'service.db-wal'];
    const kept = new Set<string>();
    for (const f of files) {
      try {
        await copyFile(join(root.path, f), join(root.path, `backup-${f}`));
        kept.add(f);
      } catch {
        // no log to keep
      }
    }
    srv = await startTestServer({ dataRoot: root.path });
    const head = await push([{ path: 'a.md', content: 'cormorant' }, { path: 'b.md', delete: true }, { path: 'c.md', content: 'gannet' }]);
    await srv.stop();
    for (const f of [...files, 'service.db-shm']) await rm(join(root.path, f), { force: true });
    for (const f of kept) await copyFile(join(root.path, `backup-${f}`), join(root.path, f));
    srv = await startTestServer({ dataRoot: root.path });
    expect(await hits('albatross')).toEqual([]);
    expect(await hits('petrel')).toEqual([]);
    expect(await hits('cormorant')).toEqual([`a.md@${head.slice(0, 7)}`]);
    expect(await hits('gannet')).toEqual([`c.md@${head.slice(0, 7)}`]);
    await consistent();
    await restart();
    await consistent();
  });
});

describe('kr search (cli/commands/search.ts)', () => {
  let srv: TestServer | undefined;
  let home: { path: string; cleanup: () => Promise<void> } | undefined;
  afterEach(async () => {
    await srv?.stop();
    await home?.cleanup();
    srv = undefined;
    home = undefined;
  });

  it('every repository by default, one with --repo; --type, --tag, --json; bad queries are usage errors', async () => {
    srv = await startTestServer();
    home = await tempDir('kr-search-home-');
    for (const [repo, files] of [
      ['acme', [{ path: 'wiki/concepts/a.md', content: '---\ntitle: Rollout\ntags: [infra]\n---\n## Rollout plan\nsteps' }]],
      ['beta', [{ path: 'b.md', content: 'the rollout, later' }]],
    ] as const) {
      expect((await srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files } })).status).toBe(200);
    }
    const kr = (...args: string[]) => runKr(args, { home: home!.path, cwd: home!.path, env: { NO_COLOR: '1' } });
    expect((await kr('login', '--server', srv.url, '--token', 'test-legacy-key')).code).toBe(0);

    const all = await kr('search', 'rollout');
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^1\. acme\/wiki\/concepts\/a\.md  Rollout  [0-9a-f]{7}\n   «Rollout»\n2\. beta\/b\.md  [0-9a-f]{7}\n/);
    expect(all.stdout).toContain('beta/b.md');
    expect(all.stdout).toContain('1–2 of 2');

    const one = await kr('search', 'rollout', '--repo', 'beta', '--json');
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toEqual({ results: [expect.objectContaining({ repo_id: 'beta', path: 'b.md' })], total: 1 });

    const filtered = await kr('search', 'rollout', '--type', 'concept', '--tag', 'infra', '--json');
    expect((JSON.parse(filtered.stdout) as { total: number }).total).toBe(1);
    const phrase = await kr('search', '--json', '--', '"rollout plan"', '-later');
    expect((JSON.parse(phrase.stdout) as { results: Array<{ path: string }> }).results.map((r) => r.path)).toEqual(['wiki/concepts/a.md']);
    expect((await kr('search', 'nothingmatches')).stdout).toBe('No page matches.\n');

    const bad = await kr('search', '"unbalanced');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('invalid query: unbalanced quote')]);
    expect((await kr('search', 'x', '--limit', '0')).code).toBe(2);
  });
});

searchCases('node');
