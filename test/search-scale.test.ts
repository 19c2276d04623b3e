/**
 * Search at scale on the Node server: a search reads its own repository's full-text rows and
 * nothing else — shown by the plans of the very statements a search runs (EXPLAIN QUERY PLAN through the
 * same connection) and by what the tables they read hold — and it runs off the event loop: `/health` keeps
 * answering while expensive searches run. Real server on port 0, real libSQL files, real worker threads.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { SqlArgs } from '../lib/db/sql.ts';
import type { TextReader } from '../lib/search/fts.ts';
import { startTestServer, type TestServer } from './helpers/env.ts';

type Row = Record<string, unknown>;

let srv: TestServer | undefined;
afterEach(async () => {
  await srv?.stop();
  srv = undefined;
});

const push = async (repo: string, files: Array<{ path: string; content: string }>) => {
  const r = await srv!.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files, message: 'seed' } });
  expect(r.status).toBe(200);
};

/** Every read of full-text rows the server makes from now on: the statement, its arguments, its reader. */
function recordReads(s: TestServer): Array<{ repo: string; sql: string; args: SqlArgs; reader: TextReader }> {
  const seen: Array<{ repo: string; sql: string; args: SqlArgs; reader: TextReader }> = [];
  const text = s.deps.repos.index.text;
  const read = text.read.bind(text);
  text.read = (repo, fn) =>
    read(repo, (reader) =>
      fn({
        all: (sql, args = []) => {
          seen.push({ repo, sql, args, reader });
          return reader.all(sql, args);
        },
      }),
    );
  return seen;
}

/** `EXPLAIN QUERY PLAN` of a statement, its steps' details in order. */
const planOf = async (db: { all: TextReader['all'] }, sql: string, args: SqlArgs) =>
  (await db.all<Row>(`EXPLAIN QUERY PLAN ${sql}`, args)).map((r) => String(r.detail));

/** A small page holding `words`, and a line of its own. */
const page = (i: number, words: string) => `---\ntitle: Page ${i}\n---\n## Notes\n${words}\nline ${i} of its own\n`;

describe('a search reads its own repository only', () => {
  it('the plan of every statement a search runs: full-text tables holding that repository alone, commits by repository first', async () => {
    srv = await startTestServer();
    // A big neighbour whose pages hold the searched words too, and the one-page repository searched.
    await push('big', Array.from({ length: 300 }, (_, i) => ({ path: `p/${i}.md`, content: page(i, 'kestrel falcon rollout migration') })));
    await push('one', [{ path: 'only.md', content: page(0, 'kestrel rollout') }]);
    // The rows are made (a catch-up, which is not a search) before the reads are watched.
    expect((await srv.api('/v1/repos/one/search?q=kestrel')).status).toBe(200);
    const seen = recordReads(srv);
    const metaReads: Array<{ sql: string; args: SqlArgs }> = [];
    const metaAll = srv.deps.db.all.bind(srv.deps.db);
    srv.deps.db.all = async <T,>(sql: string, args: SqlArgs = []) => {
      if (/\bgit_head\b/.test(sql) && args[0] === 'one') metaReads.push({ sql, args });
      return metaAll<T>(sql, args);
    };

    // A full page (so that the count runs too), filtered ones, a prefix, an exclusion.
    const answers: unknown[] = [];
    for (const q of ['q=kestrel&limit=1', 'q=rollout&type=note&tag=x', 'q=rollout&tag=x', 'q=migr*', 'q=kestrel%20-falcon']) {
      const r = await srv.api(`/v1/repos/one/search?${q}`);
      expect(r.status).toBe(200);
      answers.push(await r.json());
    }
    expect(answers).toMatchObject([
      { results: [{ path: 'only.md' }], total: 1 },
      { results: [], total: 0 },
      { results: [], total: 0 },
      { results: [], total: 0 },
      { results: [{ path: 'only.md' }], total: 1 },
    ]);

    const reads = seen.filter((s) => s.repo === 'one');
    expect(reads.length).toBeGreaterThanOrEqual(6);
    expect(seen.filter((s) => s.repo !== 'one')).toEqual([]);
    for (const { sql, args, reader } of reads) {
      // What the statement can reach: the tables of this reader's database hold repository `one` only.
      expect(await reader.all('SELECT DISTINCT repo_id FROM search_docs'), sql).toEqual([{ repo_id: 'one' }]);
      expect(await reader.all('SELECT count(*) AS n FROM search_fts'), sql).toEqual([{ n: 1 }]);
      const plan = await planOf(reader, sql, args);
      // The full-text table is entered by its MATCH index (first, or first inside the ranking subquery that
      // hands on the best rows); search_docs only by id, never scanned.
      const [first, ...rest] = plan[0] === 'CO-ROUTINE m' ? plan.slice(1) : plan;
      expect(first, sql).toMatch(/^SCAN search_fts VIRTUAL TABLE INDEX \d+:=?M/);
      for (const step of rest) {
        expect(step, `${sql}\n${plan.join('\n')}`).toMatch(/^(?:SEARCH d USING INTEGER PRIMARY KEY \(rowid=\?\)|USE TEMP B-TREE FOR ORDER BY|SCAN m)$/);
      }
    }
    // The results' last commits: looked up by repository and path first, in the index's own database.
    expect(metaReads.length).toBeGreaterThanOrEqual(1);
    for (const { sql, args } of metaReads) {
      const plan = await planOf({ all: metaAll }, sql, args);
      expect(plan.length, sql).toBeGreaterThan(0);
      for (const step of plan) expect(step, `${sql}\n${plan.join('\n')}`).toMatch(/^SEARCH \w+ USING (?:PRIMARY KEY|INDEX \w+) \(repo_id=\? AND (?:path|seq)=\?\)$/);
    }
    // The rows live in the repository's own file, and service.db holds none.
    expect(existsSync(join(srv.dataRoot, 'search', 'one.db'))).toBe(true);
    expect(await metaAll('SELECT count(*) AS n FROM search_docs')).toEqual([{ n: 0 }]);
  });
});

describe('searches run off the event loop', () => {
  it("/health and another repository's searches keep answering while twelve expensive searches run", async () => {
    srv = await startTestServer();
    // 2,000 pages that each hold the 16 words of the query: every search ranks every page (the whole budget).
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa';
    for (let start = 0; start < 2_000; start += 500) {
      await push('heavy', Array.from({ length: 500 }, (_, k) => ({ path: `p/${start + k}.md`, content: page(start + k, words) })));
    }
    await push('light', [{ path: 'only.md', content: page(0, words) }]);
    const q = `/v1/repos/heavy/search?q=${encodeURIComponent(words)}`;
    const first = await srv.api(q); // the rows are made (the catch-up), and the read threads started
    expect(first.status).toBe(200);
    expect(((await first.json()) as { total: number }).total).toBe(2_000);
    const lightQ = `/v1/repos/light/search?q=${encodeURIComponent(words)}`;
    expect((await srv.api(lightQ)).status).toBe(200);

    let done = 0;
    let healthBeforeLast = 0;
    const searches = Array.from({ length: 12 }, async () => {
      const r = await srv!.api(q);
      const body = (await r.json()) as { total: number; results: unknown[] };
      done++;
      return [r.status, body.total, body.results.length];
    });
    const health = (async () => {
      while (done < 12) {
        const r = await fetch(`${srv!.url}/health`);
        expect([r.status, await r.json()]).toEqual([200, { status: 'ok' }]);
        if (done < 12) healthBeforeLast++;
      }
    })();
    let lightBeforeLast = 0;
    const light = (async () => {
      while (done < 12) {
        const r = await srv!.api(lightQ);
        expect([r.status, ((await r.json()) as { results: Array<{ path: string }> }).results.map((x) => x.path)]).toEqual([200, ['only.md']]);
        if (done < 12) lightBeforeLast++;
      }
    })();
    expect(await Promise.all(searches)).toEqual(Array.from({ length: 12 }, () => [200, 2_000, 20]));
    await Promise.all([health, light]);
    // With the searches on the event loop, /health and the other search wait for them, answered at most
    // between two of them; with the heavy ones on at most two threads, the other repository's run beside.
    expect(healthBeforeLast, '/health answers before the last search').toBeGreaterThanOrEqual(10);
    expect(lightBeforeLast, "the one-page repository's answers before the last search").toBeGreaterThanOrEqual(3);
  });
});
