import type { Api } from '../http.ts';
import type { Child } from '../procs.ts';

/**
 * Sizes of one benchmark scale. `full` is what the targets are set for (docs/performance.md); `small` is a quick check (a few
 * minutes: W9 then compares 1,000 with 10,000 pages, W10 has 100 repositories, W11 1,000 pages).
 */
export interface Scale {
  name: 'small' | 'full';
  /** W1: sequential pushes, over this many pages. */
  w1Pushes: number;
  w1Pages: number;
  /** W2: pages per push, pushes. */
  w2Pages: number;
  w2Pushes: number;
  /** W3: pages in the repository, timed pulls, timed `git cat-file --batch` runs. */
  w3Pages: number;
  w3Reps: number;
  w3RefReps: number;
  /** W4: reads per round, concurrency, rounds (each side). */
  w4Reads: number;
  w4Connections: number;
  w4Rounds: number;
  /** W5/W6: commits in the repository (one page per commit; 1 in 21 touches the W5 page, 2 in 21 the W6 page). */
  w5Commits: number;
  w5Reps: number;
  w5RefReps: number;
  w6Reps: number;
  /** W7: concurrent clients, updates each. */
  w7Clients: number;
  w7Updates: number;
  /** W7·page: clients editing their own section of one shared page, pushes each. */
  w7pageClients: number;
  w7pageUpdates: number;
  /** W9: the two repository sizes compared (pages), and the pages per seeding push. */
  w9Pages: readonly [number, number];
  w9Batch: number;
  /** W10: repositories, pages in each. */
  w10Repos: number;
  w10Pages: number;
  /** W11: pages in the repository the Workers build serves. */
  w11Pages: number;
  /** W13: open event streams. */
  w13Streams: number;
  /** W14: pages in the repository git clones, timed clones (each side), timed one-commit fetches (each side). */
  w14Pages: number;
  w14Reps: number;
  w14FetchReps: number;
}

export const SCALES: Record<Scale['name'], Scale> = {
  full: {
    name: 'full',
    w1Pushes: 200,
    w1Pages: 20,
    w2Pages: 100,
    w2Pushes: 5,
    w3Pages: 1000,
    w3Reps: 20,
    w3RefReps: 20,
    w4Reads: 2000,
    w4Connections: 16,
    w4Rounds: 3,
    w5Commits: 2100,
    w5Reps: 100,
    w5RefReps: 30,
    w6Reps: 30,
    w7Clients: 16,
    w7Updates: 25,
    w7pageClients: 16,
    w7pageUpdates: 25,
    w9Pages: [10_000, 100_000],
    w9Batch: 10_000,
    w10Repos: 1000,
    w10Pages: 100,
    w11Pages: 10_000,
    w13Streams: 200,
    w14Pages: 10_000,
    w14Reps: 5,
    w14FetchReps: 20,
  },
  small: {
    name: 'small',
    w1Pushes: 40,
    w1Pages: 20,
    w2Pages: 100,
    w2Pushes: 2,
    w3Pages: 200,
    w3Reps: 5,
    w3RefReps: 5,
    w4Reads: 500,
    w4Connections: 16,
    w4Rounds: 1,
    w5Commits: 420,
    w5Reps: 20,
    w5RefReps: 10,
    w6Reps: 5,
    w7Clients: 16,
    w7Updates: 3,
    w7pageClients: 16,
    w7pageUpdates: 4,
    w9Pages: [1_000, 10_000],
    w9Batch: 10_000,
    w10Repos: 100,
    w10Pages: 100,
    w11Pages: 1_000,
    w13Streams: 200,
    w14Pages: 2_000,
    w14Reps: 3,
    w14FetchReps: 10,
  },
};

export interface Side {
  /** What was run, in words. */
  label: string;
  /** The exact command or request, for the record. */
  command: string;
  unit: 'ms' | 'req/s' | 'push/s' | 'MiB' | 'KiB' | 's';
  median: number;
  p95: number;
  /** When p95 is not in `unit` (W4: request latency in ms while the median is req/s). */
  p95Unit?: string;
  n: number;
  /** The 99th percentile, where a row reports it (W11): shown beside p95. */
  p99?: number;
  /** Anything else measured (first/cold request, totals, latencies of a throughput run, ...). */
  extra?: Record<string, unknown>;
}

export interface Row {
  id: string;
  title: string;
  ours: Side;
  reference: Side | null;
  /** ours / reference on `ratioBasis`; null when there is nothing to compare with. */
  ratio: number | null;
  ratioBasis: string;
  target: { text: string; met: boolean | null };
  notes: string[];
}

export interface Ctx {
  scale: Scale;
  /** The server's data root; repositories are at `<dataRoot>/repos/<id>.git`. */
  dataRoot: string;
  /** Scratch directory for reference copies and files. */
  work: string;
  apiKey: string;
  /** The running server (it may be restarted between seeding and measuring). */
  server(): Child;
  /**
   * Resets the server's peak RSS (VmHWM) for a measurement of its own (W9's export), first folding the peak so
   * far into the run's; returns the memory read before the reset, in KiB.
   */
  resetPeak(): { peakKb: number; rssKb: number };
  /**
   * Stops the server and starts it again on the same data root: its caches are empty, so the next request
   * of a kind is a cold one. Clients from api()/newApi() before it are closed.
   */
  restart(): Promise<void>;
  /** A keep-alive client of the current server (one socket). */
  api(): Api;
  /** A fresh client with its own connection pool, for concurrent clients. */
  newApi(maxSockets?: number): Api;
  log(message: string): void;
  /** The bare Hono reference bundled (bench/hono-ref.ts → node on an esbuild bundle, as the server runs). */
  honoBundle(): Promise<string>;
  /**
   * Marks the start of the part of a measurement a CPU profile should cover (--profile): warm requests
   * after a cold first one, say. Without a mark the whole measurement is covered.
   */
  markProfileStart(): void;
  /** Values handed from one workload to another (W5's own timing for W6, W3's repository for W4). */
  shared: Map<string, unknown>;
}

export interface Workload {
  id: string;
  title: string;
  /** Other workloads whose seed this one needs (their seed runs first, once). */
  needs?: string[];
  seed?(ctx: Ctx): Promise<void>;
  measure(ctx: Ctx): Promise<Row[]>;
}

export const repoDir = (ctx: Ctx, id: string) => `${ctx.dataRoot}/repos/${id}.git`;

/** Creates a repository through the API (legacy creation route). */
export async function createRepo(ctx: Ctx, id: string): Promise<void> {
  const r = await ctx.api().send('POST', `/v1/repos/${id}`);
  if (r.status !== 201) throw new Error(`create repo ${id} → ${r.status}: ${r.body.toString('utf8')}`);
}

/**
 * Runs `fn` `reps` times (after `warmup` untimed runs), stopping early once `budgetMs` is spent but
 * never before `minReps` timed runs. Returns the timings `fn` reports.
 */
export async function repeat(
  reps: number,
  fn: (i: number) => Promise<number>,
  opts: { warmup?: number; budgetMs?: number; minReps?: number } = {},
): Promise<number[]> {
  for (let i = 0; i < (opts.warmup ?? 0); i++) await fn(-1 - i);
  const out: number[] = [];
  const started = performance.now();
  for (let i = 0; i < reps; i++) {
    out.push(await fn(i));
    if (opts.budgetMs !== undefined && performance.now() - started > opts.budgetMs && out.length >= (opts.minReps ?? 3)) break;
  }
  return out;
}
