import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import { makePage, Rng, type PageModel } from '../content.ts';
import { encodePath, pushBody, type PushResponse } from '../http.ts';
import { timedGit } from '../git.ts';
import { startHonoReference } from '../procs.ts';
import { median, percentile, round, summarize } from '../stats.ts';
import { createRepo, repeat, repoDir, type Ctx, type Side, type Workload } from './types.ts';
import { TARGETS, atLeast } from '../targets.ts';

/** W3 pull-full, W4 read-page, W5 history, W6 diff-blame: reads against the git command and bare Hono. */

function side(label: string, command: string, ms: number[], extra?: Record<string, unknown>): Side {
  const s = summarize(ms);
  return { label, command, unit: 'ms', median: s.median, p95: s.p95, n: s.n, extra: { mean: s.mean, min: s.min, max: s.max, ...extra } };
}

// ---------------------------------------------------------------- W3

interface W3State {
  paths: string[];
}

export const w3: Workload = {
  id: 'W3',
  title: 'pull-full',
  async seed(ctx) {
    await createRepo(ctx, 'w3');
    const rng = new Rng(301);
    const n = ctx.scale.w3Pages;
    const paths: string[] = [];
    for (let start = 0; start < n; start += 100) {
      const files = [];
      for (let i = start; i < Math.min(n, start + 100); i++) {
        const path = `area-${i % 10}/page-${String(i + 1).padStart(4, '0')}.md`;
        paths.push(path);
        files.push({ path, content: makePage(rng, `Page ${i + 1}`).render() });
      }
      await ctx.api().json<PushResponse>('POST', '/v1/repos/w3/sync/push', pushBody(`seed W3 ${start}`, files));
    }
    ctx.shared.set('w3', { paths } satisfies W3State);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w3') as W3State;
    const n = st.paths.length;
    const api = ctx.api();
    let bytes = 0;
    let first = NaN;
    const ms = await repeat(
      ctx.scale.w3Reps,
      async (i) => {
        const r = await api.send('GET', '/v1/repos/w3/sync/pull');
        if (r.status !== 200) throw new Error(`W3: pull → ${r.status}`);
        if (i === -1) {
          first = r.ms;
          const body = JSON.parse(r.body.toString('utf8')) as { files: unknown[] };
          if (body.files.length !== n) throw new Error(`W3: pull returned ${body.files.length} files, expected ${n}`);
          bytes = r.body.length;
        }
        return r.ms;
      },
      { warmup: 1, budgetMs: 120_000 },
    );
    // Cold: the first pull after a server restart (the git store's caches empty; the OS page cache warm, as
    // it is for git below).
    const coldMs: number[] = [];
    for (let i = 0; i < coldReps(ctx); i++) {
      await ctx.restart();
      const r = await ctx.api().send('GET', '/v1/repos/w3/sync/pull');
      if (r.status !== 200) throw new Error(`W3: cold pull → ${r.status}`);
      coldMs.push(r.ms);
    }
    const inputFile = join(ctx.work, 'w3-cat-file.in');
    await writeFile(inputFile, st.paths.map((p) => `main:${p}\n`).join(''));
    const refRun = await timedGit(repoDir(ctx, 'w3'), ['cat-file', '--batch'], ctx.scale.w3RefReps, join(ctx.work, 'scratch-w3'), { inputFile });
    const refMs = refRun.ms;
    const refBytes = refRun.output.length;
    const blobs = (refRun.output.toString('latin1').match(/^[0-9a-f]{40} blob \d+$/gm) ?? []).length;
    if (blobs !== n) throw new Error(`W3: git cat-file --batch printed ${blobs} blobs, expected ${n}`);
    const ours = side(`GET /sync/pull (${n} pages)`, 'GET /v1/repos/w3/sync/pull', ms, { first_ms: round(first), response_bytes: bytes });
    const ref = side(
      `git cat-file --batch (${n} pages)`,
      `git cat-file --batch < (${n} lines "main:<path>") > file, whole process timed in bash`,
      refMs,
      { output_bytes: refBytes },
    );
    const ratio = ours.median / ref.median;
    const cold = side(`GET /sync/pull (${n} pages), first after a restart`, 'restart the server, then GET /v1/repos/w3/sync/pull once', coldMs);
    return [
      {
        id: 'W3',
        title: `pull-full (${n} pages), warm: caches filled by an earlier pull`,
        ours,
        reference: ref,
        ratio,
        ratioBasis: 'p50/p50',
        target: { text: 'p50 ≤ 1.0×', met: ratio <= 1.0 },
        notes: ['one untimed warm-up pull on each side; the first pull is recorded as first_ms'],
      },
      {
        id: 'W3·cold',
        title: `pull-full (${n} pages), cold: the first pull after a server restart (×${coldMs.length})`,
        ours: cold,
        reference: ref,
        ratio: cold.median / ref.median,
        ratioBasis: 'p50/p50',
        target: { text: '(measured)', met: null },
        notes: [],
      },
    ];
  },
};

/** Cold requests: each after its own server restart. */
const coldReps = (ctx: Ctx) => (ctx.scale.name === 'full' ? 5 : 2);

// ---------------------------------------------------------------- W4

interface LoadRun {
  rps: number;
  latencies: number[];
  errors: number;
  non2xx: number;
}

/** An autocannon run of `amount` requests at `connections` concurrency. */
export function honoLoad(url: string, amount: number, connections: number, headers: Record<string, string>): Promise<LoadRun> {
  return load(url, amount, connections, headers);
}

function load(url: string, amount: number, connections: number, headers: Record<string, string>): Promise<LoadRun> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    let last = 0;
    const started = performance.now();
    // autocannon ends an `amount` run on its next one-second tick, so its own duration is useless for
    // short runs: the rate is timed here, from the start to the last response.
    const inst = autocannon({ url, amount, connections, pipelining: 1, headers, timeout: 30 }, (err, res) => {
      if (err) return reject(err);
      resolve({ rps: (latencies.length / (last - started)) * 1000, latencies, errors: res.errors + res.timeouts, non2xx: res.non2xx });
    });
    inst.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
      last = performance.now();
    });
  });
}

export const w4: Workload = {
  id: 'W4',
  title: 'read-page',
  needs: ['W3'],
  async measure(ctx) {
    const st = ctx.shared.get('w3') as W3State;
    const path = st.paths[0]!;
    const page = await ctx.api().send('GET', `/v1/repos/w3/pages/${encodePath(path)}`);
    if (page.status !== 200) throw new Error(`W4: page read → ${page.status}`);
    const pageFile = join(ctx.work, 'w4-page.md');
    await writeFile(pageFile, page.body);
    ctx.shared.set('w4.pageFile', pageFile);
    const hono = await startHonoReference(pageFile, join(ctx.work, 'hono-ref.log'), { bundle: await ctx.honoBundle() });
    const { w4Reads, w4Connections, w4Rounds } = ctx.scale;
    const oursUrl = `${ctx.server().url}/v1/repos/w3/pages/${encodePath(path)}`;
    const auth = { authorization: `Bearer ${ctx.apiKey}` };
    const ours: LoadRun[] = [];
    const refs: LoadRun[] = [];
    let honoPeakKb = NaN;
    try {
      const check = await fetch(`${hono.url}/x`);
      if ((await check.text()) !== page.body.toString('utf8')) throw new Error('W4: the reference serves different bytes');
      // Warm both up, then alternate rounds so drift hits both sides alike.
      await load(oursUrl, 200, w4Connections, auth);
      await load(`${hono.url}/x`, 200, w4Connections, {});
      for (let i = 0; i < w4Rounds; i++) {
        ours.push(await load(oursUrl, w4Reads, w4Connections, auth));
        refs.push(await load(`${hono.url}/x`, w4Reads, w4Connections, {}));
      }
      honoPeakKb = hono.memory().peakKb;
    } finally {
      await hono.stop();
    }
    const bad = [...ours, ...refs].reduce((a, r) => a + r.errors + r.non2xx, 0);
    if (bad) throw new Error(`W4: ${bad} failed requests`);
    const mk = (runs: LoadRun[], label: string, command: string): Side => {
      const lat = runs.flatMap((r) => r.latencies);
      const rps = runs.map((r) => r.rps);
      return {
        label,
        command,
        unit: 'req/s',
        median: round(median(rps), 0),
        p95: round(percentile(lat, 95)),
        p95Unit: 'ms (request latency)',
        n: runs.length,
        extra: {
          rounds_rps: rps.map((x) => round(x, 0)),
          latency_p50_ms: round(percentile(lat, 50)),
          latency_p95_ms: round(percentile(lat, 95)),
          requests: lat.length,
        },
      };
    };
    const o = mk(ours, `GET /pages/<path>, ${w4Reads} reads at concurrency ${w4Connections}`, `autocannon -c ${w4Connections} -a ${w4Reads} ${oursUrl.replace(ctx.server().url, '')}`);
    const r = mk(refs, 'bare Hono route, same bytes, @hono/node-server', `new Hono().get('/x', c => c.text(<same ${page.body.length} bytes>)) in its own child process; autocannon -c ${w4Connections} -a ${w4Reads}`);
    r.extra = { ...r.extra, peak_rss_mib: round(honoPeakKb / 1024, 1) };
    const ratio = o.median / r.median;
    return [
      {
        id: 'W4',
        title: `read-page (${w4Reads} reads at concurrency ${w4Connections}, ${w4Rounds} round${w4Rounds > 1 ? 's' : ''})`,
        ours: o,
        reference: r,
        ratio,
        ratioBasis: 'req/s, higher is better',
        target: { text: `≥ ${TARGETS.w4OverHono}× req/s`, met: atLeast(ratio, TARGETS.w4OverHono) },
        notes: ['median = req/s (median over rounds, each timed from first request to last response); p95 = request latency'],
      },
    ];
  },
};

// ---------------------------------------------------------------- W5 / W6

const HOT = 'topics/hot.md';
const BLAME = 'topics/blame.md';

interface W5State {
  commits: number;
  hotTouches: number;
  blameTouches: number;
}

/** Which page commit `k` of the W5 repository touches: 1 in 21 the W5 page, 2 in 21 the W6 page. */
function target(k: number): 'hot' | 'blame' | number {
  const r = k % 21;
  if (r === 10) return 'hot';
  if (r === 3 || r === 17) return 'blame';
  return k % 50;
}

export const w5: Workload = {
  id: 'W5',
  title: 'history',
  async seed(ctx) {
    await createRepo(ctx, 'w5');
    const rng = new Rng(501);
    const fillers = new Map<number, PageModel>();
    const hot = makePage(rng, 'Hot page');
    const blame = makePage(rng, 'Blame page', { minSections: 2, maxSections: 2, minBytes: 600, maxBytes: 900 });
    const extraHeadings = ['Rollout plan', 'Risks and mitigations', 'Metrics to watch', 'Open questions', 'Follow-ups', 'Runbook', 'Ownership', 'Glossary'];
    let hotTouches = 0;
    let blameTouches = 0;
    const api = ctx.api();
    const started = performance.now();
    for (let k = 0; k < ctx.scale.w5Commits; k++) {
      const t = target(k);
      let path: string;
      let content: string;
      if (t === 'hot') {
        path = HOT;
        content = hotTouches++ === 0 ? hot.render() : hot.touch(rng, k);
      } else if (t === 'blame') {
        path = BLAME;
        const n = blameTouches++;
        // A section is added every 25 touches, so blame has distinct introducing commits to find.
        if (n === 0) content = blame.render();
        else if (n % 25 === 0 && n / 25 <= extraHeadings.length) content = blame.addSection(rng, extraHeadings[n / 25 - 1]!);
        else content = blame.touch(rng, k);
      } else {
        path = `notes/filler-${String(t).padStart(2, '0')}.md`;
        let p = fillers.get(t);
        if (!p) {
          fillers.set(t, (p = makePage(rng, `Filler ${t}`, { minBytes: 1024, maxBytes: 2048 })));
          content = p.render();
        } else content = p.touch(rng, k);
      }
      await api.json<PushResponse>('POST', '/v1/repos/w5/sync/push', pushBody(`W5 commit ${k + 1}`, [{ path, content }]));
      if ((k + 1) % 500 === 0) ctx.log(`W5 seed: ${k + 1}/${ctx.scale.w5Commits} commits (${Math.round(performance.now() - started)} ms)`);
    }
    ctx.shared.set('w5', { commits: ctx.scale.w5Commits, hotTouches, blameTouches } satisfies W5State);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w5') as W5State;
    const api = ctx.api();
    const url = `/v1/repos/w5/history/${encodePath(HOT)}?limit=50`;
    let oursShas: string[] = [];
    let first = NaN;
    const ms = await repeat(
      ctx.scale.w5Reps,
      async (i) => {
        const r = await api.json<{ commits: Array<{ sha: string }> }>('GET', url);
        if (i === -1) {
          first = r.ms;
          oursShas = r.data.commits.map((c) => c.sha);
        }
        return r.ms;
      },
      { warmup: 1, budgetMs: 60_000 },
    );
    const args = ['log', '--format=%H', '-n', '50', 'main', '--', HOT];
    const refRun = await timedGit(repoDir(ctx, 'w5'), args, ctx.scale.w5RefReps, join(ctx.work, 'scratch-w5'));
    const refMs = refRun.ms;
    const refShas = refRun.output.toString('utf8').trim().split('\n');
    const same = oursShas.length === refShas.length && oursShas.every((s, i) => s === refShas[i]);
    if (!same) ctx.log(`W5: WARNING the service's history (${oursShas.length}) differs from git log (${refShas.length})`);
    const ours = side('GET /history/<path>?limit=50', `GET ${url}`, ms, { first_ms: round(first), commits_returned: oursShas.length });
    ctx.shared.set('w5.ours', ours);
    const ref = side('git log -n 50 -- <path>', `git log --format=%H -n 50 main -- ${HOT} (timed in bash)`, refMs);
    const ratio = ours.median / ref.median;
    return [
      {
        id: 'W5',
        title: `history (limit 50; page touched by ${st.hotTouches} of ${st.commits} commits)`,
        ours,
        reference: ref,
        ratio,
        ratioBasis: 'p50/p50',
        target: { text: 'p50 ≤ 1.0×', met: ratio <= 1.0 },
        notes: [same ? 'same 50 shas as git log' : 'MISMATCH: the service and git log list different commits'],
      },
    ];
  },
};

export const w6: Workload = {
  id: 'W6',
  title: 'diff-blame',
  needs: ['W5'],
  async measure(ctx) {
    const st = ctx.shared.get('w5') as W5State;
    const api = ctx.api();
    let w5 = ctx.shared.get('w5.ours') as Side | undefined;
    if (!w5) {
      // W5 was not selected: time its request here, as W6 is judged against it.
      const url = `/v1/repos/w5/history/${encodePath(HOT)}?limit=50`;
      w5 = side('GET /history/<path>?limit=50 (W5)', `GET ${url}`, await repeat(ctx.scale.w5Reps, async () => (await api.json('GET', url)).ms, { warmup: 1 }));
    }
    const url = `/v1/repos/w5/diff/${encodePath(BLAME)}?blame=true`;
    type Diff = { sections: Array<{ introduced_by?: unknown }>; truncated?: boolean };
    // The first request reads and parses every revision; the timed ones after it find them cached.
    const cold = await api.json<Diff>('GET', url);
    const first = cold.ms;
    const sections = cold.data.sections.length;
    const blamed = cold.data.sections.filter((s) => s.introduced_by).length;
    if (cold.data.truncated) ctx.log('W6: WARNING the diff says truncated: true (blame abandoned)');
    ctx.markProfileStart();
    const ms = await repeat(ctx.scale.w6Reps, async () => (await api.json<Diff>('GET', url)).ms, { budgetMs: 120_000 });
    const ours = side('GET /diff/<path>?blame=true', `GET ${url}`, ms, { first_ms: round(first), sections, sections_with_introduced_by: blamed });
    // Cold: the first diff of the page after a server restart (every revision read and parsed, blame walked).
    const coldMs: number[] = [];
    for (let i = 0; i < coldReps(ctx); i++) {
      await ctx.restart();
      coldMs.push((await ctx.api().json<Diff>('GET', url)).ms);
    }
    const coldSide = side('GET /diff/<path>?blame=true, first after a restart', `restart the server, then GET ${url} once`, coldMs);
    const ratio = ours.median / w5.median;
    const ctxArgs = ['log', '--format=%H', '-n', '200', 'main', '--', BLAME];
    const ctxMs = (await timedGit(repoDir(ctx, 'w5'), ctxArgs, 10, join(ctx.work, 'scratch-w6'))).ms;
    const gitCtx = side('git log -n 200 -- <path> (context)', `git log --format=%H -n 200 main -- ${BLAME} (timed in bash)`, ctxMs);
    return [
      {
        id: 'W6',
        title: `diff-blame (page with ${st.blameTouches} commits), warm: parses and blame cached`,
        ours,
        reference: { ...w5, label: `W5, this service's history request` },
        ratio,
        ratioBasis: 'p50 / W5 p50',
        target: { text: '< 2× W5', met: ratio < 2 },
        notes: [
          `first request after seeding ${first.toFixed(1)} ms; ${blamed} of ${sections} sections carry introduced_by`,
        ],
      },
      {
        id: 'W6·cold',
        title: `diff-blame, cold: the page's first diff after a server restart (×${coldMs.length})`,
        ours: coldSide,
        reference: gitCtx,
        ratio: coldSide.median / gitCtx.median,
        ratioBasis: 'p50 / git log -n 200 p50',
        target: { text: '(measured)', met: null },
        notes: [],
      },
      {
        id: 'W6·ctx',
        title: 'W6 against git log -n 200 of the same page (context only)',
        ours,
        reference: gitCtx,
        ratio: ours.median / gitCtx.median,
        ratioBasis: 'p50/p50',
        target: { text: '(context)', met: null },
        notes: [],
      },
    ];
  },
};

