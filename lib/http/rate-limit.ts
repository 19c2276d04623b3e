/**
 * Per-key token bucket (SPEC.md "Limits") and its Hono middleware.
 *
 * Arithmetic is exact integer fixed point: one token is 60 000 units and a bucket gains `perMinute` units
 * per elapsed millisecond (perMinute tokens per 60 000 ms), so refill and Retry-After never suffer from
 * floating-point drift. No timers: idle buckets are pruned from `take()` at most once per prune interval,
 * so nothing keeps the process alive.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Clock } from '../clock.ts';

const UNITS_PER_TOKEN = 60_000;

interface Bucket {
  units: number;
  last: number; // clock ms of the last refill/take
}

export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface RateLimiterOptions {
  /** Tokens added per minute, continuously (perMinute / 60 per second). Must be > 0. */
  perMinute: number;
  /** Bucket capacity; a new bucket starts full. Integer ≥ 1. */
  burst: number;
  clock: Clock;
  /** A bucket that is full and untouched for this long is dropped. Default 10 minutes. */
  idleMs?: number;
  /**
   * Upper bound on live buckets (default 100 000). Past it, idle buckets are pruned at once and, if that is
   * not enough, the least recently used bucket is dropped. Dropping a bucket only ever gives its key a
   * fresh (full) bucket, so this bounds memory under address churn without ever refusing a newcomer.
   */
  maxBuckets?: number;
}

export class RateLimiter {
  readonly #perMinute: number;
  readonly #capacity: number;
  readonly #clock: Clock;
  readonly #idleMs: number;
  readonly #maxBuckets: number;
  readonly #pruneEveryMs: number;
  /** Insertion order = least recently touched first (a touched bucket is moved to the end). */
  readonly #buckets = new Map<string, Bucket>();
  #lastPrune: number;

  constructor(opts: RateLimiterOptions) {
    if (!Number.isSafeInteger(opts.perMinute) || opts.perMinute <= 0) {
      throw new RangeError(`perMinute must be a positive integer, got ${opts.perMinute}`);
    }
    if (!Number.isSafeInteger(opts.burst) || opts.burst <= 0) {
      throw new RangeError(`burst must be a positive integer, got ${opts.burst}`);
    }
    this.#perMinute = opts.perMinute;
    this.#capacity = opts.burst * UNITS_PER_TOKEN;
    this.#clock = opts.clock;
    this.#idleMs = Math.max(0, opts.idleMs ?? 10 * 60_000);
    this.#maxBuckets = Math.max(1, opts.maxBuckets ?? 100_000);
    this.#pruneEveryMs = Math.max(1_000, Math.min(this.#idleMs, 60_000));
    this.#lastPrune = this.#clock.now();
  }

  /** Takes one token for `key`; when none is left, says how many whole seconds until one is. */
  take(key: string): TakeResult {
    const now = this.#clock.now();
    if (now - this.#lastPrune >= this.#pruneEveryMs || now < this.#lastPrune) this.#prune(now);

    let b = this.#buckets.get(key);
    if (b) {
      this.#refill(b, now);
      this.#buckets.delete(key); // move to the most-recently-used end
    } else {
      if (this.#buckets.size >= this.#maxBuckets) this.#evict(now);
      b = { units: this.#capacity, last: now };
    }
    this.#buckets.set(key, b);

    if (b.units >= UNITS_PER_TOKEN) {
      b.units -= UNITS_PER_TOKEN;
      return { ok: true };
    }
    const waitMs = Math.ceil((UNITS_PER_TOKEN - b.units) / this.#perMinute);
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  /** Drops every bucket that is full and has been untouched for at least `idleMs`. */
  prune(): void {
    this.#prune(this.#clock.now());
  }

  /** Number of live buckets. */
  size(): number {
    return this.#buckets.size;
  }

  #refill(b: Bucket, now: number): void {
    const elapsed = now - b.last;
    // A clock that went backwards grants nothing, and refill restarts from the new reading.
    if (elapsed > 0) b.units = Math.min(this.#capacity, b.units + elapsed * this.#perMinute);
    b.last = now;
  }

  #isIdle(b: Bucket, now: number): boolean {
    const elapsed = now - b.last;
    return elapsed >= this.#idleMs && Math.min(this.#capacity, b.units + Math.max(0, elapsed) * this.#perMinute) >= this.#capacity;
  }

  #prune(now: number): void {
    this.#lastPrune = now;
    for (const [key, b] of this.#buckets) {
      // Least recently touched first: once one is too recent, so are all after it (for a monotonic clock).
      if (now - b.last < this.#idleMs && now >= b.last) break;
      if (this.#isIdle(b, now)) this.#buckets.delete(key);
    }
  }

  #evict(now: number): void {
    this.#prune(now);
    while (this.#buckets.size >= this.#maxBuckets) {
      const oldest = this.#buckets.keys().next();
      if (oldest.done) break;
      this.#buckets.delete(oldest.value);
    }
  }
}

export interface RateLimitOptions {
  limiter: RateLimiter;
  /** The bucket key of a request, usually the client IP (see clientIp in ./client-ip.ts). */
  keyOf: (c: Context) => string;
  /** Requests for which this returns true bypass the limiter (e.g. `/health`). */
  skip?: (c: Context) => boolean;
}

/** 429 `{"error":"rate limit exceeded"}` with `Retry-After: <seconds>` once a key's bucket is empty. */
export function rateLimit(opts: RateLimitOptions): MiddlewareHandler {
  const { limiter, keyOf, skip } = opts;
  return async function rateLimitMiddleware(c, next) {
    if (skip?.(c)) return next();
    const r = limiter.take(keyOf(c));
    if (!r.ok) {
      return c.json({ error: 'rate limit exceeded' }, 429, { 'Retry-After': String(r.retryAfterSeconds) });
    }
    return next();
  };
}
