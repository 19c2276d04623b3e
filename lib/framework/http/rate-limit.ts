/**
 * Per-key token bucket (docs/limits.md "Rate limits"), the store seam the app asks, and its Hono middleware.
 *
 * Arithmetic is exact integer fixed point: one token is 60 000 units and a bucket gains `perMinute` units
 * per elapsed millisecond (perMinute tokens per 60 000 ms), so refill and Retry-After never suffer from
 * floating-point drift. The in-memory {@link RateLimiter} is the Node store: one process holds every bucket.
 * No timers: idle buckets are pruned from `take()` at most once per prune interval, so nothing keeps the
 * process alive. On Workers the buckets live in Durable Objects (lib/runtime/workers/rate-limiter.ts), with the same
 * arithmetic ({@link takeToken}).
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Clock } from '../../util/clock.ts';
import { refuse } from '../../core/errors.ts';
import { R } from '../../core/refusals.ts';

const UNITS_PER_TOKEN = 60_000;

/** A token bucket's state: plain data, so a Durable Object can store it as is. */
export interface Bucket {
  units: number;
  last: number; // clock ms of the last refill/take
}

export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Where a limiter's buckets live. A refusal consumes nothing. */
export interface LimiterStore {
  /** Takes one token for `key`; when none is left, says how many whole seconds until one is. */
  take(key: string): TakeResult | Promise<TakeResult>;
}

/** One limiter of the app: `general` (every route but /health) or `sign-in` (on top, for sign-in). */
export interface LimitSpec {
  name: 'general' | 'sign-in';
  perMinute: number;
  burst: number;
}

/** How a runtime makes the app's limiters (AppOptions.limiters in lib/framework/app.ts). */
export type LimiterFactory = (spec: LimitSpec) => LimiterStore;

/** Throws a RangeError unless both are positive integers. */
export function checkRates(perMinute: number, burst: number): void {
  if (!Number.isSafeInteger(perMinute) || perMinute <= 0) {
    throw new RangeError(`perMinute must be a positive integer, got ${perMinute}`);
  }
  if (!Number.isSafeInteger(burst) || burst <= 0) {
    throw new RangeError(`burst must be a positive integer, got ${burst}`);
  }
}

/** A new bucket starts full. */
export function fullBucket(burst: number, now: number): Bucket {
  return { units: burst * UNITS_PER_TOKEN, last: now };
}

function refill(b: Bucket, now: number, perMinute: number, burst: number): void {
  const elapsed = now - b.last;
  // A clock that went backwards grants nothing, and refill restarts from the new reading.
  if (elapsed > 0) b.units = Math.min(burst * UNITS_PER_TOKEN, b.units + elapsed * perMinute);
  b.last = now;
}

/** Refills `b` up to `now` and takes one token from it if there is one (mutates `b`). */
export function takeToken(b: Bucket, now: number, perMinute: number, burst: number): TakeResult {
  refill(b, now, perMinute, burst);
  if (b.units >= UNITS_PER_TOKEN) {
    b.units -= UNITS_PER_TOKEN;
    return { ok: true };
  }
  const waitMs = Math.ceil((UNITS_PER_TOKEN - b.units) / perMinute);
  return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
}

/** Clock ms at which `b` is full again (from then on it is as good as a fresh bucket). */
export function fullAt(b: Bucket, perMinute: number, burst: number): number {
  return b.last + Math.max(0, Math.ceil((burst * UNITS_PER_TOKEN - b.units) / perMinute));
}

/** The Node runtime's limiters: in this process's memory. */
export function memoryLimiters(clock: Clock): LimiterFactory {
  return ({ perMinute, burst }) => new RateLimiter({ perMinute, burst, clock });
}

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

export class RateLimiter implements LimiterStore {
  readonly #perMinute: number;
  readonly #burst: number;
  readonly #clock: Clock;
  readonly #idleMs: number;
  readonly #maxBuckets: number;
  readonly #pruneEveryMs: number;
  /** Insertion order = least recently touched first (a touched bucket is moved to the end). */
  readonly #buckets = new Map<string, Bucket>();
  #lastPrune: number;

  constructor(opts: RateLimiterOptions) {
    checkRates(opts.perMinute, opts.burst);
    this.#perMinute = opts.perMinute;
    this.#burst = opts.burst;
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
      this.#buckets.delete(key); // move to the most-recently-used end
    } else {
      if (this.#buckets.size >= this.#maxBuckets) this.#evict(now);
      b = fullBucket(this.#burst, now);
    }
    this.#buckets.set(key, b);
    return takeToken(b, now, this.#perMinute, this.#burst);
  }

  /** Drops every bucket that is full and has been untouched for at least `idleMs`. */
  prune(): void {
    this.#prune(this.#clock.now());
  }

  /** Number of live buckets. */
  size(): number {
    return this.#buckets.size;
  }

  #isIdle(b: Bucket, now: number): boolean {
    return now - b.last >= this.#idleMs && now >= fullAt(b, this.#perMinute, this.#burst);
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
  limiter: LimiterStore;
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
    const r = await limiter.take(keyOf(c));
    if (!r.ok) {
      return c.json(refuse(R.rate_limited).body(), 429, { 'Retry-After': String(r.retryAfterSeconds) });
    }
    return next();
  };
}
