import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { makePage, Rng } from '../content.ts';
import { Api, encodePath, pushBody, type PushResponse } from '../http.ts';
import { childrenNamed, processCpuMs, threadsCpuNs } from '../cpu.ts';
import { percentile, round, summarize } from '../stats.ts';
import { TARGETS, atMost, limitSide, ratioOf } from '../targets.ts';
import { growthPage } from './growth.ts';
import type { Row, Workload } from './types.ts';
import { startWorkerDev } from '../../scripts/dev-worker.ts';

/**
 * W11 hosted cost: the Workers build (worker.ts, the bundle `npm run dev:worker` runs) under a
 * local workerd through Miniflare, on its own data, with a repository of W9's pages (10,000 at full scale,
 * seeded through its API). Then rounds of six requests, one at a time: a one-page push, a pull since the head
 * before that push, a page read (a different page each time), the pushed page's history and its diff, a
 * search. Each request's CPU is workerd's: the sum over its threads of the time on a CPU
 * (/proc/<pid>/task/<tid>/schedstat, ns), read before the request and again once workerd has gone quiet
 * after the answer (so work a request leaves running, such as full-text rows made after a push's answer,
 * counts for it). That is the whole process — the Worker, its Durable Object, the local D1 and the HTTP
 * server — so it is an upper bound of what the Workers platform bills the Worker. Target: p50 ≤ 10 ms, the
 * Workers free plan's CPU limit per request; p99 reported.
 */

const HOT = 'hot/page.md';
const QUERIES = ['rollout', 'codename417', '"cache index"'];
const KINDS = ['push', 'since', 'read', 'history', 'diff', 'search'] as const;
type Kind = (typeof KINDS)[number];

const TITLES: Record<Kind, string> = {
  push: 'a one-page push',
  since: 'a pull since the head before that push',
  read: 'a page read',
  history: "a page's history (limit 50)",
  diff: "a page's diff (its last change)",
  search: 'a search',
};

/** workerd quiet: less than this much CPU over one 5 ms look. */
const QUIET_NS = 50_000;

/** CPU ms of `pid` over `fn` and whatever it left running (until workerd is quiet, at most 200 ms more). */
async function cpuAround<T>(pid: number, fn: () => Promise<T>): Promise<{ cpuMs: number; value: T }> {
  const before = threadsCpuNs(pid);
  const value = await fn();
  let last = threadsCpuNs(pid);
  for (let k = 0; k < 40; k++) {
    await sleep(5);
    const now = threadsCpuNs(pid);
    const quiet = now - last < QUIET_NS;
    last = now;
    if (quiet) break;
  }
  return { cpuMs: (last - before) / 1e6, value };
}

export const w11: Workload = {
  id: 'W11',
  title: 'hosted cost',
  async measure(ctx) {
    const pages = ctx.scale.w11Pages;
    const rounds = ctx.scale.name === 'full' ? 60 : 20;
    const dataRoot = join(ctx.work, 'w11-workers');
    await mkdir(dataRoot, { recursive: true });
    const before = new Set(childrenNamed(process.pid, 'workerd'));
    const logTail: string[] = [];
    const dev = await startWorkerDev({
      output: (line) => {
        logTail.push(line);
        if (logTail.length > 50) logTail.shift();
      },
      env: {
        SERVICE_DATA_ROOT: dataRoot,
        SERVICE_LISTEN_ADDR: '127.0.0.1:0',
        SERVICE_API_KEY: ctx.apiKey,
        SERVICE_SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123456789',
        SERVICE_RATELIMIT_DISABLE: '1',
      },
    });
    const api = new Api(dev.url, ctx.apiKey, 1);
    try {
      const pids = childrenNamed(process.pid, 'workerd').filter((p) => !before.has(p));
      if (pids.length !== 1) throw new Error(`W11: expected one new workerd child of this process, found ${pids.length}`);
      const pid = pids[0]!;
      ctx.log(`W11: workerd pid ${pid} at ${dev.url}; seeding ${pages.toLocaleString('en-US')} pages`);

      // Seeding through the API: pushes of 1,000 pages, then the hot page a few times (its history and diff).
      const created = await api.send('POST', '/v1/repos/w11');
      if (created.status !== 201) throw new Error(`W11: create → ${created.status}: ${created.body.toString('utf8').slice(0, 300)}`);
      const rng = new Rng(1101);
      const paths: string[] = [];
      for (let start = 0; start < pages; start += 1000) {
        const files = [];
        for (let i = start; i < Math.min(pages, start + 1000); i++) {
          const f = growthPage(rng, i);
          paths.push(f.path);
          files.push(f);
        }
        await api.json<PushResponse>('POST', '/v1/repos/w11/sync/push', pushBody(`seed W11 ${start}`, files));
      }
      let head = '';
      for (let i = 0; i < 5; i++) head = (await api.json<PushResponse>('POST', '/v1/repos/w11/sync/push', pushBody(`hot ${i}`, [{ path: HOT, content: makePage(rng, `Hot ${i}`, { minBytes: 200, maxBytes: 500 }).render() }]))).data.new_head;
      await api.json('GET', `/v1/repos/w11/search?q=rollout`);
      ctx.log('W11: seeded; measuring');

      const cpu: Record<Kind, number[]> = { push: [], since: [], read: [], history: [], diff: [], search: [] };
      const wall: Record<Kind, number[]> = { push: [], since: [], read: [], history: [], diff: [], search: [] };
      const warmup = 3;
      // workerd's own CPU while nothing is asked of it, over half a second (context for the figures below).
      const idleFrom = threadsCpuNs(pid);
      await sleep(500);
      const idleMsPerS = ((threadsCpuNs(pid) - idleFrom) / 1e6) * 2;
      const totalBefore = processCpuMs(pid);
      let measured = 0;
      for (let r = -warmup; r < rounds; r++) {
        const k = r + warmup;
        const request = async (kind: Kind, fn: () => Promise<{ ms: number }>) => {
          const { cpuMs, value } = await cpuAround(pid, fn);
          if (r >= 0) {
            cpu[kind].push(cpuMs);
            wall[kind].push(value.ms);
            measured++;
          }
        };
        const prev = head;
        await request('push', async () => {
          const p = await api.json<PushResponse>('POST', '/v1/repos/w11/sync/push', pushBody(`W11 ${k}`, [{ path: HOT, content: makePage(rng, `Hot round ${k}`, { minBytes: 200, maxBytes: 500 }).render() }]));
          head = p.data.new_head;
          return p;
        });
        await request('since', async () => {
          const p = await api.json<{ files: Array<{ path: string }> }>('GET', `/v1/repos/w11/sync/pull?since=${prev}`);
          if (p.data.files.length !== 1 || p.data.files[0]!.path !== HOT) throw new Error(`W11: pull since returned ${p.data.files.length} files`);
          return p;
        });
        await request('read', async () => {
          const path = paths[(k * 7919) % paths.length]!;
          const p = await api.send('GET', `/v1/repos/w11/pages/${encodePath(path)}`);
          if (p.status !== 200) throw new Error(`W11: read ${path} → ${p.status}`);
          return p;
        });
        await request('history', () => api.json('GET', `/v1/repos/w11/history/${encodePath(HOT)}?limit=50`));
        await request('diff', () => api.json('GET', `/v1/repos/w11/diff/${encodePath(HOT)}`));
        await request('search', () => api.json('GET', `/v1/repos/w11/search?q=${encodeURIComponent(QUERIES[k % QUERIES.length]!)}`));
      }
      const totalMs = processCpuMs(pid) - totalBefore;
      const perRequestSum = KINDS.reduce((a, kind) => a + cpu[kind].reduce((x, y) => x + y, 0), 0);
      const rows: Row[] = KINDS.map((kind) => {
        const s = summarize(cpu[kind]);
        const p99 = round(percentile(cpu[kind], 99));
        // A search has a limit of its own (20 ms of CPU); every other request keeps the free plan's.
        const limit = kind === 'search' ? TARGETS.w11SearchCpuMs : TARGETS.w11CpuMs;
        const ratio = ratioOf(s.median, limit);
        return {
          id: `W11·${kind}`,
          title: `Workers build under workerd, ${pages.toLocaleString('en-US')} pages: CPU of ${TITLES[kind]}`,
          ours: {
            label: `workerd CPU per request (${TITLES[kind]})`,
            command: 'Σ /proc/‹workerd›/task/*/schedstat (ns on CPU) before the request and after workerd is quiet again; one request at a time',
            unit: 'ms',
            median: s.median,
            p95: s.p95,
            p99,
            n: s.n,
            extra: { mean: s.mean, max: s.max, wall_p50_ms: summarize(wall[kind]).median, wall_p95_ms: summarize(wall[kind]).p95 },
          },
          reference: limitSide(kind === 'search' ? 'CPU limit of a search' : 'Workers free plan: CPU limit per request', limit, 'ms'),
          ratio,
          ratioBasis: `p50 / ${limit} ms`,
          target: { text: `p50 ≤ ${limit} ms CPU`, met: atMost(s.median, limit) },
          notes: [],
        };
      });
      rows[0]!.notes.push(
        `workerd's utime + stime over the ${measured} measured requests (10 ms ticks, settling included): ${round(totalMs, 0)} ms, ${round(totalMs / measured, 2)} ms a request; the per-request figures add up to ${round(perRequestSum, 0)} ms; idle, workerd used ${round(idleMsPerS, 2)} ms of CPU a second`,
      );
      return rows;
    } catch (e) {
      throw new Error(`${(e as Error).message}\nworkerd's last log lines:\n${logTail.join('\n')}`, { cause: e });
    } finally {
      api.close();
      await dev.close();
    }
  },
};
