/**
 * `npm run dev:worker` and `npm run dashboard`, started as real child processes on free
 * ports, stop whole on a SIGTERM sent to npm alone (as a service manager that signals only its child
 * would): afterwards no process of the tree is left (npm, its shell, node, workerd, esbuild: every pid seen
 * in npm's process group while it served) and the port is free. The Worker's `listening` line names the
 * port it really listens on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers/env.ts';

const PKG_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Building the Worker bundle or the dashboard and starting it, on a loaded 2-core machine. */
const START_TIMEOUT_MS = 240_000;

interface Proc {
  pid: number;
  pgrp: number;
  state: string;
  comm: string;
}

/** Every process of the machine, from /proc (`comm` and `pgrp` of /proc/<pid>/stat). */
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    out.push({ pid: Number(name), comm: stat.slice(stat.indexOf('(') + 1, close), state: fields[0]!, pgrp: Number(fields[2]) });
  }
  return out;
}

/** The live processes (zombies aside) among `pids`. */
const alive = (pids: number[]): Proc[] => processes().filter((p) => pids.includes(p.pid) && p.state !== 'Z');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether a new listener can bind host:port (nothing listens there any more). */
function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

interface Started {
  npm: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

/** `npm run <script>` in its own process group (npm leads it), output collected. */
function npmRun(script: string, env: Record<string, string>): Started {
  const npm = spawn('npm', ['run', script], {
    cwd: PKG_ROOT,
    detached: true,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  npm.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((r) => npm.on('exit', () => r()));
  return { npm, output: () => output, exited };
}

async function waitFor<T>(what: string, probe: () => T | null, ms = START_TIMEOUT_MS): Promise<T> {
  for (let waited = 0; waited < ms; waited += 200) {
    const v = probe();
    if (v !== null) return v;
    await sleep(200);
  }
  throw new Error(`${what} did not happen`);
}

/**
 * SIGTERM to npm alone, then: every process that was in npm's group is gone, and the port is free. The
 * group is read just before the signal, when everything the script started is running.
 */
async function stopAndCheck(s: Started, host: string, port: number): Promise<void> {
  const group = processes().filter((p) => p.pgrp === s.npm.pid);
  expect(group.map((p) => p.comm)).toContain('node');
  s.npm.kill('SIGTERM');
  await s.exited;
  const pids = group.map((p) => p.pid);
  // The signal takes a moment to travel down the tree and workerd to stop: wait (bounded) until it has.
  for (let i = 0; i < 150 && alive(pids).length > 0; i++) await sleep(200);
  expect(alive(pids).map((p) => `${p.pid} ${p.comm}`), s.output()).toEqual([]);
  expect(await portFree(host, port)).toBe(true);
}

/** Kills whatever is left of a test's process group (after a failure). */
function killGroup(s: Started | undefined): void {
  if (!s?.npm.pid) return;
  for (const p of processes()) {
    if (p.pgrp === s.npm.pid) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}

describe('SIGTERM to npm stops the dev scripts whole', () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('kr-dev-scripts-');
  });
  afterAll(async () => {
    await dir?.cleanup();
  });

  it('npm run dev:worker on port 0: the listening line names the real port; SIGTERM leaves no tsx, node or workerd and frees the port', async () => {
    let s: Started | undefined;
    try {
      s = npmRun('dev:worker', { SERVICE_DATA_ROOT: dir.path, SERVICE_LISTEN_ADDR: '127.0.0.1:0', SERVICE_API_KEY: 'test-key-for-dev-worker' });
      const started = s;
      const line = await waitFor('the listening line', () => {
        const l = started.output().split('\n').find((x) => x.includes('"event":"listening"'));
        return l ? (JSON.parse(l) as { url: string; address: string; runtime: string }) : null;
      });
      const url = new URL(line.url);
      expect(line.runtime).toBe('workerd');
      expect(line.address).toBe(`127.0.0.1:${url.port}`);
      expect(url.port).not.toBe('8080');
      // The port named is the one that answers.
      const health = await fetch(`${line.url}/health`);
      expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
      expect(await portFree('127.0.0.1', Number(url.port))).toBe(false);
      expect(processes().filter((p) => p.pgrp === started.npm.pid).map((p) => p.comm)).toContain('workerd');

      await stopAndCheck(s, '127.0.0.1', Number(url.port));
      expect(s.output()).toContain('"event":"shutdown","signal":"SIGTERM"');
    } finally {
      killGroup(s);
    }
  }, START_TIMEOUT_MS + 60_000);

  it('npm run dashboard on port 0: SIGTERM leaves no tsx or node and frees the port', async () => {
    let s: Started | undefined;
    try {
      s = npmRun('dashboard', { DASHBOARD_PORT: '0', DASHBOARD_HOST: '127.0.0.1' });
      const started = s;
      const url = await waitFor('the dashboard line', () => {
        const m = /dashboard on (http:\/\/127\.0\.0\.1:(\d+))/.exec(started.output());
        return m ? new URL(m[1]!) : null;
      });
      const index = await fetch(url);
      expect(index.status).toBe(200);
      expect(await index.text()).toContain('<html');

      await stopAndCheck(s, '127.0.0.1', Number(url.port));
    } finally {
      killGroup(s);
    }
  }, START_TIMEOUT_MS + 60_000);
});
