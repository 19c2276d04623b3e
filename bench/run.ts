/**
 * `npm run bench [-- --only W1,W3 --scale small|full --profile --keep --git-fsync]`
 * `npm run bench -- --readme`   (no run: docs/performance.md's table from bench/results/latest.json, if final)
 *
 * Starts the real server (`node dist/server.mjs`, what `npm start` runs) as a child process on a temporary data root with
 * rate limits off, seeds every repository through the HTTP API, runs workloads W1–W14 with keep-alive
 * clients on loopback, and measures, in the same run and on the same bare repositories, the `git` command
 * doing the equivalent work (on copies where it moves refs) and a bare Hono route (W4's throughput, MEM's
 * peak RSS under the same load). Some workloads compare the service with itself in the same run: W9 a
 * large repository with a small one, W10 many repositories with the first 10, W12 a search beside the large
 * repository with one on a server of its own; W11 runs the Workers build under workerd, W13 a server of its
 * own; CLI times the installed client package's start-up against `node -e 0` (see bench/workloads/). Then BOOT: `npm start` → first /health 200 on a fresh and on the run's
 * data root. Memory is measured per workload: the server's peak RSS while seeding it and while measuring
 * it (VmHWM, reset before each), its RSS and V8 heap after. Prints a table and writes it as JSON to
 * bench/results/latest.json and a timestamped file, with the commit and whether the tree was clean: only
 * a complete full-scale run on a clean tree is final, and only a final one goes into docs/performance.md.
 *
 *   --only W1,W3     run these workloads (their prerequisites are seeded too; W7·page is also W7page)
 *   --scale small    a quick check (a few minutes); default full, the sizes docs/performance.md describes
 *   --profile        run each workload's measurement against a server started with `node --cpu-prof`
 *                    (seeding uses a separate, unprofiled server) and print its hotspots; the figures of a
 *                    profiled run are slower than normal, so such a run does not update latest.json
 *   --git-fsync      make the git reference durable too (-c core.fsync=committed -c core.fsyncMethod=fsync);
 *                    by default git runs with its defaults, which do not fsync loose objects
 *   --keep           keep the temporary data root (its path is printed)
 *   --readme         run nothing: replace the generated table of docs/performance.md with
 *                    bench/results/latest.json's, refused (exit 1, with the reasons) unless that run was final
 */
import { parseArgs } from 'node:util';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, cpus, totalmem, release, loadavg } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Api } from './http.ts';
import { GIT_FSYNC_CONFIG, gitText, setGitConfig } from './git.ts';
import { makePage, Rng } from './content.ts';
import { REPO_ROOT, buildServer, bundleHonoReference, startHonoReference, startService, timeNpmStart, type Child, type HeapFigures } from './procs.ts';
import { median, percentile, round } from './stats.ts';
import { memoryRatio, notFinalBecause, renderTable, spliceTable, TABLE_PAGE, type Results } from './report.ts';
import { honoLoad } from './workloads/read.ts';
import { formatProfile, summarizeProfile, type ProfileSummary } from './profile.ts';
import { SCALES, type Ctx, type Row, type Side, type Workload } from './workloads/types.ts';
import { w1, w2, w7 } from './workloads/push.ts';
import { w3, w4, w5, w6 } from './workloads/read.ts';
import { w8 } from './workloads/search.ts';
import { w7mergeBig, w7page } from './workloads/merge.ts';
import { w9, w12 } from './workloads/growth.ts';
import { w10 } from './workloads/repos.ts';
import { w11 } from './workloads/workers.ts';
import { w13 } from './workloads/events.ts';
import { w14 } from './workloads/git-http.ts';
import { cli } from './workloads/cli.ts';

const WORKLOADS: Workload[] = [w1, w2, w3, w4, w5, w6, w7, w7page, w7mergeBig, w8, w9, w10, w11, w12, w13, w14, cli];
/** BOOT target: `npm start` → first /health 200, seconds. */
const BOOT_TARGET_S = 0.5;

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    scale: { type: 'string', default: 'full' },
    profile: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'git-fsync': { type: 'boolean', default: false },
    readme: { type: 'boolean', default: false },
  },
  allowPositionals: false,
});

if (values.readme) {
  const results = JSON.parse(await readFile(join(REPO_ROOT, 'bench', 'results', 'latest.json'), 'utf8')) as Results;
  const tableFile = join(REPO_ROOT, TABLE_PAGE);
  try {
    await writeFile(tableFile, spliceTable(await readFile(tableFile, 'utf8'), results));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
  process.stderr.write(`${TABLE_PAGE}: benchmark table from bench/results/latest.json (commit ${results.code.commit.slice(0, 12)})\n`);
  process.exit(0);
}

const scaleName = values.scale as string;
if (scaleName !== 'small' && scaleName !== 'full') {
  process.stderr.write(`--scale must be small or full, got ${JSON.stringify(scaleName)}\n`);
  process.exit(2);
}
const scale = SCALES[scaleName];
// `--only w7page`, `W7.page` and `W7·page` name the same workload.
const idKey = (s: string) => s.trim().toUpperCase().replace(/[·.\-_]/g, '');
const ids: string[] = [];
for (const name of values.only ? values.only.split(',').filter((s) => s.trim() !== '') : WORKLOADS.map((w) => w.id)) {
  const w = WORKLOADS.find((x) => idKey(x.id) === idKey(name));
  if (!w) {
    process.stderr.write(`unknown workload ${name}; known: ${WORKLOADS.map((x) => x.id).join(', ')}\n`);
    process.exit(2);
  }
  if (!ids.includes(w.id)) ids.push(w.id);
}
if (values['git-fsync']) setGitConfig(GIT_FSYNC_CONFIG);

const runStarted = performance.now();
const startedAt = new Date();
/** `git status --porcelain` of the tree measured, bench/results/ left out (the results are not code); null if git fails. */
const porcelain = () =>
  gitText(join(REPO_ROOT, '.git'), ['--work-tree', REPO_ROOT, 'status', '--porcelain', '--untracked-files=normal', '--', '.', ':(exclude)bench/results'])
    .then((t) => t.split('\n').filter((l) => l.trim() !== ''))
    .catch(() => null);
const porcelainAtStart = await porcelain();
const log = (m: string) => process.stderr.write(`[bench ${((performance.now() - runStarted) / 1000).toFixed(1).padStart(6)} s] ${m}\n`);

const tmp = await mkdtemp(join(tmpdir(), 'kr-bench-'));
const dataRoot = join(tmp, 'data');
const work = join(tmp, 'work');
await mkdir(work, { recursive: true });
const apiKey = `bench-${randomBytes(16).toString('hex')}`;

let server: Child | null = null;
let api: Api | null = null;
const extraApis: Api[] = [];
let serverStarts = 0;
/** Peak RSS of every server process of this run (per process, since its last peak reset). */
const peaks: Array<{ phase: string; peakKb: number; rssKb: number }> = [];
/** The highest VmHWM read over the whole run (peaks are reset per phase, so this is the max of them). */
let runPeakKb = Number.NaN;
/** RSS and heap of each server process right after it logged `listening`, in MiB. */
const bootRss: number[] = [];
let bootHeap: Record<string, number> | null = null;
const mib = (bytes: number) => round(bytes / 2 ** 20, 1);
const heapMib = (h: HeapFigures | null) =>
  h && { rss_mib: mib(h.rss), heap_used_mib: mib(h.heapUsed), heap_total_mib: mib(h.heapTotal), external_mib: mib(h.external), array_buffers_mib: mib(h.arrayBuffers) };
/** Reads the server's peak since its last reset (folding it into the run's peak), then resets it. */
function takePeak(): { peakKb: number; rssKb: number } {
  const m = server!.memory();
  if (!(m.peakKb <= runPeakKb)) runPeakKb = m.peakKb;
  server!.resetPeak();
  return m;
}
const loadStart = loadavg();

async function start(profileDir?: string): Promise<void> {
  serverStarts++;
  server = await startService({ dataRoot, apiKey, logFile: join(tmp, `server-${serverStarts}.log`), cpuProfDir: profileDir });
  api = new Api(server.url, apiKey, 1);
  const m = server.memory();
  bootRss.push(round(m.rssKb / 1024, 1));
  if (bootHeap === null) bootHeap = heapMib(await server.heap());
  log(`server pid ${server.pid} listening on ${server.url}${profileDir ? ' (cpu profile on)' : ''}; RSS after boot ${round(m.rssKb / 1024, 1)} MiB`);
}

async function stop(phase: string): Promise<void> {
  if (!server) return;
  const m = server.memory();
  if (!(m.peakKb <= runPeakKb)) runPeakKb = m.peakKb;
  peaks.push({ phase, ...m });
  api?.close();
  for (const a of extraApis.splice(0)) a.close();
  await server.stop();
  server = null;
  api = null;
}

/** CLOCK_MONOTONIC in µs, the clock V8 stamps CPU profiles with. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
let profileFromUs = 0;

const ctx: Ctx = {
  scale,
  dataRoot,
  work,
  apiKey,
  server: () => server!,
  resetPeak: () => takePeak(),
  restart: async () => {
    await stop('restart');
    await start();
  },
  api: () => api!,
  newApi: (maxSockets = 1) => {
    const a = new Api(server!.url, apiKey, maxSockets);
    extraApis.push(a);
    return a;
  },
  log,
  honoBundle: () => honoBundle(),
  markProfileStart: () => {
    profileFromUs = nowUs();
  },
  shared: new Map(),
};

const rows: Row[] = [];
/** Per workload: the server's peak RSS while seeding it and while measuring it, and its memory after. */
const memoryAfter: Record<string, Record<string, unknown>> = {};
const seedPeakMib: Record<string, number> = {};
const seedMs: Record<string, number> = {};
const profiles: Record<string, ProfileSummary> = {};
const seeded = new Set<string>();

async function seed(w: Workload): Promise<void> {
  for (const need of w.needs ?? []) await seed(WORKLOADS.find((x) => x.id === need)!);
  if (seeded.has(w.id)) return;
  seeded.add(w.id);
  if (!w.seed) return;
  const t = performance.now();
  log(`${w.id}: seeding through the API`);
  takePeak();
  await w.seed(ctx);
  seedPeakMib[w.id] = round(takePeak().peakKb / 1024, 1);
  seedMs[w.id] = Math.round(performance.now() - t);
  log(`${w.id}: seeded in ${seedMs[w.id]} ms`);
}

/** MEM's reference: the bare Hono route's peak RSS under W4's load, measured in this run. */
interface HonoMem {
  peakMib: number;
  tsxPeakMib?: number;
  extra: Record<string, unknown>;
}
let honoMem = null as HonoMem | null;

async function memoryReference(): Promise<void> {
  const bundle = await honoBundle();
  let pageFile = ctx.shared.get('w4.pageFile') as string | undefined;
  if (!pageFile) {
    pageFile = join(work, 'mem-ref-page.md');
    await writeFile(pageFile, makePage(new Rng(4), 'Reference page').render());
  }
  const { w4Reads, w4Connections, w4Rounds } = scale;
  const measure = async (loader: 'bundle' | 'tsx') => {
    const ref = await startHonoReference(pageFile!, join(tmp, `hono-mem-${loader}.log`), { bundle, loader });
    try {
      await honoLoad(`${ref.url}/x`, 200, w4Connections, {});
      for (let i = 0; i < w4Rounds; i++) await honoLoad(`${ref.url}/x`, w4Reads, w4Connections, {});
      return { peakMib: round(ref.memory().peakKb / 1024, 1), after: heapMib(await ref.heap()) };
    } finally {
      await ref.stop();
    }
  };
  const bundled = await measure('bundle');
  const tsx = await measure('tsx');
  honoMem = { peakMib: bundled.peakMib, tsxPeakMib: tsx.peakMib, extra: { after_load: bundled.after, load: `200 + ${w4Rounds} × ${w4Reads} reads at concurrency ${w4Connections}`, tsx_peak_mib: tsx.peakMib } };
  log(`MEM reference: bare Hono peak RSS ${bundled.peakMib} MiB (through tsx ${tsx.peakMib} MiB)`);
}

let honoBundlePath: string | undefined;
async function honoBundle(): Promise<string> {
  honoBundlePath ??= await bundleHonoReference(join(work, 'hono-ref.mjs'));
  return honoBundlePath;
}

/** BOOT: `npm start` → first /health 200, with the bundle fresh, on an empty data root and on this run's. */
async function bootRows(): Promise<void> {
  buildServer();
  const reps = scale.name === 'full' ? 7 : 3;
  const measure = async (which: 'fresh' | 'existing') => {
    const ms: number[] = [];
    const breakdown: unknown[] = [];
    for (let i = 0; i < reps; i++) {
      const root = which === 'fresh' ? await mkdtemp(join(tmp, 'boot-')) : dataRoot;
      const r = await timeNpmStart({ dataRoot: which === 'fresh' ? join(root, 'data') : root, apiKey, logFile: join(tmp, `boot-${which}.log`) });
      ms.push(r.ms);
      breakdown.push(r.bootMs);
      if (which === 'fresh') await rm(root, { recursive: true, force: true });
    }
    const p50 = round(median(ms), 1);
    const side: Side = {
      label: which === 'fresh' ? 'npm start, empty data root' : `npm start, this run's data root`,
      command: 'spawn `npm start` (bundle already fresh) → first GET /health 200, polled every 2 ms',
      unit: 'ms',
      median: p50,
      p95: round(percentile(ms, 95), 1),
      n: ms.length,
      extra: { all_ms: ms.map((x) => round(x, 1)), server_boot_ms: breakdown },
    };
    rows.push({
      id: which === 'fresh' ? 'BOOT·fresh' : 'BOOT',
      title: which === 'fresh' ? '`npm start` → first /health 200, new data root (database created)' : '`npm start` → first /health 200, existing data root (every workload\'s repositories)',
      ours: side,
      reference: null,
      ratio: null,
      ratioBasis: '—',
      target: { text: `p50 ≤ ${BOOT_TARGET_S} s`, met: p50 <= BOOT_TARGET_S * 1000 },
      notes: [`server's own boot_ms (load, open, total) of the first start: ${JSON.stringify(breakdown[0])}`],
    });
    log(`BOOT ${which}: npm start → /health 200 p50 ${p50} ms over ${ms.length}`);
  };
  await measure('fresh');
  await measure('existing');
}

let failed = false;
try {
  await start();
  for (const id of ids) {
    const w = WORKLOADS.find((x) => x.id === id)!;
    await seed(w);
    let profileDir: string | undefined;
    if (values.profile) {
      await stop(`seed before ${w.id}`);
      profileDir = join(tmp, 'profiles', w.id);
      await mkdir(profileDir, { recursive: true });
      await start(profileDir);
    }
    log(`${w.id}: measuring`);
    const t = performance.now();
    profileFromUs = nowUs();
    takePeak();
    rows.push(...(await w.measure(ctx)));
    const profileToUs = nowUs();
    const m = takePeak();
    memoryAfter[w.id] = {
      seed_peak_mib: seedPeakMib[w.id] ?? null,
      measure_peak_mib: round(m.peakKb / 1024, 1),
      after: heapMib(await server!.heap()),
    };
    log(`${w.id}: measured in ${Math.round(performance.now() - t)} ms; server peak RSS while measuring ${round(m.peakKb / 1024, 1)} MiB (run so far ${round(runPeakKb / 1024, 1)} MiB)`);
    if (profileDir) {
      await stop(`measure ${w.id} (profiled)`);
      const file = (await readdir(profileDir)).find((f) => f.endsWith('.cpuprofile'));
      if (file) {
        profiles[w.id] = summarizeProfile(join(profileDir, file), 12, { fromUs: profileFromUs, toUs: profileToUs });
        process.stderr.write(`\n${w.id} ${formatProfile(profiles[w.id]!)}\n\n`);
      } else log(`${w.id}: no profile was written`);
      await start();
    }
  }
  await stop('end of run');
  await memoryReference();
  await bootRows();
} catch (e) {
  failed = true;
  process.stderr.write(`\nbenchmark failed: ${(e as Error).stack ?? String(e)}\n`);
  await stop('failure').catch(() => undefined);
}

const peakKb = runPeakKb;
if (Number.isFinite(peakKb)) {
  const ours = round(peakKb / 1024, 1);
  const ref = honoMem?.peakMib;
  const ratio = memoryRatio(ours, ref);
  rows.push({
    id: 'MEM',
    title: 'peak memory of the server (whole run, seeding included)',
    ours: {
      label: 'server peak RSS (VmHWM)',
      command: '/proc/‹server pid›/status VmHWM, the highest over the run (reset per phase, see extra.per_workload)',
      unit: 'MiB',
      median: ours,
      p95: ours,
      n: peaks.length,
      extra: {
        after_boot: { rss_mib: bootRss, ...(bootHeap ?? {}) },
        cache_budget_mib: process.env.SERVICE_CACHE_MB ?? 'default',
        per_process: peaks.map((p) => ({ phase: p.phase, peak_since_reset_mib: round(p.peakKb / 1024, 1), rss_mib: round(p.rssKb / 1024, 1) })),
        per_workload: memoryAfter,
      },
    },
    reference: honoMem
      ? {
          label: 'bare Hono route, same load as W4, peak RSS',
          command: 'node on an esbuild bundle of bench/hono-ref.ts (as the server runs); /proc/‹pid›/status VmHWM',
          unit: 'MiB',
          median: honoMem.peakMib,
          p95: honoMem.peakMib,
          n: 1,
          extra: honoMem.extra,
        }
      : null,
    ratio,
    ratioBasis: 'peak / peak',
    // Retired as a target: what this disk and Node allow sits above it; recorded for context.
    target: { text: '(context)', met: null },
    notes: [
      `${(peakKb * 1024 / 1e6).toFixed(1)} MB (10^6 bytes); after boot ${bootRss[0]} MiB`,
      ...(honoMem?.tsxPeakMib !== undefined ? [`the same reference run through tsx (as the harness once ran it) peaked at ${honoMem.tsxPeakMib} MiB`] : []),
    ],
  });
  if (honoMem?.tsxPeakMib !== undefined) {
    // The reference as the harness once ran it (TypeScript through tsx, which adds about 30 MiB): the older
    // figures' "87 MiB" came from it (docs/performance.md "What each row measures", MEM·tsx).
    const tsxRatio = memoryRatio(ours, honoMem.tsxPeakMib);
    rows.push({
      id: 'MEM·tsx',
      title: 'MEM against the reference run through tsx, as the harness once ran it (context)',
      ours: { label: 'server peak RSS (VmHWM)', command: 'as MEM', unit: 'MiB', median: ours, p95: ours, n: peaks.length },
      reference: {
        label: 'bare Hono route through tsx, same load, peak RSS',
        command: 'node --import tsx bench/hono-ref.ts; /proc/‹pid›/status VmHWM',
        unit: 'MiB',
        median: honoMem.tsxPeakMib,
        p95: honoMem.tsxPeakMib,
        n: 1,
      },
      ratio: tsxRatio,
      ratioBasis: 'peak / peak',
      target: { text: '(context)', met: null },
      notes: [],
    });
  }
}

const durationS = round((performance.now() - runStarted) / 1000, 1);
const command = `npm run bench -- --scale ${scale.name}${values.only ? ` --only ${ids.join(',')}` : ''}${values['git-fsync'] ? ' --git-fsync' : ''}${values.profile ? ' --profile' : ''}`;
const table = renderTable(rows);
process.stdout.write(`\n${table}\n`);
for (const r of rows) for (const n of r.notes) process.stdout.write(`- ${r.id}: ${n}\n`);
process.stdout.write(
  `\n${command} — ${durationS} s on ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; ` +
    `load average ${loadStart[0]!.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end\n`,
);

// Which code was measured: the commit, and whether the tree had uncommitted changes at the start or the end.
const head = await gitText(join(REPO_ROOT, '.git'), ['rev-parse', 'HEAD']).catch(() => 'unknown');
const porcelainAtEnd = await porcelain();
const porcelainLines = porcelainAtStart === null || porcelainAtEnd === null ? [] : [...new Set([...porcelainAtStart, ...porcelainAtEnd])];
const code = { commit: head, porcelain: porcelainLines, dirty: porcelainAtStart === null || porcelainAtEnd === null ? null : porcelainLines.length > 0 };
const allWorkloads = WORKLOADS.every((w) => ids.includes(w.id));
const whyNotFinal = notFinalBecause({ code, completed: !failed, profiled: values.profile, scale: scale.name, all_workloads: allWorkloads });
process.stdout.write(whyNotFinal.length ? `\nNOT FINAL: ${whyNotFinal.join('; ')}\n` : `\nfinal: a clean tree at ${head.slice(0, 12)}\n`);

const report = {
  command,
  code,
  final: whyNotFinal.length === 0,
  not_final_because: whyNotFinal,
  scale: scale.name,
  sizes: scale,
  workloads: ids,
  all_workloads: allWorkloads,
  started_at: startedAt.toISOString(),
  duration_s: durationS,
  completed: !failed,
  profiled: values.profile,
  git_reference_fsync: values['git-fsync'],
  machine: {
    node: process.version,
    git: await gitText('.', ['--version']).catch(() => 'unknown'),
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model,
    memory_gib: round(totalmem() / 2 ** 30, 1),
    kernel: release(),
    loadavg_1_5_15_at_start: loadStart.map((x) => round(x, 2)),
    loadavg_1_5_15_at_end: loadavg().map((x) => round(x, 2)),
  },
  seed_ms: seedMs,
  rows,
  table_markdown: table,
  profiles,
};
const resultsDir = join(REPO_ROOT, 'bench', 'results');
await mkdir(resultsDir, { recursive: true });
const stamp = startedAt.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
const suffix = `${scale.name}${values.profile ? '-profile' : ''}${failed ? '-failed' : ''}`;
const json = `${JSON.stringify(report, null, 2)}\n`;
await writeFile(join(resultsDir, `${stamp}-${suffix}.json`), json);
if (!values.profile && !failed) await writeFile(join(resultsDir, 'latest.json'), json);
log(`wrote bench/results/${stamp}-${suffix}.json${!values.profile && !failed ? ' and bench/results/latest.json' : ''}`);

if (values.keep || values.profile || failed) log(`data root and logs kept in ${tmp}`);
else await rm(tmp, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
