import { join } from 'node:path';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { createClient } from '@libsql/client';
import { makePage, Rng, type PageModel } from '../content.ts';
import { pushBody, type PushResponse } from '../http.ts';
import { sq, timedSteps } from '../git.ts';
import { round, summarize } from '../stats.ts';
import { TARGETS, atMost } from '../targets.ts';
import { createRepo, repoDir, type Ctx, type Row, type Side, type Workload } from './types.ts';
import { openDatabaseFile } from '../../lib/runtime/node/open-db.ts';
import { GitStore } from '../../lib/git/store.ts';
import { nodeStoreFs } from '../../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../../lib/repo/path-index.ts';
import { RepoStore } from '../../lib/repo/repo-store.ts';
import { IndexFiles } from '../../lib/runtime/node/search-files.ts';
import { systemClock } from '../../lib/util/clock.ts';

/**
 * W8 search: full-text search in one large repository (10,000 pages at full scale) through
 * `GET /v1/repos/w8/search`, at concurrency 1 and 16, against `git grep` over the same bare repository in
 * the same run; the size of the search index on disk per 1,000 pages; and what keeping the index in step
 * costs a push: the same one-page pushes through RepoStore with the index on and off, alternating, in this
 * process (the server cannot switch it off), set against the p50 of W1-shaped pushes through the server.
 */

const SIZES = {
  full: { pages: 10_000, c1Reps: 20, c16PerClient: 10, refC1Reps: 3, refC16PerClient: 1, pushReps: 200, httpPushReps: 100 },
  small: { pages: 1_000, c1Reps: 6, c16PerClient: 3, refC1Reps: 2, refC16PerClient: 1, pushReps: 40, httpPushReps: 30 },
} as const;

const CONCURRENCY = 16;
const SEED_BATCH = 100;
/** Untimed A/B rounds before the timed ones. */
const AB_WARMUP = 10;
const CODENAMES = 997;

/** The query mix, each with the `git grep` that does the same job over the tree at `main`. */
const QUERIES: Array<{ q: string; grep: string[]; what: string }> = [
  { q: 'rollout', grep: ['-i', '-w', '-F', '-e', 'rollout'], what: 'a word on most pages' },
  { q: 'codename417', grep: ['-i', '-w', '-F', '-e', 'codename417'], what: 'a rare word' },
  { q: '"cache index"', grep: ['-i', '-F', '-e', 'cache index'], what: 'a phrase' },
  { q: 'migr*', grep: ['-i', '-F', '-e', 'migr'], what: 'a prefix' },
  { q: 'risk -alert', grep: ['-i', '-w', '-F', '-e', 'risk'], what: 'a word, one excluded' },
];

const sizeOf = (ctx: Ctx) => SIZES[ctx.scale.name];

function side(label: string, command: string, ms: number[], extra?: Record<string, unknown>): Side {
  const s = summarize(ms);
  return { label, command, unit: 'ms', median: s.median, p95: s.p95, n: s.n, extra: { mean: s.mean, min: s.min, max: s.max, ...extra } };
}

const searchPath = (q: string) => `/v1/repos/w8/search?q=${encodeURIComponent(q)}`;

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    total += e.isDirectory() ? await dirBytes(p) : (await stat(p)).size;
  }
  return total;
}

interface W8State {
  pages: number;
  seedMs: number;
}

export const w8: Workload = {
  id: 'W8',
  title: 'search',
  async seed(ctx) {
    const { pages } = sizeOf(ctx);
    await createRepo(ctx, 'w8');
    const rng = new Rng(801);
    const started = performance.now();
    for (let start = 0; start < pages; start += SEED_BATCH) {
      const files = [];
      for (let i = start; i < Math.min(pages, start + SEED_BATCH); i++) {
        files.push({
          path: `area-${String(i % 50).padStart(2, '0')}/page-${String(i + 1).padStart(5, '0')}.md`,
          content: makePage(rng, `Page ${i + 1} codename${i % CODENAMES}`).render(),
        });
      }
      await ctx.api().json<PushResponse>('POST', '/v1/repos/w8/sync/push', pushBody(`seed W8 ${start}`, files));
    }
    ctx.shared.set('w8', { pages, seedMs: performance.now() - started } satisfies W8State);
    ctx.log(`W8: server peak RSS after seeding ${(ctx.server().memory().peakKb / 1024).toFixed(1)} MiB`);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w8') as W8State;
    const size = sizeOf(ctx);
    const gitDir = repoDir(ctx, 'w8');
    const rows: Row[] = [];

    // ------------------------------------------------------------------ ours, concurrency 1 and 16
    const api = ctx.api();
    const totals: Record<string, number> = {};
    for (const { q } of QUERIES) {
      const r = await api.json<{ total: number }>('GET', searchPath(q)); // warm-up, and the match counts
      totals[q] = r.data.total;
    }
    const c1: number[] = [];
    for (let i = 0; i < size.c1Reps; i++) {
      for (const { q } of QUERIES) {
        const r = await api.send('GET', searchPath(q));
        if (r.status !== 200) throw new Error(`W8: search ${q} → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
        c1.push(r.ms);
      }
    }
    ctx.log(`W8: server peak RSS after searches at concurrency 1: ${(ctx.server().memory().peakKb / 1024).toFixed(1)} MiB`);
    const c16: number[] = [];
    const c16Started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, c) => {
        const client = ctx.newApi(1);
        for (let i = 0; i < size.c16PerClient; i++) {
          for (let k = 0; k < QUERIES.length; k++) {
            const { q } = QUERIES[(k + c) % QUERIES.length]!;
            const r = await client.send('GET', searchPath(q));
            if (r.status !== 200) throw new Error(`W8: search ${q} → ${r.status}`);
            c16.push(r.ms);
          }
        }
        client.close();
      }),
    );
    const c16Wall = performance.now() - c16Started;
    ctx.log(`W8: ${c1.length} searches at concurrency 1, ${c16.length} at ${CONCURRENCY}; git grep next (server peak RSS ${(ctx.server().memory().peakKb / 1024).toFixed(1)} MiB)`);

    // ------------------------------------------------------------------ git grep, concurrency 1 and 16
    const scratch = join(ctx.work, 'scratch-w8');
    await mkdir(scratch, { recursive: true });
    const grepStep = (args: string[]) => `"\${G[@]}" grep -l ${args.map(sq).join(' ')} main > /dev/null || [ $? -eq 1 ]`;
    const grepCounts: Record<string, number> = {};
    for (const { q, grep } of QUERIES) {
      const { values } = await timedSteps(gitDir, [`echo "R $( ("\${G[@]}" grep -l ${grep.map(sq).join(' ')} main || true) | wc -l)"`], scratch);
      grepCounts[q] = Number(values[0]);
    }
    const refSteps = Array.from({ length: size.refC1Reps }, () => QUERIES.map((x) => grepStep(x.grep))).flat();
    // One untimed pass first: the objects are then in the page cache for git as they are for the server.
    const refC1 = (await timedSteps(gitDir, [...QUERIES.map((x) => grepStep(x.grep)), ...refSteps], scratch)).ms.slice(QUERIES.length);
    const refC16Started = performance.now();
    const refC16 = (
      await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, c) =>
          timedSteps(
            gitDir,
            Array.from({ length: size.refC16PerClient }, () => QUERIES.map((_, k) => grepStep(QUERIES[(k + c) % QUERIES.length]!.grep))).flat(),
            join(scratch, `c${c}`),
          ),
        ),
      )
    ).flatMap((r) => r.ms);
    const refC16Wall = performance.now() - refC16Started;

    const mix = QUERIES.map((x) => `${x.q} (${x.what})`).join(', ');
    const counts = QUERIES.map((x) => `${x.q}: ${totals[x.q]} pages (git grep -l: ${grepCounts[x.q]})`).join('; ');
    const oursC1 = side(`GET /search, ${QUERIES.length} queries in turn`, `GET /v1/repos/w8/search?q=… (${mix})`, c1, { totals });
    const refSideC1 = side('git grep -l over main', `git grep -l -i [-w] -F -e <word> main, per query, timed in bash`, refC1, { grep_counts: grepCounts });
    const r1 = oursC1.median / refSideC1.median;
    rows.push({
      id: 'W8',
      title: `search (${st.pages.toLocaleString('en-US')} pages, concurrency 1)`,
      ours: oursC1,
      reference: refSideC1,
      ratio: r1,
      ratioBasis: 'p50/p50',
      target: { text: `p50 ≤ ${TARGETS.w8OverGrep}×`, met: atMost(r1, TARGETS.w8OverGrep) },
      notes: [
        `queries: ${mix}; answers: top 20 with snippets and total`,
        `matches: ${counts}`,
        `seeding ${st.pages} pages through the API (${SEED_BATCH} per push, index kept in step) took ${Math.round(st.seedMs)} ms`,
      ],
    });
    const oursC16 = side(`GET /search, ${CONCURRENCY} clients at once`, `as W8, ${CONCURRENCY} keep-alive clients in parallel`, c16, {
      wall_ms: round(c16Wall),
      req_per_s: round((c16.length / c16Wall) * 1000, 1),
    });
    const refSideC16 = side(`git grep -l, ${CONCURRENCY} at once`, `${CONCURRENCY} bash processes in parallel, each running the query mix`, refC16, {
      wall_ms: round(refC16Wall),
      per_s: round((refC16.length / refC16Wall) * 1000, 2),
    });
    const r16 = oursC16.median / refSideC16.median;
    rows.push({
      id: 'W8·c16',
      title: `search (${st.pages.toLocaleString('en-US')} pages, concurrency ${CONCURRENCY})`,
      ours: oursC16,
      reference: refSideC16,
      ratio: r16,
      ratioBasis: 'p50/p50',
      target: { text: `p50 ≤ ${TARGETS.w8OverGrep}×`, met: atMost(r16, TARGETS.w8OverGrep) },
      notes: [`${round((c16.length / c16Wall) * 1000, 1)} searches/s against ${round((refC16.length / refC16Wall) * 1000, 2)} git greps/s`],
    });

    // ------------------------------------------------------------------ index size on disk
    // The repository's own file of full-text rows (lib/runtime/node/search-files.ts).
    const db = createClient({ url: `file:${join(ctx.dataRoot, 'search', 'w8.db')}` });
    let indexBytes = NaN;
    let indexed = NaN;
    let perTable: Record<string, number> = {};
    try {
      const rs = await db.execute(
        "SELECT name, SUM(pgsize) AS bytes FROM dbstat WHERE name LIKE 'search\\_%' ESCAPE '\\' OR name = 'sqlite_autoindex_search_docs_1' GROUP BY name",
      );
      perTable = Object.fromEntries(rs.rows.map((r) => [String(r.name), Number(r.bytes)]));
      indexBytes = Object.values(perTable).reduce((a, b) => a + b, 0);
      indexed = Number((await db.execute('SELECT count(*) AS n FROM search_docs')).rows[0]!.n);
    } finally {
      db.close();
    }
    const objectsBytes = await dirBytes(join(gitDir, 'objects'));
    const perK = (bytes: number, n: number) => round(bytes / (n / 1000) / 2 ** 20, 2);
    const idxPerK = perK(indexBytes, indexed);
    const gitPerK = perK(objectsBytes, st.pages);
    rows.push({
      id: 'W8·size',
      title: 'search index on disk per 1,000 pages',
      ours: {
        label: 'search_docs + search_fts (dbstat of search/w8.db)',
        command: "SUM(pgsize) FROM dbstat for search_* tables and search_docs' index in the repository's file, ÷ pages indexed",
        unit: 'MiB',
        median: idxPerK,
        p95: idxPerK,
        n: 1,
        extra: { bytes: indexBytes, pages_indexed: indexed, per_table_bytes: perTable },
      },
      reference: { label: "the repository's git objects (context)", command: 'du of w8.git/objects (loose objects) ÷ pages', unit: 'MiB', median: gitPerK, p95: gitPerK, n: 1 },
      ratio: idxPerK / gitPerK,
      ratioBasis: 'size / git objects',
      target: { text: '(measured)', met: null },
      notes: [
        `${(indexBytes / 2 ** 20).toFixed(1)} MiB for ${indexed} pages (2–4 KB each); search_fts_content (FTS5's copy of the text, which snippet() reads) is ${((perTable.search_fts_content ?? 0) / 2 ** 20).toFixed(1)} MiB of it`,
      ],
    });

    // ------------------------------------------------------------------ what the index costs a push
    ctx.log('W8: W1-shaped pushes through the server, then RepoStore with the index on and off');
    await createRepo(ctx, 'w8push');
    const rng = new Rng(802);
    const models: PageModel[] = Array.from({ length: 20 }, (_, i) => makePage(rng, `W8 push page ${i + 1}`));
    const paths = models.map((_, i) => `pages/page-${String(i + 1).padStart(2, '0')}.md`);
    const seeded = await api.json<PushResponse>('POST', '/v1/repos/w8push/sync/push', pushBody('seed', models.map((m, i) => ({ path: paths[i]!, content: m.render() }))));
    const shas = paths.map((p) => seeded.data.pushed.find((x) => x.path === p)!.sha);
    const httpMs: number[] = [];
    for (let i = 0; i < size.httpPushReps; i++) {
      const k = i % models.length;
      const r = await api.json<PushResponse>('POST', '/v1/repos/w8push/sync/push', pushBody(`W8 update ${i}`, [{ path: paths[k]!, content: models[k]!.touch(rng, i), parent_sha: shas[k] }]));
      shas[k] = r.data.pushed[0]!.sha;
      httpMs.push(r.ms);
    }
    const bigMs: number[] = [];
    for (let i = 0; i < Math.min(size.httpPushReps, 50); i++) {
      const path = `area-00/page-${String(1 + 50 * i).padStart(5, '0')}.md`;
      const r = await api.json<PushResponse>('POST', '/v1/repos/w8/sync/push', pushBody(`W8 big update ${i}`, [{ path, content: makePage(rng, `Updated ${i} codename1`).render() }]));
      bigMs.push(r.ms);
    }

    const abRoot = join(ctx.work, 'w8-ab');
    await mkdir(join(abRoot, 'repos'), { recursive: true });
    const abDb = await openDatabaseFile(join(abRoot, 'service.db'), Math.floor(Date.now() / 1000));
    const git = new GitStore({ fs: nodeStoreFs(), root: join(abRoot, 'repos') });
    // The index on as the server keeps it: the repository's full-text rows in a file of their own.
    const abText = new IndexFiles(join(abRoot, 'search'));
    await mkdir(abText.dir, { recursive: true });
    const withIndex = new RepoStore(git, new PathIndex(abDb, { text: abText }), systemClock);
    const without = new RepoStore(git, new PathIndex(abDb, { search: false }), systemClock);
    const enc = new TextEncoder();
    // Two alternating A/B runs over the same stores. `later`: the push as the server makes it — its full-text
    // rows made after its answer (DerivedLater, for the pushes of that time at once), that work running while
    // the next pushes are timed, so whatever it takes from them is counted. `full`: each push's full-text rows
    // made at once, for it alone, and counted in full (what the work itself costs a page).
    const ab = { later: { on: [] as number[], off: [] as number[] }, full: { on: [] as number[], off: [] as number[] } };
    const abModels = { on: models.map((_, i) => makePage(rng, `A/B page ${i + 1}`)), off: models.map((_, i) => makePage(rng, `A/B page ${i + 1}`)) };
    try {
      for (const [which, store] of [['on', withIndex], ['off', without]] as const) {
        await store.create(`ab-${which}`);
        await store.commitFiles(`ab-${which}`, abModels[which].map((m, i) => ({ path: paths[i]!, content: enc.encode(m.render()) })), { name: 'Bench', email: 'bench@example.invalid' }, 'seed');
        await store.searchNow(`ab-${which}`);
      }
      let step = 0;
      for (const mode of ['later', 'full'] as const) {
        for (let i = -AB_WARMUP; i < size.pushReps; i++, step++) {
          const k = step % paths.length;
          // Alternating, and each side first in turn, so that drift and order weigh on both alike.
          const order = step % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
          for (const which of order) {
            const store = which === 'on' ? withIndex : without;
            const content = enc.encode(abModels[which][k]!.touch(rng, step));
            const t = performance.now();
            await store.commitFiles(`ab-${which}`, [{ path: paths[k]!, content }], { name: 'Bench', email: 'bench@example.invalid' }, `A/B ${step}`);
            if (mode === 'full') await store.searchNow(`ab-${which}`);
            if (i >= 0) ab[mode][which].push(performance.now() - t);
          }
        }
        // Nothing of one run's work left over for the next.
        await withIndex.searchNow('ab-on');
        await without.searchNow('ab-off');
      }
    } finally {
      await withIndex.searchSettled();
      await abText.close();
      await abDb.close();
    }
    const http = summarize(httpMs);
    const on = side('RepoStore.commitFiles, index on, its rows made after it as the server does', 'one-page commit (2–4 KB page of 20), in this process: libSQL file + bare repository on disk; the full-text rows made by DerivedLater while the next commits are timed', ab.later.on);
    const off = side('same, index off', 'the same, PathIndex({ search: false }) (no full-text rows to make)', ab.later.off);
    // A cost is the median of the paired differences (each timed commit with the index against the one
    // without it next to it), which the load of a shared machine disturbs less than a difference of medians.
    const paired = (a: { on: number[]; off: number[] }) => a.on.map((x, i) => x - a.off[i]!);
    const laterDiffs = summarize(paired(ab.later));
    const cost = laterDiffs.median;
    const meanCost = laterDiffs.mean;
    const fullCost = summarize(paired(ab.full)).median;
    const share = cost / http.median;
    rows.push({
      id: 'W8·push',
      title: `what the index adds to a push (${ab.later.on.length} one-page commits each way, alternating)`,
      ours: on,
      reference: off,
      ratio: share,
      ratioBasis: `median(on − off) / W1-shaped push p50 ${http.median.toFixed(1)} ms`,
      target: { text: `< ${TARGETS.w8PushShare.toFixed(2)}× W1 p50`, met: share < TARGETS.w8PushShare },
      notes: [
        `index cost on a push (median of paired differences): ${cost.toFixed(2)} ms, mean ${meanCost.toFixed(2)} ms (the mean spreads the rows made after the answers over every push); W1-shaped pushes through the server in this run (1 of 20 pages, parent_sha, index on): p50 ${http.median.toFixed(1)} ms, p95 ${http.p95.toFixed(1)} ms`,
        `the full-text work itself, counted in full (each commit's rows made at once, for it alone): ${fullCost.toFixed(2)} ms a page (median of paired differences; ${(fullCost / http.median).toFixed(2)}× the W1-shaped push), commit + rows p50 ${summarize(ab.full.on).median.toFixed(2)} ms against ${summarize(ab.full.off).median.toFixed(2)} ms`,
        `one-page pushes into the ${st.pages.toLocaleString('en-US')}-page repository through the server: p50 ${summarize(bigMs).median.toFixed(1)} ms, p95 ${summarize(bigMs).p95.toFixed(1)} ms`,
      ],
    });
    return rows;
  },
};
