/**
 * Rate limiting on Workers: the buckets live in Durable Objects, so every isolate and every location sees
 * the same count (an isolate's memory would give each isolate its own buckets).
 *
 * Workers-only: imports `cloudflare:workers`, so nothing on the Node import path may import this file.
 * The Workers entry exports {@link RateLimiterObject} and binds it (wrangler.toml: a durable_objects binding,
 * e.g. `RATE_LIMITER`, plus a migration for the class), then builds the app with
 * `limiters: durableObjectLimiters(env.RATE_LIMITER)`.
 *
 * One object per bucket key (`<limiter>:<client key>`), created where its first request came from. The
 * arithmetic is the Node limiter's (./rate-limit.ts).
 */
import { DurableObject } from 'cloudflare:workers';
import { systemClock, type Clock } from '../../util/clock.ts';
import {
  checkRates,
  fullAt,
  fullBucket,
  takeToken,
  type Bucket,
  type LimiterFactory,
  type LimiterStore,
  type LimitSpec,
  type TakeResult,
} from '../../framework/http/rate-limit.ts';

/** A stored bucket and when it is full again (then it is as good as absent and may be forgotten). */
interface Stored extends Bucket {
  fullAt: number;
}

/**
 * Token buckets of one Durable Object, kept in memory and in its storage (so an evicted object does not hand
 * out a fresh bucket). Calls are serialised by the object's input gate: a take's read-refill-write is atomic.
 * Once every bucket is full again, an alarm deletes the object's storage.
 */
export class RateLimiterObject extends DurableObject {
  readonly #buckets = new Map<string, Stored>();

  /** Takes one token from `bucket` at the caller's clock reading `nowMs` (RPC). */
  async take(bucket: string, perMinute: number, burst: number, nowMs: number): Promise<TakeResult> {
    checkRates(perMinute, burst);
    const storage = this.ctx.storage;
    const b =
      this.#buckets.get(bucket) ?? (await storage.get<Stored>(bucket)) ?? { ...fullBucket(burst, nowMs), fullAt: nowMs };
    const result = takeToken(b, nowMs, perMinute, burst);
    b.fullAt = fullAt(b, perMinute, burst);
    this.#buckets.set(bucket, b);
    await storage.put(bucket, b);
    if ((await storage.getAlarm()) === null) await storage.setAlarm(b.fullAt);
    return result;
  }

  /** Forgets every bucket once all are full again; otherwise looks again when the last one will be. */
  override async alarm(): Promise<void> {
    const storage = this.ctx.storage;
    const stored = await storage.list<Stored>();
    const latest = Math.max(0, ...[...stored.values()].map((b) => b.fullAt));
    if (Date.now() >= latest) {
      this.#buckets.clear();
      await storage.deleteAll();
    } else {
      await storage.setAlarm(latest);
    }
  }
}

/** What the adapter needs of the Durable Object namespace binding (`env.RATE_LIMITER`). */
export interface RateLimiterNamespace<Id = unknown> {
  idFromName(name: string): Id;
  get(id: Id): { take(bucket: string, perMinute: number, burst: number, nowMs: number): Promise<TakeResult> };
}

export interface DurableObjectLimiterOptions extends LimitSpec {
  clock?: Clock;
  /**
   * Called when the object cannot be reached (e.g. reset by a deploy); that request is then let through:
   * a limiter outage must not take the whole service down with it.
   */
  onError?: (error: unknown) => void;
}

/** A {@link LimiterStore} whose buckets are {@link RateLimiterObject}s, one per `<name>:<key>`. */
export function durableObjectLimiter<Id>(ns: RateLimiterNamespace<Id>, opts: DurableObjectLimiterOptions): LimiterStore {
  const { name, perMinute, burst, clock = systemClock, onError } = opts;
  checkRates(perMinute, burst);
  return {
    async take(key) {
      const bucket = `${name}:${key}`;
      try {
        return await ns.get(ns.idFromName(bucket)).take(bucket, perMinute, burst, clock.now());
      } catch (e) {
        onError?.(e);
        return { ok: true };
      }
    },
  };
}

/** The Workers runtime's limiters (AppOptions.limiters in lib/framework/app.ts). */
export function durableObjectLimiters<Id>(
  ns: RateLimiterNamespace<Id>,
  opts: { clock?: Clock; onError?: (error: unknown) => void } = {},
): LimiterFactory {
  return (spec) => durableObjectLimiter(ns, { ...spec, ...opts });
}
