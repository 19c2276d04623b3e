/**
 * The plans of the index statements a big push and a full pull run (lib/repo/path-index.ts), through
 * EXPLAIN QUERY PLAN of the very statements they send: each reaches its rows by an index on the repository and
 * the keys asked for, never by walking every page of the repository (the cost of a push of 10,000 pages must not
 * grow with the pages already there). Real libSQL file, with the numbered migrations.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { PathIndex } from '../lib/repo/path-index.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import type { SqlArgs } from '../lib/db/sql.ts';
import { tempDir } from './helpers/env.ts';

type Row = Record<string, unknown>;

let dir: { path: string; cleanup: () => Promise<void> };
let db: Database;
let seen: Array<{ sql: string; args: SqlArgs }>;
let rawAll: Database['all'];
beforeEach(async () => {
  dir = await tempDir('kr-index-plans-');
  db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
  // Some rows, so that the planner has a repository to walk if it would.
  await db.batch(
    Array.from({ length: 200 }, (_, i) => ({
      sql: 'INSERT INTO git_head (repo_id, path, blob, seq, path_fold) VALUES (?, ?, ?, 1, ?)',
      args: ['r', `p/${i}.md`, 'b'.repeat(40), `p/${i}.md`],
    })),
  );
  await db.batch([{ sql: "INSERT INTO git_commits (repo_id, seq, sha, author, email, time, message) VALUES ('r', 1, ?, 'a', 'a@b.c', 0, 'm')", args: ['c'.repeat(40)] }]);
  seen = [];
  rawAll = db.all.bind(db);
  db.all = async <T,>(sql: string, args: SqlArgs = []) => {
    seen.push({ sql, args });
    return rawAll<T>(sql, args);
  };
});
afterEach(async () => {
  await db.close();
  await dir.cleanup();
});

const planOf = async (sql: string, args: SqlArgs) => (await rawAll<Row>(`EXPLAIN QUERY PLAN ${sql}`, args)).map((r) => String(r.detail));

describe('index statements reach their rows by key', () => {
  it('case twins of the pushed paths: by the folded-path index, one lookup per key', async () => {
    const index = new PathIndex(db, { search: false });
    const twins = await index.caseTwins('r', ['p/1.md', 'p/2.md', 'q/none.md']);
    expect([...twins]).toEqual([
      ['p/1.md', ['p/1.md']],
      ['p/2.md', ['p/2.md']],
    ]);
    expect(seen).toHaveLength(1);
    const plan = await planOf(seen[0]!.sql, seen[0]!.args);
    expect(plan.join('\n')).toMatch(/^SEARCH git_head USING INDEX git_head_fold \(repo_id=\? AND path_fold=\?\)/);
  });

  it("a full pull's batch at head: a range of git_head's primary key, the commits by key", async () => {
    const index = new PathIndex(db, { search: false });
    const batch = await index.pullBatch('r', 1, 'p/1', 5);
    expect(batch.present.map((p) => p.path)).toEqual(['p/1.md', 'p/10.md', 'p/100.md', 'p/101.md', 'p/102.md']);
    expect(seen).toHaveLength(2);
    for (const { sql, args } of seen) {
      for (const step of await planOf(sql, args)) {
        // (The head: the repository's last commit, the newest end of its key.)
        expect(step, sql).toMatch(
          /^(?:SEARCH git_head USING INDEX sqlite_autoindex_git_head_1 \(repo_id=\? AND path>\?\)|SEARCH c USING INDEX sqlite_autoindex_git_commits_1 \(repo_id=\? AND seq=\?\)|SCALAR SUBQUERY \d+|SEARCH git_commits USING COVERING INDEX sqlite_autoindex_git_commits_1 \(repo_id=\?\))$/,
        );
      }
    }
  });
});
