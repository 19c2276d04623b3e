import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadMigrations, openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { DoSqlDatabase } from '../lib/runtime/workers/do-sql.ts';
import { DoFs } from '../lib/runtime/workers/store-fs.ts';
import { migrate } from '../lib/db/migrate.ts';
import type { SqlDatabase, Stmt } from '../lib/db/sql.ts';
import { GitStore } from '../lib/git/store.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { fakeDoStorage } from './helpers/do-storage.ts';
import { tempDir } from './helpers/env.ts';

/**
 * A committed push always has its event and its webhook deliveries: they are written in the transaction that
 * records its commit in the index (the server's database on Node, the repository object's SQL on Workers),
 * never in a write of their own before or after it. The database is watched: every batch is recorded, and
 * once the commit's batch has gone in, every later write fails (as a database that goes away right after
 * the commit would). The push still lands, and its event and deliveries are there. Both backends run the
 * same RepoStore: libSQL on a file, and a Durable Object's SQLite (test/helpers/do-storage.ts) with the
 * object's git files in it.
 */

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `db`, with every batch recorded and every write after the one recording a commit refused while `failAfterCommit`. */
function watched(db: SqlDatabase) {
  const batches: Stmt[][] = [];
  const state = { failAfterCommit: false, committed: false, refused: 0 };
  const refuse = () => {
    if (state.failAfterCommit && state.committed) {
      state.refused++;
      throw new Error('database went away');
    }
  };
  const wrapped: SqlDatabase = {
    all: (sql, args) => db.all(sql, args),
    get: (sql, args) => db.get(sql, args),
    run: async (sql, args) => {
      refuse();
      return db.run(sql, args);
    },
    batch: async (stmts, opts) => {
      refuse();
      batches.push(stmts);
      const out = await db.batch(stmts, opts);
      if (stmts.some((s) => s.sql.startsWith('INSERT INTO git_commits'))) state.committed = true;
      return out;
    },
    close: () => db.close(),
  };
  return { db: wrapped, inner: db, batches, state };
}

async function nodeBackend() {
  const dir = await tempDir('kr-push-event-');
  const db = await openDatabaseFile(join(dir.path, 'kr.db'), Math.floor(Date.now() / 1000));
  cleanup.push(async () => {
    await db.close();
    await dir.cleanup();
  });
  return { db, git: new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') }) };
}

async function workersBackend() {
  const storage = fakeDoStorage();
  cleanup.push(() => storage.close());
  const db = new DoSqlDatabase(storage);
  await migrate(db, await loadMigrations(), Math.floor(Date.now() / 1000));
  return { db, git: new GitStore({ fs: new DoFs(storage).storeFs(), root: '/repos' }) };
}

const enc = (s: string) => new TextEncoder().encode(s);

for (const [name, open] of [
  ['node (libSQL)', nodeBackend],
  ['workers (the repository object\'s SQL)', workersBackend],
] as const) {
  describe(`${name}: a push's event and deliveries`, () => {
    it('go in with the commit\'s own batch: every write after it failing leaves the push with both', async () => {
      const backend = await open();
      const w = watched(backend.db);
      const store = new RepoStore(backend.git, new PathIndex(w.db), { now: () => Date.now() });
      await store.create('r');
      const hook = await store.webhooks.create('r', 'https://hooks.example.test/kr', ['push']);
      expect(hook).not.toBeNull();
      await store.commitFiles('r', [{ path: 'seed.md', content: enc('seed\n') }], { name: 'A', email: 'a@example.test' }, 'seed');

      w.batches.length = 0;
      w.state.committed = false;
      w.state.failAfterCommit = true;
      const result = await store.commitFiles('r', [{ path: 'a.md', content: enc('a\n') }], { name: 'A', email: 'a@example.test' }, 'add a');
      w.state.failAfterCommit = false;
      expect(result.commit).not.toBeNull();
      const sha = result.commit!.sha;

      // The batch that recorded the commit holds its event and its deliveries.
      const commitBatch = w.batches.find((b) => b.some((s) => s.sql.startsWith('INSERT INTO git_commits')));
      expect(commitBatch).toBeDefined();
      const kinds = commitBatch!.map((s) => s.sql.split(/\s+/).slice(0, 3).join(' '));
      expect(kinds).toContain('INSERT INTO repo_events');
      expect(kinds).toContain('INSERT INTO webhook_deliveries');

      // And they are there, naming the commit, though every write after the commit failed (the release
      // among them: the delivery is still held, for releaseHeld).
      expect(w.state.refused).toBeGreaterThan(0);
      const events = await w.inner.all<{ kind: string; commit_sha: string }>('SELECT kind, commit_sha FROM repo_events WHERE repo_id = ? ORDER BY id', ['r']);
      expect(events.map((e) => [e.kind, e.commit_sha])).toEqual([
        ['push', expect.stringMatching(/^[0-9a-f]{40}$/)],
        ['push', sha],
      ]);
      const deliveries = await w.inner.all<{ event: string; commit_sha: string; webhook_id: string }>(
        'SELECT event, commit_sha, webhook_id FROM webhook_deliveries WHERE repo_id = ? AND commit_sha = ?',
        ['r', sha],
      );
      expect(deliveries).toEqual([{ event: 'push', commit_sha: sha, webhook_id: hook!.webhook.id }]);
      expect(await store.head('r')).toMatchObject({ sha });
    });
  });
}
