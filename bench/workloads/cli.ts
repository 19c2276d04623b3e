import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { percentile, round, median } from '../stats.ts';
import { TARGETS, atMost, ratioOf } from '../targets.ts';
import type { Ctx, Row, Side, Workload } from './types.ts';
import { buildClientIfStale, CLIENT_DIR, PACKAGE_NAME } from '../../scripts/client-package.mjs';

/**
 * CLI·start: how long `kr` takes to start and answer, as a teammate runs it: the client package
 * the server hands out (dist/client/kr.tgz, built as `npm start` builds it) installed with
 * `npm install -g --prefix <tmp> --offline`, logged in to the run's server with one pushed page in a small
 * project. `kr --version` and `kr status` (which asks the server twice) are timed as child processes, in
 * turns with `node -e 0` on the same machine in the same run; the rows are each one's p50 over `node -e 0`'s.
 */
const RUNS = { small: 11, full: 31 } as const;

function timeRun(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): number {
  const t = performance.now();
  const r = spawnSync(cmd, args, { ...opts, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`CLI·start: ${cmd} ${args.join(' ')} exited ${r.status}: ${String(r.stderr).slice(0, 500)}`);
  return ms;
}

const side = (label: string, command: string, ms: number[]): Side => ({
  label,
  command,
  unit: 'ms',
  median: round(median(ms), 1),
  p95: round(percentile(ms, 95), 1),
  n: ms.length,
  extra: { all_ms: ms.map((x) => round(x, 1)) },
});

export const cli: Workload = {
  id: 'CLI',
  title: 'kr start-up',
  async measure(ctx: Ctx): Promise<Row[]> {
    await buildClientIfStale();
    const dir = join(ctx.work, 'cli');
    const prefix = join(dir, 'prefix');
    const home = join(dir, 'home');
    const project = join(dir, 'project');
    for (const d of [prefix, home, project]) await mkdir(d, { recursive: true });
    execFileSync('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(CLIENT_DIR, 'kr.tgz')], { stdio: 'ignore', env: { ...process.env, HOME: home } });
    const kr = join(prefix, 'bin', 'kr');
    const env = { PATH: process.env.PATH, HOME: home };
    const opts = { cwd: project, env };
    timeRun(kr, ['login', '--server', ctx.server().url, '--token', ctx.apiKey], opts);
    timeRun(kr, ['init', '--repo', 'cli-start'], opts);
    await mkdir(join(project, '.kr', 'wiki', 'concepts'), { recursive: true });
    await writeFile(join(project, '.kr', 'wiki', 'concepts', 'start.md'), '---\ntitle: Start\ntype: concept\n---\n# Start\n\nOne page.\n');
    timeRun(kr, ['push', '-m', 'one page'], opts);
    // One of each first (disk caches), then in turns.
    const node: number[] = [];
    const version: number[] = [];
    const status: number[] = [];
    timeRun(process.execPath, ['-e', '0'], opts);
    timeRun(kr, ['--version'], opts);
    timeRun(kr, ['status'], opts);
    for (let i = 0; i < RUNS[ctx.scale.name]; i++) {
      node.push(timeRun(process.execPath, ['-e', '0'], opts));
      version.push(timeRun(kr, ['--version'], opts));
      status.push(timeRun(kr, ['status'], opts));
    }
    const reference = side('node -e 0', `${process.execPath} -e 0`, node);
    const row = (id: string, title: string, ours: Side): Row => {
      const ratio = ratioOf(ours.median, reference.median);
      return {
        id,
        title,
        ours,
        reference,
        ratio,
        ratioBasis: 'p50 / node -e 0 p50',
        target: { text: `≤ ${TARGETS.cliStart}× node -e 0`, met: atMost(ratio, TARGETS.cliStart) },
        notes: [`${PACKAGE_NAME} from dist/client/kr.tgz installed with npm install -g; ${ours.n} runs in turns with node -e 0`],
      };
    };
    ctx.log(`CLI·start: node -e 0 p50 ${reference.median} ms, kr --version ${round(median(version), 1)} ms, kr status ${round(median(status), 1)} ms`);
    return [
      row('CLI·start', '`kr --version` (the installed client package) vs `node -e 0`', side('kr --version', 'kr --version', version)),
      row('CLI·status', '`kr status` in a one-page project (two requests to the server) vs `node -e 0`', side('kr status', 'kr status', status)),
    ];
  },
};
