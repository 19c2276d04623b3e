import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { GitStore } from '../lib/git/store.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore, SEARCH_DELAY_MS, type PushFile } from '../lib/repo/repo-store.ts';
import { tempDir } from './helpers/env.ts';

/**
 * A push records its commit and head rows in its own transaction, but leaves its pages' full-text rows
 * for later (RepoStore.derivedLater): they are made within SEARCH_DELAY_MS, for every push of that time at
 * once, or at once when a search of the repository comes first, or when the server stops. A process that
 * dies with rows due leaves them to the next start's sync. Real libSQL and git store on disk.
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const enc = (s: string) => new TextEncoder().encode(s);
const author = { name: 'A', email: 'a@example.test' };
const opts = { limit: 50, offset: 0 };

async function setup() {
  const dir = await tempDir('kr-search-later-');
  const db = await openDatabaseFile(join(dir.path, 'kr.db'), Math.floor(Date.now() / 1000));
  cleanup.push(async () => {
    await db.close();
    await dir.cleanup();
  });
  const store = () => new RepoStore(new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') }), new PathIndex(db), { now: () => Date.now() });
  const repos = store();
  await repos.create('r');
  const push = (r: RepoStore, files: Array<{ path: string; content: string | null }>) =>
    r.commitFiles('r', files.map((f): PushFile => ({ path: f.path, content: f.content === null ? null : enc(f.content) })), author, 'm');
  return { db, repos, store, push: (files: Array<{ path: string; content: string | null }>) => push(repos, files), pushWith: push };
}

/** The full-text rows against head: pages at head, rows, FTS rows, and head pages whose row is missing or old. */
async function rows(db: Database) {
  const r = await db.all<Record<string, unknown>>(
    `SELECT (SELECT count(*) FROM git_head) AS head, (SELECT count(*) FROM search_docs) AS docs, (SELECT count(*) FROM search_fts) AS fts,
            (SELECT count(*) FROM git_head h LEFT JOIN search_docs d ON d.repo_id = h.repo_id AND d.path = h.path
              WHERE d.blob IS NULL OR d.blob <> h.blob) AS stale`,
  );
  const x = r[0]!;
  return { head: Number(x.head), docs: Number(x.docs), fts: Number(x.fts), stale: Number(x.stale) };
}

const paths = (page: { hits: Array<{ path: string }> }) => page.hits.map((h) => h.path).sort();

describe('full-text rows made after the push', () => {
  it('a search right after pushes finds every page they wrote and none they deleted', async () => {
    const { repos, push } = await setup();
    await push([{ path: 'a.md', content: 'osprey over the lake' }, { path: 'b.md', content: 'osprey nest' }]);
    await push([{ path: 'b.md', content: null }, { path: 'c.md', content: 'an osprey again' }]);
    expect(paths(await repos.search('r', 'osprey', opts))).toEqual(['a.md', 'c.md']);
    await push([{ path: 'a.md', content: 'heron now' }]);
    expect(paths(await repos.search('r', 'osprey', opts))).toEqual(['c.md']);
    expect(paths(await repos.search('r', 'heron', opts))).toEqual(['a.md']);
  });

  it('are made within SEARCH_DELAY_MS without a search, once for a page pushed many times meanwhile', async () => {
    const { db, push } = await setup();
    await push([{ path: 'a.md', content: 'v0' }, { path: 'b.md', content: 'w0' }]);
    for (let i = 1; i <= 20; i++) await push([{ path: 'a.md', content: `v${i}` }]);
    // Left for later: the head rows moved, the full-text rows did not (on a slow machine, a delay that ran out
    // during the pushes has already made some of them).
    expect((await rows(db)).stale).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, SEARCH_DELAY_MS + 300));
    for (let i = 0; i < 100 && (await rows(db)).stale > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await rows(db)).toEqual({ head: 2, docs: 2, fts: 2, stale: 0 });
  });

  it('searchSettled (a graceful stop) makes every repository level at once', async () => {
    const { db, repos, push } = await setup();
    await repos.create('s');
    await push([{ path: 'a.md', content: 'grebe' }]);
    await repos.commitFiles('s', [{ path: 'x.md', content: enc('grebe too') }], author, 'm');
    expect((await rows(db)).stale).toBe(2);
    await repos.searchSettled();
    expect(await rows(db)).toEqual({ head: 2, docs: 2, fts: 2, stale: 0 });
  });

  it('rows a process left due (it died before making them) are made by the next one before it searches', async () => {
    const { db, push, store } = await setup();
    await push([{ path: 'a.md', content: 'kittiwake cliffs' }, { path: 'b.md', content: 'fulmar' }]);
    expect((await rows(db)).stale).toBe(2);
    // Another process over the same data: it knows nothing of the first one's due work.
    const next = store();
    expect(paths(await next.search('r', 'kittiwake', opts))).toEqual(['a.md']);
    expect(await rows(db)).toEqual({ head: 2, docs: 2, fts: 2, stale: 0 });
  });

  it('a search waits for rows being made when it starts, and for those of pushes that landed meanwhile', async () => {
    const { repos, push } = await setup();
    await push([{ path: 'a.md', content: 'skua' }]);
    // The rows' run waits behind the repository's writer; a push queued behind it lands before the search.
    let release!: () => void;
    const busy = repos.git.withLock('r', () => new Promise<void>((r) => (release = r)));
    const searching = repos.search('r', 'skua', opts);
    await new Promise((r) => setTimeout(r, 20));
    release();
    await busy;
    await push([{ path: 'b.md', content: 'skua chick' }]);
    const found = await searching;
    expect(paths(found).includes('a.md')).toBe(true);
    expect(paths(await repos.search('r', 'skua', opts))).toEqual(['a.md', 'b.md']);
  });

  it('more pages than are remembered one by one (2,000) are caught up by looking at the whole repository', async () => {
    const { db, repos, push } = await setup();
    await push(Array.from({ length: 2_100 }, (_, i) => ({ path: `p/${String(i).padStart(4, '0')}.md`, content: `puffin ${i}` })));
    expect((await rows(db)).stale).toBe(2_100);
    expect((await repos.search('r', 'puffin', { limit: 5, offset: 0 })).total).toBe(2_100);
    expect(await rows(db)).toEqual({ head: 2_100, docs: 2_100, fts: 2_100, stale: 0 });
  });

  it('a run that fails leaves the repository to be synced on its next access, which makes the rows', async () => {
    const { db, repos, push } = await setup();
    await push([{ path: 'a.md', content: 'guillemot' }]);
    const real = repos.index.catchUpDerived.bind(repos.index);
    let failures = 0;
    repos.index.catchUpDerived = async (...args: Parameters<typeof real>) => {
      if (failures++ === 0) throw new Error('EIO: i/o error, write');
      return real(...args);
    };
    // The run fails; the search then syncs the repository (its full catch-up) before it reads.
    expect(paths(await repos.search('r', 'guillemot', opts))).toEqual(['a.md']);
    expect(failures).toBe(1);
    expect(await rows(db)).toEqual({ head: 1, docs: 1, fts: 1, stale: 0 });
  });

  it('a page written and deleted before its rows are made leaves no row behind', async () => {
    const { db, repos, push } = await setup();
    await push([{ path: 'a.md', content: 'shag' }, { path: 'b.md', content: 'cormorant' }]);
    await repos.searchSettled();
    await push([{ path: 'c.md', content: 'shearwater' }]);
    await push([{ path: 'c.md', content: null }, { path: 'a.md', content: null }]);
    await repos.searchSettled();
    expect(await rows(db)).toEqual({ head: 1, docs: 1, fts: 1, stale: 0 });
    for (const word of ['shag', 'shearwater']) expect(paths(await repos.search('r', word, opts))).toEqual([]);
    expect(paths(await repos.search('r', 'cormorant', opts))).toEqual(['b.md']);
  });
});
