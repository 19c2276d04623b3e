/**
 * Migration 0017 (activity gains `member`) on a database that already has a feed: a real libSQL file brought
 * to 0016 and filled, then migrated as a server start does. Every row stays as it was (ids included, so the
 * feed's order and pruning are unchanged), `member` rows are accepted, other actions still refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'libsql';
import { LibsqlDatabase } from '../lib/runtime/node/libsql.ts';
import { loadMigrations, openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { migrate } from '../lib/db/migrate.ts';
import { Activity } from '../lib/db/activity.ts';
import { ManualClock } from '../lib/util/clock.ts';
import { tempDir } from './helpers/env.ts';

let scratch: { path: string; cleanup: () => Promise<void> } | undefined;
afterEach(async () => {
  await scratch?.cleanup();
  scratch = undefined;
});

const ROWS = 'SELECT id, repo_id, user_id, email, action, detail, created_at, commit_sha FROM activity ORDER BY id';

describe('migration 0017_activity_member', () => {
  it('keeps every row of the feed with its id, and takes member rows', async () => {
    scratch = await tempDir('kr-migrate-');
    const file = join(scratch.path, 'service.db');
    const all = await loadMigrations();
    expect(all.at(-1)).toMatchObject({ version: 17, name: 'activity_member' });

    const old = new LibsqlDatabase(new Database(file));
    await migrate(old, all.filter((m) => m.version <= 16), 1);
    // Ids with a gap (rows pruned before), the three actions 0016 knew, a commit and a detail.
    await old.batch([
      { sql: "INSERT INTO activity (id, repo_id, user_id, email, action, detail, created_at, commit_sha) VALUES (3, 'kb', 'u1', 'a@x', 'push', '{\"paths\":[\"a.md\"]}', 100, ?)", args: ['c'.repeat(40)] },
      { sql: "INSERT INTO activity (id, repo_id, user_id, email, action, detail, created_at, commit_sha) VALUES (7, 'kb', 'u2', 'b@x', 'pull', NULL, 101, NULL)" },
      { sql: "INSERT INTO activity (id, repo_id, user_id, email, action, detail, created_at, commit_sha) VALUES (8, 'other', 'u1', 'a@x', 'import', '{\"commits\":2}', 102, NULL)" },
    ]);
    await expect(old.run("INSERT INTO activity (repo_id, user_id, email, action, created_at) VALUES ('kb', 'u1', 'a@x', 'member', 1)")).rejects.toThrow(/CHECK/);
    const before = await old.all(ROWS);
    await old.close();

    // A server start applies what is pending: 0017 alone.
    const db = await openDatabaseFile(file, 2);
    try {
      expect(await db.all(ROWS)).toEqual(before);
      expect((await db.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map((r) => Number(r.version))).toEqual(all.map((m) => m.version));
      expect(await db.all("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'activity' AND sql IS NOT NULL ORDER BY name")).toEqual([
        { name: 'activity_feed' },
        { name: 'activity_member' },
        { name: 'activity_repo' },
      ]);
      await expect(db.run("INSERT INTO activity (repo_id, user_id, email, action, created_at) VALUES ('kb', 'u1', 'a@x', 'bogus', 1)")).rejects.toThrow(/CHECK/);

      const clock = new ManualClock(200_000);
      const activity = new Activity(db, clock);
      await activity.record('kb', { userId: 'u1', email: 'a@x' }, 'member', { user_id: 'u3', email: 'c@x', change: 'joined', role: 'member' });
      // New ids continue after the highest ever given (AUTOINCREMENT's counter was copied with the rows).
      expect(await db.all("SELECT id, action FROM activity WHERE repo_id = 'kb' ORDER BY id")).toEqual([
        { id: 3, action: 'push' },
        { id: 7, action: 'pull' },
        { id: 9, action: 'member' },
      ]);
      expect(await activity.list('kb', 10, 0)).toEqual({
        events: [
          { user_id: 'u2', email: 'b@x', action: 'pull', created_at: 101 },
          { user_id: 'u1', email: 'a@x', action: 'push', detail: { paths: ['a.md'] }, created_at: 100, sha: 'c'.repeat(40) },
        ],
        total: 2,
      });
      expect((await activity.list('kb', 10, 0, ['member'])).events).toEqual([
        { user_id: 'u1', email: 'a@x', action: 'member', detail: { user_id: 'u3', email: 'c@x', change: 'joined', role: 'member' }, created_at: 200 },
      ]);
    } finally {
      await db.close();
    }
  });

  it("a push's prune and the default feed walk their own class's index; a member row's prune and ?actions=member theirs", async () => {
    scratch = await tempDir('kr-migrate-');
    const db = await openDatabaseFile(join(scratch.path, 'service.db'), 2);
    try {
      const activity = new Activity(db, new ManualClock(0));
      const me = { userId: 'u1', email: 'a@x' };
      // Rows of both classes in two repositories, so that the planner has others to walk if it would.
      for (const repo of ['kb', 'other']) {
        for (let i = 0; i < 20; i++) await activity.record(repo, me, i % 4 === 0 ? 'member' : 'push', { n: i });
      }
      await db.run('ANALYZE');
      const plan = async (stmt: { sql: string; args?: unknown[] }) =>
        (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${stmt.sql}`, (stmt.args ?? []) as never)).map((r) => r.detail);
      const [, pushPrune] = activity.stmts('kb', me, 'push', { paths: ['a.md'] });
      const [, memberPrune] = activity.stmts('kb', me, 'member', { change: 'joined' });
      for (const p of await plan(pushPrune!)) if (p.startsWith('SEARCH')) expect(p).toMatch(/USING (COVERING )?INDEX activity_feed \(repo_id=\?/);
      for (const p of await plan(memberPrune!)) if (p.startsWith('SEARCH')) expect(p).toMatch(/USING (COVERING )?INDEX activity_member \(repo_id=\?/);
      // The list's own statements, as it sends them (its `get` reads through `all`).
      const seen: Array<{ sql: string; args: unknown[] }> = [];
      const rawAll = db.all.bind(db);
      db.all = (async (sql: string, args: unknown[] = []) => (seen.push({ sql, args }), rawAll(sql, args as never))) as typeof db.all;
      expect((await activity.list('kb', 10, 0)).total).toBe(15);
      expect((await activity.list('kb', 10, 0, ['member'])).total).toBe(5);
      db.all = rawAll;
      expect(seen).toHaveLength(4);
      for (const [i, s] of seen.entries()) {
        const index = i < 2 ? 'activity_feed' : 'activity_member';
        expect(await plan(s)).toEqual([expect.stringMatching(new RegExp(`^SEARCH activity USING (COVERING )?INDEX ${index} \\(repo_id=\\?\\)$`))]);
      }
    } finally {
      await db.close();
    }
  });
});
