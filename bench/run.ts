/**
 * `npm run bench [-- --only W1,W3 --scale small|full --profile --keep --git-fsync]`
 *
 * Starts the real server (`node dist/server.mjs`, what `npm start` runs) as a child process on a temporary data root with
 * rate limits off, seeds every repository through the HTTP API, runs workloads W1–W7 of issue 7 with
 * keep-alive clients on loopback, and measures, in the same run and on the same bare repositories, the
 * `git` command doing the equivalent work (on copies where it moves refs) and, for W4, a bare Hono route.
 * Prints a table and writes it as JSON to bench/results/latest.json and a timestamped file.
 *
 *   --only W1,W3     run these workloads (their prerequisites are seeded too)
 *   --scale small    a quick check (under a minute); default full, the sizes of issue 7
 *   --profile        run each workload's measurement against a server started with `node --cpu-prof`
 *                    (seeding uses a separate, unprofiled server) and print its hotspots; the figures of a
 *                    profiled run are slower than normal, so such a run does not update latest.json
 *   --git-fsync      make the git reference durable too (-c core.fsync=committed -c core.fsyncMethod=fsync);
 *                    by default git runs with its defaults, which do not fsync loose objects
 *   --keep           keep the temporary data root (its path is printed)
 */
import { parseArgs } from 'node:util';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, cpus, totalmem, release, loadavg } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Api } from './http.ts';
import { GIT_FSYNC_CONFIG, gitText, setGitConfig } from './git.ts';
import { REPO_ROOT, startService, type Child } from './procs.ts';
import { fmtInt, fmtMs, fmtRatio, round } from './stats.ts';
import { formatProfile, summarizeProfile, type ProfileSummary } from './profile.ts';
import { SCALES, type Ctx, type Row, type Side, type Workload } from './workloads/types.ts';
import { w1, w2, w7 } from './workloads/push.ts';
import { w3, w4, w5, w6 } from './workloads/read.ts';
import { w8 } from './workloads/search.ts';

const WORKLOADS: Workload[] = [w1, w2, w3, w4, w5, w6, w7, w8];
const MEMORY_LIMIT_BYTES = 200_000_000;

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    scale: { type: 'string', default: 'full' },
    profile: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'git-fsync': { type: 'boolean', default: false },
  },
  allowPositionals: false,
});

const scaleName = values.scale as string;
if (scaleName !== 'small' && scaleName !== 'full') {
  process.stderr.write(`--scale must be small or full, got ${JSON.stringify(scaleName)}\n`);
  process.exit(2);
}
const scale = SCALES[scaleName];
const ids = values.only ? values.only.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean) : WORKLOADS.map((w) => w.id);
for (const id of ids) {
  if (!WORKLOADS.some((w) => w.id === id)) {
    process.stderr.write(`unknown workload ${id}; known: ${WORKLOADS.map((w) => w.id).join(', ')}\n`);
    process.exit(2);
  }
}
if (values['git-fsync']) setGitConfig(GIT_FSYNC_CONFIG);

const runStarted = performance.now();
const startedAt = new Date();
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
/** Peak RSS of every server process of this run (one, unless --profile restarts it). */
const peaks: Array<{ phase: string; peakKb: number; rssKb: number }> = [];
/** RSS of each server process right after it logged `listening`, in MiB. */
const bootRss: number[] = [];
const loadStart = loadavg();

async function start(profileDir?: string): Promise<void> {
  serverStarts++;
  server = await startService({ dataRoot, apiKey, logFile: join(tmp, `server-${serverStarts}.log`), cpuProfDir: profileDir });
  api = new Api(server.url, apiKey, 1);
  const m = server.memory();
  bootRss.push(round(m.rssKb / 1024, 1));
  log(`server pid ${server.pid} listening on ${server.url}${profileDir ? ' (cpu profile on)' : ''}; RSS after boot ${round(m.rssKb / 1024, 1)} MiB`);
}

async function stop(phase: string): Promise<void> {
  if (!server) return;
  const m = server.memory();
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
  api: () => api!,
  newApi: (maxSockets = 1) => {
    const a = new Api(server!.url, apiKey, maxSockets);
    extraApis.push(a);
    return a;
  },
  log,
  markProfileStart: () => {
    profileFromUs = nowUs();
  },
  shared: new Map(),
};

const rows: Row[] = [];
const memoryAfter: Record<string, { peak_mib: number; rss_mib: number }> = {};
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
  await w.seed(ctx);
  seedMs[w.id] = Math.round(performance.now() - t);
  log(`${w.id}: seeded in ${seedMs[w.id]} ms`);
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
    rows.push(...(await w.measure(ctx)));
    const profileToUs = nowUs();
    const m = server!.memory();
    memoryAfter[w.id] = { peak_mib: round(m.peakKb / 1024, 1), rss_mib: round(m.rssKb / 1024, 1) };
    log(`${w.id}: measured in ${Math.round(performance.now() - t)} ms; server peak RSS so far ${memoryAfter[w.id]!.peak_mib} MiB`);
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
} catch (e) {
  failed = true;
  process.stderr.write(`\nbenchmark failed: ${(e as Error).stack ?? String(e)}\n`);
  await stop('failure').catch(() => undefined);
}

const peakKb = Math.max(...peaks.map((p) => p.peakKb));
const hono = rows.find((r) => r.id === 'W4')?.reference?.extra?.peak_rss_mib as number | undefined;
const peakBytes = peakKb * 1024;
const memSide: Side = {
  label: 'server peak RSS (VmHWM)',
  command: '/proc/<server pid>/status VmHWM, whole run (seeding included)',
  unit: 'MiB',
  median: round(peakKb / 1024, 1),
  p95: round(peakKb / 1024, 1),
  n: peaks.length,
  extra: { rss_after_boot_mib: bootRss, per_process: peaks.map((p) => ({ ...p, peak_mib: round(p.peakKb / 1024, 1) })), after_each_workload: memoryAfter },
};
if (Number.isFinite(peakKb)) {
  rows.push({
    id: 'MEM',
    title: 'peak memory of the server',
    ours: memSide,
    reference:
      hono !== undefined
        ? { label: 'bare Hono reference (W4) peak RSS', command: '/proc/<reference pid>/status VmHWM', unit: 'MiB', median: hono, p95: hono, n: 1 }
        : null,
    ratio: null,
    ratioBasis: '—',
    target: { text: '< 200 MB', met: peakBytes < MEMORY_LIMIT_BYTES },
    notes: [`${(peakBytes / 1e6).toFixed(1)} MB (10^6 bytes)`],
  });
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

// Which code was measured: the commit, and whether lib/, functions/ or server.ts had uncommitted changes.
const head = await gitText(join(REPO_ROOT, '.git'), ['rev-parse', 'HEAD']).catch(() => 'unknown');
const dirty = await gitText(join(REPO_ROOT, '.git'), ['--work-tree', REPO_ROOT, 'status', '--porcelain', '--', 'lib', 'functions', 'server.ts', 'schema'])
  .then((s) => s !== '')
  .catch(() => null);

const report = {
  command,
  code: { commit: head, uncommitted_changes_in_lib_functions_schema_server: dirty },
  scale: scale.name,
  sizes: scale,
  workloads: ids,
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

function renderTable(rs: Row[]): string {
  const head = ['Workload', 'Ours p50', 'Ours p95', 'Reference', 'Ref p50', 'Ref p95', 'Ours/ref', 'Target', 'Met'];
  const cell = (s: Side, which: 'median' | 'p95') => {
    const v = s[which];
    if (which === 'p95' && s.p95Unit) return `${fmtMs(v)} lat.`;
    if (s.unit === 'req/s') return `${fmtInt(v)} req/s`;
    if (s.unit === 'MiB') return which === 'median' ? `${v.toFixed(1)} MiB` : '—';
    return fmtMs(v);
  };
  const lines = rs.map((r) => [
    `${r.id} ${r.title}`,
    cell(r.ours, 'median'),
    cell(r.ours, 'p95'),
    r.reference?.label ?? '—',
    r.reference ? cell(r.reference, 'median') : '—',
    r.reference ? cell(r.reference, 'p95') : '—',
    r.ratio === null ? '—' : `${fmtRatio(r.ratio)}${r.ratioBasis === 'p50/p50' ? '' : ` (${r.ratioBasis})`}`,
    r.target.text,
    r.target.met === null ? '—' : r.target.met ? 'met' : '**missed**',
  ]);
  const all = [head, head.map(() => '---'), ...lines];
  // Markdown would take `<path>` for an HTML tag.
  return all.map((l) => `| ${l.join(' | ').replace(/<([A-Za-z][\w-]*)>/g, '‹$1›')} |`).join('\n');
}
