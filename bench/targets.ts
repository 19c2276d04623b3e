/**
 * The benchmark's targets (docs/performance.md "What each row measures") and the pure parts of judging a row against them: the
 * workloads build their rows with these, test/bench-report.test.ts checks them. Every ratio is against a
 * figure measured in the same run.
 */
import type { Row, Side } from './workloads/types.ts';

export const TARGETS = {
  /** W1: one-page push p50 at most this × W1·floor (a bare Hono round trip + the push's disk steps). */
  w1OverFloor: 1.4,
  /** W8·push: what the derived index adds to a push (median of paired differences) below this × W1 p50. */
  w8PushShare: 0.2,
  /** W7: 16 clients × 25 pushes, wall time at most this × the same commits through git plumbing. */
  w7Wall: 0.12,
  /** W8 and W8·c16: search p50 at most this × `git grep -l` over the same pages. */
  w8OverGrep: 0.15,
  /** W4: page reads at least this × the bare Hono route's req/s. */
  w4OverHono: 0.4,
  /** W9: full pull at the large size at most this × its time at the small size (linear is the size ratio). */
  w9FullPull: 15,
  /** W9: pull since, history and page read at the large size at most this × the small size. */
  w9Op: 1.5,
  /** W9: search at the large size (ten times the pages) at most this × the small size. */
  w9Search: 3,
  /** W9: an export's peak RSS at most this many MiB above the server's RSS before it. */
  w9ExportAboveMib: 64,
  /** W9: the worst GET /health latency while W9's requests run, ms. */
  w9HealthMs: 100,
  /** W10: RSS after every repository at most this × RSS after the first 10. */
  w10Rss: 1.3,
  /** W11: CPU ms per request of the Workers build at p50 (the Workers free plan's limit per request). */
  w11CpuMs: 10,
  /** W11·search: CPU ms of a search of the Workers build at p50 (every other W11 request keeps w11CpuMs). */
  w11SearchCpuMs: 20,
  /** W12: a search in a one-page repository beside the large one at most this × with no neighbour. */
  w12: 1.5,
  /** W13: a push reaches every open event stream within this at p95, ms. */
  w13P95Ms: 100,
  /** W7·merge: merging a 4 KB page (different sections changed on each side), ms, median. */
  mergeMs: 0.25,
  /** W7·merge-big: a stale merge push of a page of 20,000 sections, ms, median. */
  mergeBigMs: 3000,
  /** W7·merge-big: the worst GET /health latency during such a push, ms. */
  mergeBigHealthMs: 500,
  /** CLI·start: `kr --version` and `kr status` at most this × `node -e 0` on the same machine, p50. */
  cliStart: 3,
} as const;

/** ours / reference, or null when either is not a finite figure (a ratio of nothing is no ratio). */
export function ratioOf(ours: number, reference: number): number | null {
  if (!Number.isFinite(ours) || !Number.isFinite(reference) || reference === 0) return null;
  return ours / reference;
}

/** A ratio at most `limit`: met, missed, or null (no verdict) when there is no ratio. */
export function atMost(ratio: number | null, limit: number): boolean | null {
  return ratio === null || !Number.isFinite(ratio) ? null : ratio <= limit;
}

/** A ratio at least `limit` (throughputs), with the same null rule. */
export function atLeast(ratio: number | null, limit: number): boolean | null {
  return ratio === null || !Number.isFinite(ratio) ? null : ratio >= limit;
}

/**
 * W9's row for one request kind: the large repository's figure against the small one's, the target a
 * factor of the small one's p50.
 */
export function growthRow(o: { id: string; title: string; large: Side; small: Side; factor: number; notes?: string[] }): Row {
  const ratio = ratioOf(o.large.median, o.small.median);
  return {
    id: o.id,
    title: o.title,
    ours: o.large,
    reference: o.small,
    ratio,
    ratioBasis: 'p50/p50',
    target: { text: `p50 ≤ ${o.factor}×`, met: atMost(ratio, o.factor) },
    notes: o.notes ?? [],
  };
}

/** A fixed limit as the reference side of a row (W11's 10 ms, say): the limit itself, nothing measured. */
export function limitSide(label: string, value: number, unit: Side['unit'], command = '(a limit, not a measurement)'): Side {
  return { label, command, unit, median: value, p95: Number.NaN, n: 0 };
}

/**
 * The row of a workload that cannot run against this server (W13 before `GET /v1/repos/:id/events` exists):
 * no figure, no verdict, and why, in the title and the notes.
 */
export function notAvailableRow(id: string, title: string, target: string, why: string): Row {
  return {
    id,
    title: `${title} — not available`,
    ours: { label: 'not available', command: why, unit: 'ms', median: Number.NaN, p95: Number.NaN, n: 0 },
    reference: null,
    ratio: null,
    ratioBasis: '—',
    target: { text: target, met: null },
    notes: [`not available: ${why}`],
  };
}
