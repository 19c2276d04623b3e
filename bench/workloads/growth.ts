import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makePage, Rng } from '../content.ts';
import { Api, encodePath, pushBody, type PushResponse } from '../http.ts';
import { startService } from '../procs.ts';
import { fmtMs, percentile, round, summarize } from '../stats.ts';
import { TARGETS, atMost, growthRow, ratioOf } from '../targets.ts';
import { createRepo, type Ctx, type Row, type Side, type Workload } from './types.ts';

/**
 * W9 size: two repositories of the same kind of pages, the small and the large size (10,000 and
 * 100,000 pages at full scale), each built by pushes of 10,000 pages (both at once, one client each), then
 * the same requests on both, alternating size by size: a full pull, a pull since the previous head after one
 * more push, a page's history, page reads spread over the repository, searches, an export (time, and peak
 * RSS above the server's RSS before it). A client polls `GET /health` all along on its own connection: the
 * worst answer while the requests run is the row that says no request waits for another's (W9·health), and
 * the worst while the exports run, the longest of them, a row of its own (W9·health·export).
 *
 * W12 neighbours: the same search in a one-page repository beside W9's large one, and in the same one-page
 * repository on a second server whose data root holds nothing else, rounds alternating between the two.
 */

/** Pages of a few hundred bytes, under 1,000 folders (two levels), so a folder holds 100 pages at 100,000. */
export function growthPage(rng: Rng, i: number): { path: string; content: string } {
  const path = `area-${String(i % 50).padStart(2, '0')}/part-${String(Math.floor(i / 50) % 20).padStart(2, '0')}/page-${String(i + 1).padStart(6, '0')}.md`;
  const content = makePage(rng, `Page ${i + 1} codename${i % 997}`, { minBytes: 200, maxBytes: 500, minSections: 1, maxSections: 3 }).render();
  return { path, content };
}

const HOT = 'hot/page.md';
const QUERIES = ['rollout', 'codename417', '"cache index"'];

const REPS = {
  full: { pullReps: 3, sinceReps: 20, historyReps: 30, reads: 100, searchRounds: 10, exportReps: 3 },
  small: { pullReps: 3, sinceReps: 10, historyReps: 20, reads: 50, searchRounds: 5, exportReps: 2 },
} as const;

/** GET /health on its own connection every 20 ms, each answer's latency kept under the phase it fell in. */
class HealthWatch {
  private readonly api: Api;
  private running = true;
  private readonly loop: Promise<void>;
  phase: string | null = null;
  /** The request kind running now (`pull`, `search`, …): the worst answer of each is kept apart. */
  op: string | null = null;
  /** Worst latency per `<phase> <op>`. */
  readonly worstByOp = new Map<string, number>();
  /** Every latency per `<phase> <op>` (the export's own figure, W9·health·export). */
  readonly byOp = new Map<string, number[]>();
  /** Polls whose connection the server had closed (sent again on a new one). */
  resets = 0;
  readonly samples = new Map<string, number[]>();

  constructor(url: string) {
    const api = new Api(url, 'none', 1);
    this.api = api;
    this.loop = (async () => {
      while (this.running) {
        const phase = this.phase;
        const op = this.op;
        const t = performance.now();
        let r = await api.send('GET', '/health').catch((e: unknown) => ({ status: 0, ms: Number.NaN, error: e }));
        if (r.status === 0) {
          // The server closed the idle keep-alive connection as the request went out (its keep-alive timer
          // fired late, after its event loop was held): once more on a new connection, timed from the first try.
          this.resets++;
          r = await api.send('GET', '/health').catch((e: unknown) => ({ status: 0, ms: Number.NaN, error: e }));
          r.ms = performance.now() - t;
        }
        if (r.status !== 200) {
          this.failure = `GET /health → ${r.status === 0 ? String((r as { error: unknown }).error) : r.status}`;
          return;
        }
        if (phase !== null) {
          let list = this.samples.get(phase);
          if (!list) this.samples.set(phase, (list = []));
          list.push(r.ms);
          if (op !== null) {
            const key = `${phase} ${op}`;
            this.worstByOp.set(key, Math.max(this.worstByOp.get(key) ?? 0, r.ms));
            let ops = this.byOp.get(key);
            if (!ops) this.byOp.set(key, (ops = []));
            ops.push(r.ms);
          }
        }
        await sleep(20);
      }
    })();
  }

  /** Why polling stopped early (a /health that did not answer 200), if it did. */
  private failure: string | null = null;

  /** Stops polling; throws when a poll failed (the server must answer /health all along). */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.api.close();
    if (this.failure) throw new Error(`W9: ${this.failure}`);
  }
}

interface SizeState {
  repo: string;
  pages: number;
  paths: string[];
  /** Each seeding push's time, ms. */
  pushMs: number[];
}

interface W9State {
  sizes: [SizeState, SizeState];
  /** /health latencies while seeding (context, no target), and the polls sent again on a new connection. */
  seedHealth: number[];
  seedResets: number;
}

/**
 * A seeding push. Both repositories are seeded at once by one identity, whose bodies in flight may take a
 * quarter of the server's body budget: past it the server answers 503 `server busy` with Retry-After, and
 * the push is sent again after that pause, as any client should.
 */
async function seedPush(api: Api, repo: string, body: unknown): Promise<{ data: PushResponse; ms: number }> {
  for (;;) {
    const r = await api.send('POST', `/v1/repos/${repo}/sync/push`, body);
    if (r.status === 503 && r.body.toString('utf8').includes('server busy')) {
      const wait = Number(r.headers['retry-after'] ?? '1');
      await sleep(1000 * (Number.isFinite(wait) && wait > 0 ? wait : 1));
      continue;
    }
    if (r.status !== 200) throw new Error(`POST /v1/repos/${repo}/sync/push → ${r.status} (expected 200): ${r.body.toString('utf8').slice(0, 500)}`);
    return { data: JSON.parse(r.body.toString('utf8')) as PushResponse, ms: r.ms };
  }
}

async function seedSize(ctx: Ctx, repo: string, pages: number, seed: number): Promise<SizeState> {
  await createRepo(ctx, repo);
  const api = ctx.newApi(1);
  const rng = new Rng(seed);
  const paths: string[] = [];
  const pushMs: number[] = [];
  const batch = ctx.scale.w9Batch;
  try {
    // The page that W9's one-more pushes change, in a push of its own (a seeding push holds exactly `batch` pages).
    await api.json<PushResponse>('POST', `/v1/repos/${repo}/sync/push`, pushBody(`seed ${repo} hot page`, [{ path: HOT, content: makePage(rng, 'Hot page', { minBytes: 200, maxBytes: 500 }).render() }]));
    const makeBatch = (start: number) => {
      const files = [];
      for (let i = start; i < Math.min(pages, start + batch); i++) {
        const f = growthPage(rng, i);
        paths.push(f.path);
        files.push(f);
      }
      return files;
    };
    let next = makeBatch(0);
    for (let start = 0; start < pages; start += batch) {
      const files = next;
      const pending = seedPush(api, repo, pushBody(`seed ${repo} ${start}`, files));
      // The next batch's pages are made while the server takes this one.
      if (start + batch < pages) next = makeBatch(start + batch);
      const r = await pending;
      if (r.data.pushed.length !== files.length) throw new Error(`W9: ${repo} pushed ${r.data.pushed.length} of ${files.length}`);
      pushMs.push(r.ms);
      ctx.log(`W9 seed: ${repo} ${Math.min(pages, start + batch).toLocaleString('en-US')}/${pages.toLocaleString('en-US')} pages (push ${Math.round(r.ms)} ms)`);
    }
    // The full-text rows are made after the pushes' answers: the first search waits for them.
    await api.json('GET', `/v1/repos/${repo}/search?q=rollout`);
  } finally {
    api.close();
  }
  return { repo, pages, paths, pushMs };
}

export const w9: Workload = {
  id: 'W9',
  title: 'size',
  async seed(ctx) {
    const [small, large] = ctx.scale.w9Pages;
    const watch = new HealthWatch(ctx.server().url);
    watch.phase = 'seed';
    try {
      // The two repositories at once: pushes into one repository take turns, into two they need not.
      const sizes = await Promise.all([seedSize(ctx, `w9-${small}`, small, 901), seedSize(ctx, `w9-${large}`, large, 902)]);
      ctx.shared.set('w9', { sizes, seedHealth: [], seedResets: 0 } satisfies W9State);
    } finally {
      await watch.stop();
    }
    const st = ctx.shared.get('w9') as W9State;
    st.seedHealth.push(...(watch.samples.get('seed') ?? []));
    st.seedResets = watch.resets;
  },
  async measure(ctx) {
    const st = ctx.shared.get('w9') as W9State;
    const reps = REPS[ctx.scale.name];
    const api = ctx.api();
    const watch = new HealthWatch(ctx.server().url);
    const [S, L] = st.sizes;
    const fig = new Map<string, { small: number[]; large: number[]; extra: { small: Record<string, unknown>; large: Record<string, unknown> } }>();
    const record = (op: string, which: 'small' | 'large', ms: number[], extra: Record<string, unknown> = {}) => {
      let f = fig.get(op);
      if (!f) fig.set(op, (f = { small: [], large: [], extra: { small: {}, large: {} } }));
      f[which].push(...ms);
      Object.assign(f.extra[which], extra);
    };
    /** Runs `fn` on the small size, then the large one, with the health watch's phase set to the size. */
    const both = async (op: string, fn: (s: SizeState, which: 'small' | 'large') => Promise<void>) => {
      watch.op = op;
      for (const [s, which] of [
        [S, 'small'],
        [L, 'large'],
      ] as const) {
        watch.phase = which;
        await fn(s, which);
        watch.phase = null;
      }
      watch.op = null;
    };
    const exportAbove: { small: number[]; large: number[] } = { small: [], large: [] };
    try {
      // Full pull: one untimed, then timed.
      await both('pull', async (s, which) => {
        const pull = async () => {
          const r = await api.send('GET', `/v1/repos/${s.repo}/sync/pull`);
          if (r.status !== 200) throw new Error(`W9: pull ${s.repo} → ${r.status}`);
          return r;
        };
        const first = await pull();
        const files = (JSON.parse(first.body.toString('utf8')) as { files: unknown[] }).files.length;
        if (files !== s.pages + 1) throw new Error(`W9: pull of ${s.repo} returned ${files} files, expected ${s.pages + 1}`);
        const ms: number[] = [];
        for (let i = 0; i < reps.pullReps; i++) ms.push((await pull()).ms);
        record('pull', which, ms, { first_ms: round(first.ms), response_bytes: first.body.length });
      });
      ctx.log('W9: full pulls done');
      // One more push, then a pull since the head before it.
      await both('since', async (s, which) => {
        const rng = new Rng(910);
        const ms: number[] = [];
        const pushMs: number[] = [];
        let prev = await head(api, s.repo);
        for (let i = 0; i < reps.sinceReps; i++) {
          const p = await api.json<PushResponse>('POST', `/v1/repos/${s.repo}/sync/push`, pushBody(`W9 one more ${i}`, [{ path: HOT, content: makePage(rng, `Hot page ${i}`, { minBytes: 200, maxBytes: 500 }).render() }]));
          pushMs.push(p.ms);
          const r = await api.json<{ new_head: string; files: Array<{ path: string }>; deleted: string[] }>('GET', `/v1/repos/${s.repo}/sync/pull?since=${prev}`);
          if (r.data.files.length !== 1 || r.data.files[0]!.path !== HOT || r.data.new_head !== p.data.new_head) {
            throw new Error(`W9: pull since on ${s.repo} returned ${r.data.files.length} files (head ${r.data.new_head}, pushed ${p.data.new_head})`);
          }
          ms.push(r.ms);
          prev = p.data.new_head;
        }
        record('since', which, ms, { one_page_push_p50_ms: summarize(pushMs).median });
      });
      ctx.log('W9: pulls since done');
      // The hot page's history (it has one commit per push above, plus its first).
      await both('history', async (s, which) => {
        const url = `/v1/repos/${s.repo}/history/${encodePath(HOT)}?limit=50`;
        const first = await api.json<{ commits: unknown[] }>('GET', url);
        const ms: number[] = [];
        for (let i = 0; i < reps.historyReps; i++) ms.push((await api.json('GET', url)).ms);
        record('history', which, ms, { first_ms: round(first.ms), commits: first.data.commits.length });
      });
      // Page reads spread over the whole repository, each page read once.
      await both('read', async (s, which) => {
        const ms: number[] = [];
        for (let i = 0; i < reps.reads; i++) {
          const path = s.paths[Math.floor(((i + 0.5) * s.pages) / reps.reads)]!;
          const r = await api.send('GET', `/v1/repos/${s.repo}/pages/${encodePath(path)}`);
          if (r.status !== 200) throw new Error(`W9: read ${s.repo}/${path} → ${r.status}`);
          ms.push(r.ms);
        }
        record('read', which, ms);
      });
      ctx.log('W9: history and reads done');
      // Searches: each query once untimed, then rounds of the mix.
      await both('search', async (s, which) => {
        const totals: Record<string, number> = {};
        for (const q of QUERIES) totals[q] = (await api.json<{ total: number }>('GET', `/v1/repos/${s.repo}/search?q=${encodeURIComponent(q)}`)).data.total;
        const ms: number[] = [];
        for (let i = 0; i < reps.searchRounds; i++) for (const q of QUERIES) ms.push((await api.json('GET', `/v1/repos/${s.repo}/search?q=${encodeURIComponent(q)}`)).ms);
        record('search', which, ms, { totals });
      });
      ctx.log('W9: searches done');
      // Export: time, and the peak RSS above the RSS before it (VmHWM reset just before).
      await both('export', async (s, which) => {
        const ms: number[] = [];
        let bytes = 0;
        for (let i = 0; i < reps.exportReps; i++) {
          const before = ctx.resetPeak().rssKb;
          const r = await api.send('GET', `/v1/repos/${s.repo}/export`);
          if (r.status !== 200 || r.headers['content-type'] !== 'application/x-git-bundle') throw new Error(`W9: export ${s.repo} → ${r.status} ${String(r.headers['content-type'])}`);
          const peak = ctx.server().memory().peakKb;
          exportAbove[which].push((peak - before) / 1024);
          ms.push(r.ms);
          bytes = r.body.length;
        }
        record('export', which, ms, { bundle_bytes: bytes, peak_above_rss_before_mib: exportAbove[which].map((x) => round(x, 1)) });
      });
      ctx.log('W9: exports done');
    } finally {
      await watch.stop();
    }

    const sideOf = (op: string, which: 'small' | 'large', label: string, command: string): Side => {
      const f = fig.get(op)!;
      const s = summarize(f[which]);
      return { label, command, unit: 'ms', median: s.median, p95: s.p95, n: s.n, extra: { mean: s.mean, min: s.min, max: s.max, ...f.extra[which] } };
    };
    const n = (x: number) => x.toLocaleString('en-US');
    const sizes = `${n(L.pages)} vs ${n(S.pages)} pages`;
    const at = (s: SizeState) => `${n(s.pages)} pages`;
    const pair = (op: string, label: (s: SizeState) => string, command: (s: SizeState) => string) => ({
      large: sideOf(op, 'large', label(L), command(L)),
      small: sideOf(op, 'small', label(S), command(S)),
    });
    const rows: Row[] = [];
    const seedPush = summarize(L.pushMs);
    rows.push(
      growthRow({
        id: 'W9·pull',
        title: `full pull (${sizes})`,
        ...pair('pull', (s) => `GET /sync/pull, ${at(s)}`, (s) => `GET /v1/repos/${s.repo}/sync/pull`),
        factor: TARGETS.w9FullPull,
        notes: [
          `linear growth would be ${round(L.pages / S.pages, 1)}×`,
          `seeding: pushes of ${n(Math.min(ctx.scale.w9Batch, L.pages))} pages into the ${n(L.pages)}-page repository, p50 ${fmtS(seedPush.median)}, slowest ${fmtS(seedPush.max)}; both repositories seeded at once`,
        ],
      }),
      growthRow({
        id: 'W9·since',
        title: `pull since the previous head after one more push (${sizes})`,
        ...pair('since', (s) => `GET /sync/pull?since=, ${at(s)}`, (s) => `push 1 page, then GET /v1/repos/${s.repo}/sync/pull?since=<head before it>`),
        factor: TARGETS.w9Op,
      }),
      growthRow({
        id: 'W9·history',
        title: `a page's history, limit 50 (${sizes})`,
        ...pair('history', (s) => `GET /history/<path>, ${at(s)}`, (s) => `GET /v1/repos/${s.repo}/history/${HOT}?limit=50`),
        factor: TARGETS.w9Op,
      }),
      growthRow({
        id: 'W9·read',
        title: `page reads spread over the repository, each page once (${sizes})`,
        ...pair('read', (s) => `GET /pages/<path>, ${at(s)}`, (s) => `GET /v1/repos/${s.repo}/pages/<path>, ${reps.reads} paths spread evenly over the repository`),
        factor: TARGETS.w9Op,
      }),
      growthRow({
        id: 'W9·search',
        title: `search (${sizes})`,
        ...pair('search', (s) => `GET /search, ${at(s)}`, (s) => `GET /v1/repos/${s.repo}/search?q=… (${QUERIES.join(', ')}), in turn`),
        factor: TARGETS.w9Search,
        notes: [`matches: ${QUERIES.map((q) => `${q}: ${n((fig.get('search')!.extra.large.totals as Record<string, number>)[q]!)} vs ${n((fig.get('search')!.extra.small.totals as Record<string, number>)[q]!)}`).join('; ')}`],
      }),
    );
    const exp = pair('export', (s) => `GET /export, ${at(s)}`, (s) => `GET /v1/repos/${s.repo}/export (the whole bundle read)`);
    const expRatio = ratioOf(exp.large.median, exp.small.median);
    rows.push({
      id: 'W9·export',
      title: `export, time (${sizes})`,
      ours: exp.large,
      reference: exp.small,
      ratio: expRatio,
      ratioBasis: 'p50/p50',
      target: { text: '(measured)', met: null },
      notes: [`bundle ${(Number(exp.large.extra!.bundle_bytes) / 2 ** 20).toFixed(1)} MiB vs ${(Number(exp.small.extra!.bundle_bytes) / 2 ** 20).toFixed(1)} MiB`],
    });
    const above = { large: Math.max(...exportAbove.large), small: Math.max(...exportAbove.small) };
    const memSide = (s: SizeState, which: 'small' | 'large'): Side => ({
      label: `export's peak RSS above the RSS before it, ${at(s)} (highest of ${exportAbove[which].length})`,
      command: '/proc/‹server pid›/status: VmRSS before, VmHWM reset before and read after GET /export',
      unit: 'MiB',
      median: round(above[which], 1),
      p95: round(above[which], 1),
      n: exportAbove[which].length,
      extra: { each_mib: exportAbove[which].map((x) => round(x, 1)) },
    });
    rows.push({
      id: 'W9·export·mem',
      title: `export, peak RSS above the server's RSS before it (${sizes})`,
      ours: memSide(L, 'large'),
      reference: memSide(S, 'small'),
      ratio: ratioOf(above.large, above.small),
      ratioBasis: 'peak above / peak above',
      target: { text: `≤ ${TARGETS.w9ExportAboveMib} MiB above`, met: atMost(Math.max(above.large, above.small), TARGETS.w9ExportAboveMib) },
      notes: [],
    });
    const health = (which: 'small' | 'large', s: SizeState): Side => {
      const xs = watch.samples.get(which) ?? [];
      const worst = xs.length ? Math.max(...xs) : Number.NaN;
      return {
        label: `worst GET /health while the requests on ${at(s)} ran (${xs.length} polls)`,
        command: 'GET /health every 20 ms on its own keep-alive connection, all along the requests above',
        unit: 'ms',
        median: round(worst),
        p95: Number.NaN,
        n: xs.length,
        extra: {
          worst_ms: round(worst),
          p50_ms: round(percentile(xs, 50)),
          p99_ms: round(percentile(xs, 99)),
          worst_by_request_ms: Object.fromEntries([...watch.worstByOp].filter(([k]) => k.startsWith(`${which} `)).map(([k, v]) => [k.slice(which.length + 1), round(v)])),
        },
      };
    };
    const hl = health('large', L);
    const hs = health('small', S);
    const worstAll = Math.max(hl.median, hs.median);
    rows.push({
      id: 'W9·health',
      title: `the worst /health latency while W9's requests run (${sizes})`,
      ours: hl,
      reference: hs,
      ratio: ratioOf(hl.median, hs.median),
      ratioBasis: 'worst / worst',
      target: { text: `worst ≤ ${TARGETS.w9HealthMs} ms`, met: atMost(worstAll, TARGETS.w9HealthMs) },
      notes: [
        `p50 ${fmtMs(Number(hl.extra!.p50_ms))} and ${fmtMs(Number(hs.extra!.p50_ms))}; ${watch.resets} polls sent again after the server had closed their idle connection (timed from the first try)`,
        `worst by request: ${[...watch.worstByOp].map(([k, v]) => `${k} ${fmtMs(v)}`).join(', ')}`,
        `while both repositories were seeded (context): worst ${fmtMs(st.seedHealth.length ? Math.max(...st.seedHealth) : Number.NaN)} over ${st.seedHealth.length} polls, ${st.seedResets} sent again`,
      ],
    });
    // The exports on their own: an export reads, inflates, deflates and hashes every object (on Node, on an
    // export thread), the longest request of W9.
    const exportHealth = (which: 'small' | 'large', s: SizeState): Side => {
      const xs = watch.byOp.get(`${which} export`) ?? [];
      const worst = xs.length ? Math.max(...xs) : Number.NaN;
      return {
        label: `worst GET /health while the exports of ${at(s)} ran (${xs.length} polls)`,
        command: `GET /health every 20 ms on its own keep-alive connection, while GET /v1/repos/${s.repo}/export ran (${reps.exportReps} times)`,
        unit: 'ms',
        median: round(worst),
        p95: Number.NaN,
        n: xs.length,
        extra: { worst_ms: round(worst), p50_ms: round(percentile(xs, 50)), p99_ms: round(percentile(xs, 99)), over_100_ms: xs.filter((x) => x > 100).length },
      };
    };
    const el = exportHealth('large', L);
    const es = exportHealth('small', S);
    rows.push({
      id: 'W9·health·export',
      title: `the worst /health latency while an export runs (${sizes})`,
      ours: el,
      reference: es,
      ratio: ratioOf(el.median, es.median),
      ratioBasis: 'worst / worst',
      target: { text: `worst ≤ ${TARGETS.w9HealthMs} ms`, met: atMost(Math.max(el.median, es.median), TARGETS.w9HealthMs) },
      notes: [`p50 ${fmtMs(Number(el.extra!.p50_ms))} and ${fmtMs(Number(es.extra!.p50_ms))}, p99 ${fmtMs(Number(el.extra!.p99_ms))} and ${fmtMs(Number(es.extra!.p99_ms))}`],
    });
    return rows;
  },
};

const fmtS = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** The repository's head: its newest commit in the timeline. */
async function head(api: Api, repo: string): Promise<string> {
  const r = await api.json<{ commits: Array<{ sha: string }> }>('GET', `/v1/repos/${repo}/timeline?limit=1`);
  const sha = r.data.commits[0]?.sha;
  if (!sha) throw new Error(`W9: ${repo} has no commit`);
  return sha;
}

// ---------------------------------------------------------------- W12

const W12_QUERIES = ['rollout', 'codename417', '"cache index"', 'migr*'];

export const w12: Workload = {
  id: 'W12',
  title: 'neighbours',
  needs: ['W9'],
  async seed(ctx) {
    await createRepo(ctx, 'w12');
    ctx.shared.set('w12.page', await seedOnePage(ctx.api()));
  },
  async measure(ctx) {
    const st = ctx.shared.get('w9') as W9State;
    const large = st.sizes[1];
    const page = ctx.shared.get('w12.page') as { path: string; content: string };
    // The same one-page repository on a server of its own: a data root that holds nothing else.
    const alone = await startService({ dataRoot: join(ctx.work, 'w12-alone'), apiKey: ctx.apiKey, logFile: join(ctx.work, 'w12-alone.log') });
    const aloneApi = new Api(alone.url, ctx.apiKey, 1);
    try {
      const created = await aloneApi.send('POST', '/v1/repos/w12');
      if (created.status !== 201) throw new Error(`W12: create on the second server → ${created.status}`);
      const again = await seedOnePage(aloneApi);
      if (again.content !== page.content) throw new Error('W12: the two one-page repositories differ');
      const api = ctx.api();
      const beside: number[] = [];
      const without: number[] = [];
      const rounds = ctx.scale.name === 'full' ? 20 : 8;
      for (const q of W12_QUERIES) {
        const a = await api.json<{ total: number }>('GET', `/v1/repos/w12/search?q=${encodeURIComponent(q)}`);
        const b = await aloneApi.json<{ total: number }>('GET', `/v1/repos/w12/search?q=${encodeURIComponent(q)}`);
        if (a.data.total !== b.data.total) throw new Error(`W12: ${q} finds ${a.data.total} beside the large repository, ${b.data.total} alone`);
      }
      for (let r = 0; r < rounds; r++) {
        // Each side first in turn, so that drift weighs on both alike.
        const order = r % 2 === 0 ? ([api, aloneApi] as const) : ([aloneApi, api] as const);
        for (const client of order) {
          for (const q of W12_QUERIES) {
            const { ms } = await client.json('GET', `/v1/repos/w12/search?q=${encodeURIComponent(q)}`);
            (client === api ? beside : without).push(ms);
          }
        }
      }
      const o = summarize(beside);
      const ref = summarize(without);
      const ratio = ratioOf(o.median, ref.median);
      return [
        {
          id: 'W12',
          title: `search in a one-page repository beside the ${large.pages.toLocaleString('en-US')}-page one`,
          ours: { label: 'GET /search in the one-page repository, the large one on the same server', command: `GET /v1/repos/w12/search?q=… (${W12_QUERIES.join(', ')}), in turn`, unit: 'ms', median: o.median, p95: o.p95, n: o.n },
          reference: { label: 'the same search, a server with no other repository', command: 'a second server (same build, same flags) on a data root holding only the one-page repository; rounds alternate', unit: 'ms', median: ref.median, p95: ref.p95, n: ref.n },
          ratio,
          ratioBasis: 'p50/p50',
          target: { text: `p50 ≤ ${TARGETS.w12}×`, met: atMost(ratio, TARGETS.w12) },
          notes: [],
        },
      ];
    } finally {
      aloneApi.close();
      await alone.stop();
    }
  },
};

/** W12's one page: a page of W9's kind (the same words, so the queries match in both). */
async function seedOnePage(api: Api): Promise<{ path: string; content: string }> {
  const page = growthPage(new Rng(1201), 416);
  await api.json<PushResponse>('POST', '/v1/repos/w12/sync/push', pushBody('seed W12', [page]));
  return page;
}
