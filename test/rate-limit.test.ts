// The rate-limit store seam (AppOptions.limiters): the Node store in memory, the Workers store in Durable
// Objects. The Durable Object class runs here on a fake `ctx` (its logic is plain), its adapter on a fake
// namespace; workerd itself is the Workers build's business. The token arithmetic is pinned in
// http-pipeline.test.ts (RateLimiter).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Hono } from 'hono';

vi.mock('cloudflare:workers', () => ({
  DurableObject: class {
    constructor(
      protected ctx: unknown,
      protected env: unknown,
    ) {}
  },
}));

import { ManualClock } from '../lib/util/clock.ts';
import { RateLimiter, memoryLimiters, rateLimit, type LimiterStore, type TakeResult } from '../lib/framework/http/rate-limit.ts';
import {
  RateLimiterObject,
  durableObjectLimiter,
  durableObjectLimiters,
  type RateLimiterNamespace,
} from '../lib/runtime/workers/rate-limiter.ts';
import { workersClientIp } from '../lib/runtime/workers/client-ip.ts';
import { buildApp } from '../lib/framework/app.ts';
import { memoryLogger } from '../lib/framework/log.ts';
import { openNodeDeps } from '../lib/runtime/node/server.ts';
import { routes } from '../functions/index.ts';
import type { Deps } from '../lib/framework/deps.ts';
import { tempDir, testConfig } from './helpers/env.ts';

/** The part of DurableObjectStorage the object uses, over a Map. */
class FakeStorage {
  readonly data = new Map<string, unknown>();
  alarm: number | null = null;
  async get<T>(key: string): Promise<T | undefined> {
    return structuredClone(this.data.get(key)) as T | undefined;
  }
  async list<T>(): Promise<Map<string, T>> {
    return structuredClone(this.data) as Map<string, T>;
  }
  async put<T>(key: string, value: T): Promise<void> {
    this.data.set(key, structuredClone(value));
  }
  async delete(key: string): Promise<boolean> {
    return this.data.delete(key);
  }
  async deleteAll(): Promise<void> {
    this.data.clear();
    this.alarm = null;
  }
  async getAlarm(): Promise<number | null> {
    return this.alarm;
  }
  async setAlarm(t: number | Date): Promise<void> {
    this.alarm = Number(t);
  }
}

function newObject(storage = new FakeStorage()): { obj: RateLimiterObject; storage: FakeStorage } {
  const ctx = { storage, blockConcurrencyWhile: <T>(f: () => Promise<T>) => f() };
  return { obj: new RateLimiterObject(ctx as unknown as DurableObjectState, {}), storage };
}

/**
 * A namespace as the Workers runtime gives it: one object per name, shared by every isolate. `evict()` drops
 * the objects' memory (as the runtime may), keeping their storage.
 */
function fakeNamespace() {
  const storages = new Map<string, FakeStorage>();
  const objects = new Map<string, RateLimiterObject>();
  const calls: { name: string; args: [string, number, number, number] }[] = [];
  let failing = false;
  const ns: RateLimiterNamespace<string> = {
    idFromName: (name) => `id:${name}`,
    get(id) {
      return {
        take: async (...args: [string, number, number, number]): Promise<TakeResult> => {
          calls.push({ name: id.slice(3), args });
          if (failing) throw new Error('Durable Object reset because its code was updated.');
          let obj = objects.get(id);
          if (!obj) {
            if (!storages.has(id)) storages.set(id, new FakeStorage());
            obj = newObject(storages.get(id)).obj;
            objects.set(id, obj);
          }
          return obj.take(...args);
        },
      };
    },
  };
  return { ns, calls, storages, evict: () => objects.clear(), fail: (on: boolean) => (failing = on) };
}

// ---------------------------------------------------------------------------------------------------
describe('RateLimiterObject (the Durable Object)', () => {
  afterEach(() => vi.useRealTimers());
  const T0 = Date.UTC(2026, 0, 1);

  it('is the same token bucket as the Node limiter: burst, exact Retry-After, refill', async () => {
    const { obj } = newObject();
    const take = (ms: number) => obj.take('general:1.2.3.4', 6, 3, T0 + ms); // one token per 10 s
    expect(await take(0)).toEqual({ ok: true });
    expect(await take(0)).toEqual({ ok: true });
    expect(await take(0)).toEqual({ ok: true });
    expect(await take(0)).toEqual({ ok: false, retryAfterSeconds: 10 });
    expect(await take(4_000)).toEqual({ ok: false, retryAfterSeconds: 6 });
    expect(await take(9_999)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(await take(10_000)).toEqual({ ok: true });
    expect(await take(10_000)).toEqual({ ok: false, retryAfterSeconds: 10 });
  });

  it('keeps buckets apart by name, and a refusal consumes nothing', async () => {
    const { obj } = newObject();
    expect(await obj.take('a', 60, 1, T0)).toEqual({ ok: true });
    for (let i = 0; i < 20; i++) expect((await obj.take('a', 60, 1, T0)).ok).toBe(false);
    expect(await obj.take('b', 60, 1, T0)).toEqual({ ok: true });
    expect(await obj.take('a', 60, 1, T0 + 1_000)).toEqual({ ok: true });
  });

  it('an evicted object comes back with its buckets (they are stored, not only in memory)', async () => {
    const first = newObject();
    await first.obj.take('k', 15, 2, T0);
    await first.obj.take('k', 15, 2, T0);
    const again = newObject(first.storage);
    expect(await again.obj.take('k', 15, 2, T0 + 1_000)).toEqual({ ok: false, retryAfterSeconds: 3 });
  });

  it('an alarm forgets everything once every bucket is full again, and not before', async () => {
    const { obj, storage } = newObject();
    await obj.take('k', 60, 5, T0); // 1 token short: full again at T0 + 1 s
    expect(storage.alarm).toBe(T0 + 1_000);
    await obj.take('j', 60, 5, T0 + 500);
    await obj.take('j', 60, 5, T0 + 500); // 2 short: full at T0 + 2.5 s
    expect(storage.alarm).toBe(T0 + 1_000); // one alarm at a time

    vi.useFakeTimers({ now: T0 + 1_000 });
    await obj.alarm();
    expect(storage.data.size).toBe(2);
    expect(storage.alarm).toBe(T0 + 2_500);

    vi.setSystemTime(T0 + 2_500);
    await obj.alarm();
    expect(storage.data.size).toBe(0);
    expect(storage.alarm).toBeNull();
    // Forgotten only when it made no difference: a fresh bucket is what 'j' had earned by now.
    expect(await obj.take('j', 60, 5, T0 + 2_500)).toEqual({ ok: true });
  });

  it('refuses nonsensical rates', async () => {
    const { obj } = newObject();
    await expect(obj.take('k', 0, 1, T0)).rejects.toThrow(RangeError);
    await expect(obj.take('k', 1, 1.5, T0)).rejects.toThrow(RangeError);
  });
});

describe('durableObjectLimiter (the Workers LimiterStore)', () => {
  it('asks the object named <limiter>:<key> with the limits and the clock reading', async () => {
    const { ns, calls } = fakeNamespace();
    const clock = new ManualClock(5_000);
    const store = durableObjectLimiter(ns, { name: 'general', perMinute: 300, burst: 100, clock });
    expect(await store.take('203.0.113.9')).toEqual({ ok: true });
    expect(calls).toEqual([{ name: 'general:203.0.113.9', args: ['general:203.0.113.9', 300, 100, 5_000] }]);
  });

  it('holds across isolates: two adapters on one namespace share each bucket', async () => {
    const { ns, evict } = fakeNamespace();
    const clock = new ManualClock();
    const isolateA = durableObjectLimiter(ns, { name: 'sign-in', perMinute: 15, burst: 8, clock });
    const isolateB = durableObjectLimiter(ns, { name: 'sign-in', perMinute: 15, burst: 8, clock });
    for (let i = 0; i < 4; i++) expect((await isolateA.take('1.2.3.4')).ok).toBe(true);
    evict();
    for (let i = 0; i < 4; i++) expect((await isolateB.take('1.2.3.4')).ok).toBe(true);
    expect(await isolateA.take('1.2.3.4')).toEqual({ ok: false, retryAfterSeconds: 4 });
    expect(await isolateB.take('1.2.3.4')).toEqual({ ok: false, retryAfterSeconds: 4 });
    // another client, and the same client under another limiter, are other buckets
    expect((await isolateB.take('1.2.3.5')).ok).toBe(true);
    const general = durableObjectLimiters(ns, { clock })({ name: 'general', perMinute: 15, burst: 8 });
    expect((await general.take('1.2.3.4')).ok).toBe(true);
  });

  it('lets the request through when the object cannot be reached, and says so', async () => {
    const { ns, fail } = fakeNamespace();
    const errors: unknown[] = [];
    const store = durableObjectLimiter(ns, { name: 'general', perMinute: 60, burst: 1, onError: (e) => errors.push(e) });
    fail(true);
    expect(await store.take('k')).toEqual({ ok: true });
    expect(await store.take('k')).toEqual({ ok: true });
    expect(errors.map((e) => (e as Error).message)).toEqual(Array(2).fill('Durable Object reset because its code was updated.'));
  });

  it('refuses nonsensical rates when made, not per request', () => {
    const { ns } = fakeNamespace();
    expect(() => durableObjectLimiter(ns, { name: 'general', perMinute: 0, burst: 1 })).toThrow(RangeError);
  });
});

describe('memoryLimiters (the Node LimiterStore)', () => {
  it('makes one in-memory limiter per spec, with its rates', () => {
    const clock = new ManualClock();
    const make = memoryLimiters(clock);
    const general = make({ name: 'general', perMinute: 60, burst: 2 });
    const signIn = make({ name: 'sign-in', perMinute: 60, burst: 1 });
    expect(general).toBeInstanceOf(RateLimiter);
    expect([general.take('k'), general.take('k'), general.take('k')]).toEqual([
      { ok: true },
      { ok: true },
      { ok: false, retryAfterSeconds: 1 },
    ]);
    expect([signIn.take('k'), signIn.take('k')]).toEqual([{ ok: true }, { ok: false, retryAfterSeconds: 1 }]);
  });
});

describe('rateLimit middleware over an asynchronous store', () => {
  it('awaits the store: 429 with the exact body and Retry-After', async () => {
    const answers: TakeResult[] = [{ ok: true }, { ok: false, retryAfterSeconds: 7 }];
    const store: LimiterStore = { take: async () => answers.shift()! };
    const app = new Hono();
    app.use('*', rateLimit({ limiter: store, keyOf: () => 'k' }));
    app.get('/x', (c) => c.text('x'));
    expect((await app.request('/x')).status).toBe(200);
    const res = await app.request('/x');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.text()).toBe('{"error":"rate limit exceeded","code":"rate_limited"}');
  });
});

// ---------------------------------------------------------------------------------------------------
// The app as the Workers entry builds it (client IP from CF-Connecting-IP, buckets in Durable Objects), on
// Node storage: the seams compose, and the limiting rules of docs/limits.md "Rate limits" hold.
describe('buildApp with the Workers seams', () => {
  let deps: Deps & { db: { close(): Promise<void> } };
  let cleanup: () => Promise<void>;
  let app: ReturnType<typeof buildApp>;
  const clock = new ManualClock();

  beforeAll(async () => {
    const dir = await tempDir();
    cleanup = dir.cleanup;
    const config = testConfig(dir.path, {
      SERVICE_RATELIMIT_DISABLE: '',
      SERVICE_RATELIMIT_BURST: '3',
      SERVICE_RATELIMIT_PER_MIN: '1',
      SERVICE_AUTH_RATELIMIT_BURST: '1',
      SERVICE_AUTH_RATELIMIT_PER_MIN: '1',
    });
    deps = await openNodeDeps(config, { log: memoryLogger(), clock });
    app = buildApp(deps, { routes, clientIp: workersClientIp, limiters: durableObjectLimiters(fakeNamespace().ns, { clock }) });
  });
  afterAll(async () => {
    await deps?.db.close();
    await cleanup?.();
  });

  const get = (path: string, ip: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers: { authorization: 'Bearer test-legacy-key', 'cf-connecting-ip': ip, ...headers } });

  it('one bucket per CF-Connecting-IP, before authentication, whatever X-Forwarded-For says', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 3; i++) statuses.push((await get('/v1/repos', '198.51.100.1', { 'x-forwarded-for': `203.0.113.${i}` })).status);
    // unauthenticated: counted all the same, refused before its credentials are looked at
    const anon = await app.request('/v1/repos', { headers: { 'cf-connecting-ip': '198.51.100.1' } });
    statuses.push(anon.status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(anon.headers.get('retry-after')).toBe('60');
    expect(await anon.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
    expect((await get('/v1/repos', '198.51.100.2')).status).toBe(200);
  });

  it('/health and preflights are exempt', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await get('/health', '198.51.100.1')).status).toBe(200);
      const pre = await app.request('/v1/repos', {
        method: 'OPTIONS',
        headers: { 'cf-connecting-ip': '198.51.100.1', origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      });
      expect(pre.status).toBe(204);
    }
  });

  it('sign-in has its own limiter on top', async () => {
    const signIn = () =>
      app.request('/v1/auth/idp', {
        method: 'POST',
        headers: { 'cf-connecting-ip': '198.51.100.3', 'content-type': 'application/json' },
        body: '{"id_token":"x"}',
      });
    expect((await signIn()).status).toBe(503); // no identity provider configured
    expect((await signIn()).status).toBe(429);
    expect((await get('/v1/repos', '198.51.100.3')).status).toBe(200); // the general bucket has tokens left
  });
});
