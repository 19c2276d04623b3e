/**
 * Summary of a V8 CPU profile (`node --cpu-prof`): the functions with the most self time and, among the
 * project's own files, the most inclusive time, each as a share of the sampled non-idle time.
 *
 * Usage on its own: `npx tsx bench/profile.ts <file.cpuprofile> [top]`.
 * Line numbers: for node_modules (plain JS) they are exact; for the project's TypeScript, which tsx
 * transforms before V8 sees it, the line of the function's definition is looked up in the source by name
 * when that is unambiguous, else the transformed line is shown with a `~`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './procs.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Hotspot {
  function: string;
  location: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  file: string;
  sampledMs: number;
  idleMs: number;
  /** Time left out: before the first request, and outside the window when one was given. */
  startupSkippedMs: number;
  self: Hotspot[];
  inclusiveProject: Hotspot[];
  /** Self time by where the code lives: a package of node_modules, a project file, node internals, native. */
  byModule: Array<{ module: string; ms: number; share: number }>;
}

/**
 * `window`: only samples taken between these CLOCK_MONOTONIC times (µs, as `process.hrtime.bigint()/1000`
 * in any process: V8 stamps profiles with the same clock), e.g. the warm requests of one workload.
 */
export function summarizeProfile(file: string, top = 15, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Start-up (module loading and compiling) is left out: counting starts at the first sample taken
  // inside a route handler or the app's middleware, i.e. with the first request served.
  const inRequest = new Map<number, boolean>();
  const isRequestFrame = (cf: CallFrame) => {
    if (!cf.url.startsWith('file://')) return false;
    const p = fileURLToPath(cf.url.split('?')[0]!);
    return p.startsWith(join(REPO_ROOT, 'functions')) || p === join(REPO_ROOT, 'lib', 'app.ts');
  };
  const underRequest = (id: number): boolean => {
    let v = inRequest.get(id);
    if (v === undefined) {
      const pid = parent.get(id);
      v = isRequestFrame(byId.get(id)!.callFrame) || (pid !== undefined && underRequest(pid));
      inRequest.set(id, v);
    }
    return v;
  };
  let from = prof.samples.findIndex((id) => underRequest(id));
  if (from < 0) from = 0;
  let skippedUs = 0;
  const selfUs = new Map<number, number>();
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] ?? 0;
    t += dt;
    if (i < from || (window && (t < window.fromUs || t > window.toUs))) {
      skippedUs += dt;
      continue;
    }
    const id = prof.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  }

  let total = 0;
  let idle = 0;
  const selfByKey = new Map<string, number>();
  const inclByKey = new Map<string, number>();
  const frames = new Map<string, CallFrame>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    total += us;
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    const k = key(node.callFrame);
    frames.set(k, node.callFrame);
    selfByKey.set(k, (selfByKey.get(k) ?? 0) + us);
    // Inclusive: every distinct function on the stack gets the sample once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      const ck = key(cf);
      if (seen.has(ck)) continue;
      seen.add(ck);
      frames.set(ck, cf);
      inclByKey.set(ck, (inclByKey.get(ck) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const modUs = new Map<string, number>();
  for (const [k, us] of selfByKey) {
    const m = moduleOf(frames.get(k)!);
    modUs.set(m, (modUs.get(m) ?? 0) + us);
  }
  const byModule = [...modUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([module, us]) => ({ module, ms: Math.round(us / 100) / 10, share: Math.round((us / busy) * 1000) / 10 }));
  const toHotspots = (m: Map<string, number>, filter: (cf: CallFrame) => boolean) =>
    [...m.entries()]
      .filter(([k]) => filter(frames.get(k)!))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => {
        const cf = frames.get(k)!;
        return { function: cf.functionName || '(anonymous)', location: locate(cf), ms: Math.round(us / 100) / 10, share: Math.round((us / busy) * 1000) / 10 };
      });
  return {
    file,
    sampledMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    startupSkippedMs: Math.round(skippedUs / 1000),
    self: toHotspots(selfByKey, () => true),
    inclusiveProject: toHotspots(inclByKey, (cf) => isProjectFile(cf.url)),
    byModule,
  };
}

function moduleOf(cf: CallFrame): string {
  if (!cf.url) return cf.functionName.startsWith('(') ? cf.functionName : '(native)';
  if (cf.url.startsWith('node:')) return `node:${cf.url.slice(5).split('/').slice(0, 2).join('/')}`;
  if (!cf.url.startsWith('file://')) return cf.url;
  const p = fileURLToPath(cf.url.split('?')[0]!);
  const nm = p.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = p.slice(nm + 14).split('/');
    return `npm:${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  return p.startsWith(REPO_ROOT) ? relative(REPO_ROOT, p) : p;
}

const key = (cf: CallFrame) => `${cf.functionName}|${cf.url}|${cf.lineNumber}|${cf.columnNumber}`;

function isProjectFile(url: string): boolean {
  if (!url.startsWith('file://')) return false;
  const p = fileURLToPath(url.split('?')[0]!);
  return p.startsWith(REPO_ROOT) && !p.includes('/node_modules/') && !p.includes('/bench/');
}

const sourceCache = new Map<string, string[] | null>();

function locate(cf: CallFrame): string {
  if (!cf.url) return '(native)';
  if (!cf.url.startsWith('file://')) return `${cf.url}:${cf.lineNumber + 1}`;
  const p = fileURLToPath(cf.url.split('?')[0]!);
  const rel = p.startsWith(REPO_ROOT) ? relative(REPO_ROOT, p) : p;
  if (!p.endsWith('.ts')) return `${rel}:${cf.lineNumber + 1}`;
  let lines = sourceCache.get(p);
  if (lines === undefined) {
    try {
      lines = readFileSync(p, 'utf8').split('\n');
    } catch {
      lines = null;
    }
    sourceCache.set(p, lines);
  }
  const name = cf.functionName.split('.').pop() ?? '';
  if (lines && name && /^[A-Za-z_$][\w$]*$/.test(name)) {
    const def = new RegExp(
      `(function\\*?\\s+${name}\\b|\\b(?:async\\s+)?\\*?${name}\\s*(?:<[^>]*>)?\\s*\\(|\\b${name}\\s*[:=]\\s*(?:async\\s*)?(?:\\(|function|[A-Za-z_$][\\w$]*\\s*=>))`,
    );
    const hits: number[] = [];
    lines.forEach((l, i) => {
      if (def.test(l) && !/^\s*(\/\/|\*)/.test(l) && !/\b(?:await|return)\s/.test(l.split(name)[0] ?? '')) hits.push(i + 1);
    });
    if (hits.length === 1) return `${rel}:${hits[0]}`;
  }
  return `${rel}:~${cf.lineNumber + 1}`;
}

export function formatProfile(s: ProfileSummary): string {
  const row = (h: Hotspot) => `  ${h.share.toFixed(1).padStart(5)}%  ${h.ms.toFixed(0).padStart(7)} ms  ${h.function}  (${h.location})`;
  return [
    `profile ${s.file}: ${s.sampledMs} ms busy, ${s.idleMs} ms idle (${s.startupSkippedMs} ms before the first request or outside the measured window left out); shares are of busy time`,
    ' self time:',
    ...s.self.map(row),
    ' inclusive time, project files (synchronous stacks only: time after an await is not included):',
    ...s.inclusiveProject.map(row),
    ' self time by module:',
    ...s.byModule.map((m) => `  ${m.share.toFixed(1).padStart(5)}%  ${m.ms.toFixed(0).padStart(7)} ms  ${m.module}`),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: tsx bench/profile.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  const top = Number(process.argv[3] ?? 15);
  process.stdout.write(`${formatProfile(summarizeProfile(file, Number.isInteger(top) && top > 0 ? top : 15))}\n`);
}
