/** Small statistics and formatting helpers for the benchmark report. */

export interface Summary {
  n: number;
  median: number;
  p95: number;
  min: number;
  max: number;
  mean: number;
  total: number;
}

/** Nearest-rank percentile (p in 0..100) of an unsorted sample. */
export function percentile(sample: readonly number[], p: number): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** Median as the mean of the two middle values for an even count. */
export function median(sample: readonly number[]): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summarize(sample: readonly number[]): Summary {
  const total = sample.reduce((a, b) => a + b, 0);
  return {
    n: sample.length,
    median: round(median(sample)),
    p95: round(percentile(sample, 95)),
    min: round(Math.min(...sample)),
    max: round(Math.max(...sample)),
    mean: round(sample.length ? total / sample.length : Number.NaN),
    total: round(total),
  };
}

/** Rounds to 3 significant decimals for milliseconds-scale figures. */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Milliseconds, readable: 0.42 ms, 3.1 ms, 12 ms, 1.23 s. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return 'n/a';
  // Below 0.01 two significant digits, so a small share (a merge against a push) does not read as 0.00×.
  return r >= 100 ? `${r.toFixed(0)}×` : r >= 10 ? `${r.toFixed(1)}×` : r >= 0.01 || r === 0 ? `${r.toFixed(2)}×` : `${r.toPrecision(2)}×`;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
