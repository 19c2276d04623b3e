import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { serve, type ServerType } from '@hono/node-server';
import { ManualClock } from '../lib/util/clock.ts';
import { BodyBudget, bodyGuard, bodyHolders } from '../lib/framework/http/body-limit.ts';
import { HttpError } from '../lib/core/errors.ts';
import {
  TrustedProxies,
  clientIp,
  formatIp,
  ipBucketKey,
  isLoopbackIp,
  normalizeIp,
  parseIp,
} from '../lib/framework/http/client-ip.ts';
import { corsMiddleware } from '../lib/framework/http/cors.ts';
import { RateLimiter, rateLimit } from '../lib/framework/http/rate-limit.ts';
import { nodeClientIp, nodePeer } from '../lib/runtime/node/client-ip.ts';

// ---------------------------------------------------------------------------------------------------
describe('IP parsing', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:7f00:1', '127.0.0.1'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['1:0:3:4:5:6:7:8', '1:0:3:4:5:6:7:8'],
    ['fe80::1%eth0', 'fe80::1'],
    // ipaddr.js reads the deprecated IPv4-compatible form `::a.b.c.d` as IPv4-mapped; its hex spelling stays IPv6.
    ['::1.2.3.4', '1.2.3.4'],
    ['::102:304', '::102:304'],
    ['fe80::1%', 'fe80::1'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    [' 10.0.0.1 ', '10.0.0.1'],
  ])('%j → %j', (input, canonical) => {
    expect(normalizeIp(input)).toBe(canonical);
  });

  it.each([
    '',
    'unknown',
    '1.2.3',
    '1.2.3.4.5',
    '256.0.0.1',
    '01.2.3.4',
    '1.2.3.4:80',
    '1:2:3:4:5:6:7:8:9',
    '1::2::3',
    ':1::',
    '1::2:',
    '12345::1',
    'g::1',
    '1:2:3:4:5:6:7::8',
    '::ffff:1.2.3.256',
    '::ffff:01.2.3.4',
    '::ffff:0x7f.0.0.1',
    '10.1',
    '0x7f.0.0.1',
    '[::1]',
    '::1/128',
  ])('%j is not an address', (input) => {
    expect(parseIp(input)).toBeUndefined();
  });

  it('formatIp round-trips', () => {
    expect(formatIp(parseIp('::ffff:10.9.8.7')!)).toBe('10.9.8.7');
  });

  it('isLoopbackIp', () => {
    expect(isLoopbackIp('127.9.9.9')).toBe(true);
    expect(isLoopbackIp('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackIp('::1')).toBe(true);
    expect(isLoopbackIp('::2')).toBe(false);
    expect(isLoopbackIp('128.0.0.1')).toBe(false);
  });

  it('ipBucketKey groups IPv6 by /64 and leaves IPv4 alone', () => {
    expect(ipBucketKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(ipBucketKey('2001:db8:1:2:bbbb::9')).toBe('2001:db8:1:2::/64');
    expect(ipBucketKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipBucketKey('unknown')).toBe('unknown');
  });
});

describe('TrustedProxies', () => {
  const t = new TrustedProxies(['127.0.0.1', '::1', '10.0.0.0/8', '192.168.4.0/22', 'fd00::/8', '2001:db8::7']);

  it.each([
    ['127.0.0.1', true],
    ['::ffff:127.0.0.1', true],
    ['127.0.0.2', false],
    ['::1', true],
    ['10.255.1.2', true],
    ['::ffff:10.1.2.3', true],
    ['11.0.0.1', false],
    ['192.168.7.255', true],
    ['192.168.8.0', false],
    ['192.168.3.255', false],
    ['fd12:3456::1', true],
    ['fe00::1', false],
    ['2001:db8::7', true],
    ['2001:db8:0:0::7', true],
    ['2001:db8::8', false],
    ['garbage', false],
    ['', false],
  ])('has(%j) → %j', (ip, expected) => {
    expect(t.has(ip)).toBe(expected);
  });

  it('IPv4-mapped IPv6 CIDR matches dotted IPv4', () => {
    const m = new TrustedProxies(['::ffff:10.0.0.0/104']);
    expect(m.has('10.200.0.1')).toBe(true);
    expect(m.has('11.0.0.1')).toBe(false);
  });

  it('/0 trusts every address of its family only', () => {
    const v4 = new TrustedProxies(['0.0.0.0/0']);
    expect(v4.has('203.0.113.5')).toBe(true);
    expect(v4.has('2001:db8::1')).toBe(false);
  });

  it('a CIDR with host bits set is accepted and masked', () => {
    expect(new TrustedProxies(['10.1.2.3/8']).has('10.9.9.9')).toBe(true);
  });

  it('throws on an invalid entry', () => {
    expect(() => new TrustedProxies(['10.0.0.0/33'])).toThrow(TypeError);
    expect(() => new TrustedProxies(['nope'])).toThrow(/invalid trusted proxy entry: "nope"/);
  });

  it('an empty list trusts nothing', () => {
    expect(new TrustedProxies([]).has('127.0.0.1')).toBe(false);
  });
});

describe('clientIp', () => {
  const trusted = new TrustedProxies(['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8']);

  it('no peer → "unknown", whatever X-Forwarded-For says', () => {
    expect(clientIp(undefined, '203.0.113.1', trusted)).toBe('unknown');
    expect(clientIp('', undefined, trusted)).toBe('unknown');
  });

  it('untrusted peer with a forged X-Forwarded-For → the peer', () => {
    expect(clientIp('198.51.100.7', '1.1.1.1', trusted)).toBe('198.51.100.7');
    expect(clientIp('198.51.100.7', '127.0.0.1', trusted)).toBe('198.51.100.7');
    expect(clientIp('::ffff:198.51.100.7', '1.1.1.1, 10.0.0.1', trusted)).toBe('198.51.100.7');
  });

  it('trusted peer without X-Forwarded-For → the peer', () => {
    expect(clientIp('127.0.0.1', undefined, trusted)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', '', trusted)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', ' , ', trusted)).toBe('127.0.0.1');
  });

  it('trusted peer → the address the proxy appended', () => {
    expect(clientIp('127.0.0.1', '203.0.113.9', trusted)).toBe('203.0.113.9');
    expect(clientIp('::ffff:127.0.0.1', '203.0.113.9', trusted)).toBe('203.0.113.9');
  });

  it('a client forging X-Forwarded-For through a trusted proxy cannot pick its address', () => {
    // The client sent "X-Forwarded-For: 1.2.3.4, 127.0.0.1"; the proxy appended the real 203.0.113.9.
    expect(clientIp('127.0.0.1', '1.2.3.4, 127.0.0.1, 203.0.113.9', trusted)).toBe('203.0.113.9');
    expect(clientIp('127.0.0.1', '10.0.0.8,203.0.113.9', trusted)).toBe('203.0.113.9');
  });

  it('a chain of trusted proxies is skipped right to left', () => {
    // client → 10.1.1.1 (edge) → 10.2.2.2 (internal LB) → 127.0.0.1 (local proxy) → us
    expect(clientIp('127.0.0.1', '6.6.6.6, 203.0.113.9, 10.1.1.1, 10.2.2.2', trusted)).toBe('203.0.113.9');
  });

  it('every X-Forwarded-For entry trusted → the left-most', () => {
    expect(clientIp('127.0.0.1', '10.9.9.9, 10.1.1.1', trusted)).toBe('10.9.9.9');
  });

  it('garbage stops the walk at the last trusted hop (no fresh bucket per garbage string)', () => {
    expect(clientIp('127.0.0.1', 'random-garbage-123', trusted)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', '1.2.3.4, garbage, 10.1.1.1', trusted)).toBe('10.1.1.1');
    expect(clientIp('127.0.0.1', 'unknown', trusted)).toBe('127.0.0.1');
    expect(clientIp('127.0.0.1', '203.0.113.1, ,', trusted)).toBe('203.0.113.1');
  });

  it('IPv6 clients and proxies, canonicalised', () => {
    expect(clientIp('::1', '2001:DB8:0::1', trusted)).toBe('2001:db8::1');
    expect(clientIp('fd00::5', '2001:db8::1, fd00::6', trusted)).toBe('2001:db8::1');
    expect(clientIp('2001:db8::99', '2001:db8::1', trusted)).toBe('2001:db8::99');
  });

  it('entries with ports or brackets, as some proxies write them', () => {
    expect(clientIp('127.0.0.1', '203.0.113.9:51234', trusted)).toBe('203.0.113.9');
    expect(clientIp('127.0.0.1', '[2001:db8::1]:443', trusted)).toBe('2001:db8::1');
    expect(clientIp('127.0.0.1', '[2001:db8::2]', trusted)).toBe('2001:db8::2');
    expect(clientIp('127.0.0.1', '"[2001:db8::3]:80"', trusted)).toBe('2001:db8::3');
  });

  it('CIDR-trusted peer', () => {
    expect(clientIp('10.20.30.40', '198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientIp('::ffff:10.20.30.40', '198.51.100.1', trusted)).toBe('198.51.100.1');
  });

  it('a peer string that is not an address is returned as is (never trusted)', () => {
    expect(clientIp('weird', '1.2.3.4', trusted)).toBe('weird');
  });

  it('with an empty trust list X-Forwarded-For is always ignored', () => {
    expect(clientIp('127.0.0.1', '1.2.3.4', new TrustedProxies([]))).toBe('127.0.0.1');
  });
});

// ---------------------------------------------------------------------------------------------------
describe('RateLimiter', () => {
  it('burst, then 429 with the exact Retry-After, then continuous refill', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 6, burst: 3, clock }); // one token per 10 s
    expect(rl.take('a')).toEqual({ ok: true });
    expect(rl.take('a')).toEqual({ ok: true });
    expect(rl.take('a')).toEqual({ ok: true });
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 10 });
    clock.advance(4_000);
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 6 });
    clock.advance(5_001);
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 1 }); // 999 ms left → 1
    clock.advance(998);
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 1 }); // 1 ms left → still 1
    clock.advance(1);
    expect(rl.take('a')).toEqual({ ok: true }); // exactly 10 s
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 10 });
  });

  it('the documented defaults: burst 100, 300/min → one token per 200 ms, Retry-After 1', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 300, burst: 100, clock });
    for (let i = 0; i < 100; i++) expect(rl.take('ip').ok).toBe(true);
    expect(rl.take('ip')).toEqual({ ok: false, retryAfterSeconds: 1 });
    clock.advance(199);
    expect(rl.take('ip').ok).toBe(false);
    clock.advance(1);
    expect(rl.take('ip').ok).toBe(true);
    clock.advance(1000);
    for (let i = 0; i < 5; i++) expect(rl.take('ip').ok).toBe(true);
    expect(rl.take('ip').ok).toBe(false);
  });

  it('the sign-in defaults: burst 8, 15/min → Retry-After 4', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 15, burst: 8, clock });
    for (let i = 0; i < 8; i++) expect(rl.take('ip').ok).toBe(true);
    expect(rl.take('ip')).toEqual({ ok: false, retryAfterSeconds: 4 });
  });

  it('refill never exceeds the burst', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 60, burst: 2, clock });
    rl.take('a');
    clock.advance(3_600_000);
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 1 });
  });

  it('refusals do not consume tokens', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 60, burst: 1, clock });
    expect(rl.take('a').ok).toBe(true);
    for (let i = 0; i < 50; i++) expect(rl.take('a').ok).toBe(false);
    clock.advance(1000);
    expect(rl.take('a').ok).toBe(true);
  });

  it('keys are independent', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 60, burst: 1, clock });
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a').ok).toBe(false);
    expect(rl.take('b').ok).toBe(true);
    expect(rl.take('c').ok).toBe(true);
    expect(rl.take('b').ok).toBe(false);
    expect(rl.size()).toBe(3);
  });

  it('a clock going backwards grants nothing and does not freeze the bucket', () => {
    const clock = new ManualClock(1_000_000);
    const rl = new RateLimiter({ perMinute: 60, burst: 1, clock });
    expect(rl.take('a').ok).toBe(true);
    clock.set(500_000);
    expect(rl.take('a')).toEqual({ ok: false, retryAfterSeconds: 1 });
    clock.advance(1000);
    expect(rl.take('a').ok).toBe(true);
  });

  it('prune() drops buckets that are full and idle for idleMs, keeps the others', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 60, burst: 5, clock, idleMs: 60_000 });
    rl.take('idle'); // refills in 1 s
    for (let i = 0; i < 5; i++) rl.take('busy');
    clock.advance(30_000);
    rl.take('recent');
    clock.advance(30_000);
    rl.prune();
    // 'idle' and 'busy' are full and untouched for 60 s; 'recent' was touched 30 s ago.
    expect(rl.size()).toBe(1);
    clock.advance(30_000);
    rl.prune();
    expect(rl.size()).toBe(0);
  });

  it('prune() keeps an idle bucket that has not refilled yet (dropping it would grant a refill)', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 1, burst: 5, clock, idleMs: 60_000 }); // 5 min to refill
    for (let i = 0; i < 5; i++) rl.take('a');
    clock.advance(120_000);
    rl.prune();
    expect(rl.size()).toBe(1);
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a').ok).toBe(false);
  });

  it('take() prunes idle buckets on its own, without timers', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 600, burst: 10, clock }); // default idleMs 10 min
    for (let i = 0; i < 1000; i++) rl.take(`k${i}`);
    expect(rl.size()).toBe(1000);
    clock.advance(9 * 60_000);
    rl.take('other');
    expect(rl.size()).toBe(1001);
    clock.advance(60_000);
    rl.take('other');
    expect(rl.size()).toBe(1);
  });

  it('maxBuckets bounds memory by dropping the least recently used bucket', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter({ perMinute: 60, burst: 1, clock, maxBuckets: 3 });
    rl.take('a');
    rl.take('b');
    rl.take('c');
    rl.take('a'); // a is now the most recent
    rl.take('d'); // evicts b
    expect(rl.size()).toBe(3);
    expect(rl.take('a').ok).toBe(false); // a kept its (empty) bucket
    expect(rl.take('b').ok).toBe(true); // b starts over (evicts c)
  });

  it('rejects nonsensical options', () => {
    const clock = new ManualClock();
    expect(() => new RateLimiter({ perMinute: 0, burst: 1, clock })).toThrow(RangeError);
    expect(() => new RateLimiter({ perMinute: 1, burst: 0, clock })).toThrow(RangeError);
    expect(() => new RateLimiter({ perMinute: 1.5, burst: 1, clock })).toThrow(RangeError);
  });
});

describe('rateLimit middleware', () => {
  function appWith(clock: ManualClock) {
    const limiter = new RateLimiter({ perMinute: 30, burst: 2, clock });
    const app = new Hono();
    app.use(
      '*',
      rateLimit({
        limiter,
        keyOf: (c) => c.req.header('x-test-ip') ?? 'unknown',
        skip: (c) => c.req.path === '/health',
      }),
    );
    app.get('/health', (c) => c.json({ status: 'ok' }));
    app.get('/v1/x', (c) => c.json({ ok: true }));
    return app;
  }

  it('answers 429 with the exact body and Retry-After once the bucket is empty', async () => {
    const clock = new ManualClock();
    const app = appWith(clock);
    const h = { 'x-test-ip': '1.1.1.1' };
    expect((await app.request('/v1/x', { headers: h })).status).toBe(200);
    expect((await app.request('/v1/x', { headers: h })).status).toBe(200);
    const res = await app.request('/v1/x', { headers: h });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.text()).toBe('{"error":"rate limit exceeded","code":"rate_limited"}');
    // another client is unaffected
    expect((await app.request('/v1/x', { headers: { 'x-test-ip': '2.2.2.2' } })).status).toBe(200);
    clock.advance(2000);
    expect((await app.request('/v1/x', { headers: h })).status).toBe(200);
  });

  it('skip() exempts a route (e.g. /health)', async () => {
    const app = appWith(new ManualClock());
    for (let i = 0; i < 10; i++) expect((await app.request('/health')).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------
// The body guard alone (lib/framework/app.ts mounts it per route, after authentication; test/security/bodies.test.ts
// covers that wiring). A refusal found while reading is thrown into the handler, rendered as in lib/framework/app.ts.
function bodyCap(max: number) {
  return bodyGuard({ maxBytes: max, budget: new BodyBudget(1 << 30), idleMs: 30_000, deadlineMs: 120_000 });
}

function renderHttpErrors(app: Hono) {
  app.onError((err, c) => (err instanceof HttpError ? c.json(err.body(), err.status as 400) : c.json({ error: 'internal error', code: 'internal_error' }, 500)));
}

function capApp(max: number) {
  const app = new Hono();
  renderHttpErrors(app);
  app.use('*', bodyCap(max));
  app.post('/json', async (c) => c.json({ got: await c.req.json() }));
  app.post('/bytes', async (c) => c.json({ length: (await c.req.arrayBuffer()).byteLength }));
  app.post('/raw', async (c) => c.json({ text: await c.req.raw.text() }));
  app.get('/get', (c) => c.json({ ok: true }));
  return app;
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
  });
}

function streamedRequest(path: string, chunks: Uint8Array[]): Request {
  return new Request(`http://localhost${path}`, {
    method: 'POST',
    body: streamOf(chunks),
    duplex: 'half',
  } as RequestInit);
}

describe('bodyGuard: the cap', () => {
  it('declared Content-Length over the cap → 413 with the exact body, handler not reached', async () => {
    const app = new Hono();
    let reached = false;
    app.use('*', bodyCap(10));
    app.post('/x', (c) => {
      reached = true;
      return c.text('no');
    });
    const res = await app.request('/x', {
      method: 'POST',
      headers: { 'content-length': '11', 'content-type': 'application/json' },
      body: '"123456789"', // 11 bytes, consistent with the header
    });
    expect(res.status).toBe(413);
    expect(await res.text()).toBe('{"error":"request body too large","code":"body_too_large"}');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reached).toBe(false);
  });

  it('a body over the cap with no declared length (streamed) → 413', async () => {
    const app = capApp(10);
    const res = await app.request(streamedRequest('/bytes', [new Uint8Array(6), new Uint8Array(5)]));
    expect(res.status).toBe(413);
    expect(await res.text()).toBe('{"error":"request body too large","code":"body_too_large"}');
  });

  it('a streamed body stops being read once over the cap', async () => {
    const app = capApp(10);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(8)); // endless
      },
    });
    const req = new Request('http://localhost/bytes', { method: 'POST', body, duplex: 'half' } as RequestInit);
    const res = await app.request(req);
    expect(res.status).toBe(413);
    expect(pulled).toBeLessThan(5);
  });

  it('exactly at the cap passes and the handler can read it (json, arrayBuffer, raw)', async () => {
    const app = capApp(10);
    const json = await app.request('/json', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '"12345678"', // 10 bytes
    });
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({ got: '12345678' });

    const streamed = await app.request(streamedRequest('/bytes', [new Uint8Array(4), new Uint8Array(6)]));
    expect(streamed.status).toBe(200);
    expect(await streamed.json()).toEqual({ length: 10 });

    const enc = new TextEncoder();
    const raw = await app.request(streamedRequest('/raw', [enc.encode('héllo'), enc.encode('wor')]));
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual({ text: 'héllowor' }); // 'é' is 2 bytes: 10 in all
  });

  it('a streamed JSON body under the cap reaches c.req.json()', async () => {
    const app = capApp(100);
    const enc = new TextEncoder();
    const res = await app.request(streamedRequest('/json', [enc.encode('{"a":'), enc.encode('[1,2]}')]));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { a: [1, 2] } });
  });

  it('one byte over the cap → 413', async () => {
    const app = capApp(10);
    const res = await app.request('/bytes', { method: 'POST', body: '12345678901' });
    expect(res.status).toBe(413);
  });

  it('requests without a body and empty bodies pass', async () => {
    const app = capApp(0);
    expect((await app.request('/get')).status).toBe(200);
    const empty = await app.request('/bytes', { method: 'POST', body: '' });
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ length: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------
describe('BodyBudget: the ceiling and the shares', () => {
  it('a holder takes at most a quarter of the ceiling; other holders are unaffected', () => {
    const b = new BodyBudget(1000);
    expect(b.share).toBe(250);
    expect(b.tryReserve(200, ['address 1.1.1.1', 'user u1'])).toBe(true);
    expect(b.tryReserve(51, ['address 1.1.1.1', 'user u1'])).toBe(false);
    // The same user from another address: its identity's share is spent all the same.
    expect(b.tryReserve(51, ['address 2.2.2.2', 'user u1'])).toBe(false);
    // Another user from the first address: the address's share is.
    expect(b.tryReserve(51, ['address 1.1.1.1', 'user u2'])).toBe(false);
    // A refusal takes nothing from anyone.
    expect([b.held, b.heldBy('address 1.1.1.1'), b.heldBy('user u1'), b.heldBy('address 2.2.2.2'), b.heldBy('user u2')]).toEqual([200, 200, 200, 0, 0]);
    expect(b.tryReserve(50, ['address 1.1.1.1', 'user u1'])).toBe(true);
    expect(b.tryReserve(250, ['address 2.2.2.2', 'user u2'])).toBe(true);
    expect(b.tryReserve(250, ['address 3.3.3.3', 'legacy'])).toBe(true);
    // 750 held: 250 more fit in the ceiling for a fresh holder, 251 do not.
    expect(b.tryReserve(251, ['address 4.4.4.4'])).toBe(false);
    expect(b.tryReserve(250, ['address 4.4.4.4'])).toBe(true);
    expect(b.tryReserve(1, ['address 5.5.5.5'])).toBe(false);
    b.release(250, ['address 1.1.1.1', 'user u1']);
    expect([b.held, b.heldBy('address 1.1.1.1'), b.heldBy('user u1')]).toEqual([750, 0, 0]);
    expect(b.tryReserve(250, ['address 1.1.1.1', 'user u1'])).toBe(true);
  });

  it('bodyHolders: the address, and the user or the legacy key behind it', () => {
    expect(bodyHolders('203.0.113.9', undefined)).toEqual(['address 203.0.113.9']);
    expect(bodyHolders('2001:db8::/64', { kind: 'legacy' })).toEqual(['address 2001:db8::/64', 'legacy']);
    const user = { kind: 'user', userId: 'u-1', email: 'a@example.com', name: 'a' } as const;
    expect(bodyHolders('203.0.113.9', { ...user, via: 'session' })).toEqual(['address 203.0.113.9', 'user u-1']);
    // Every token of one user is that user: more PATs buy no more share.
    expect(bodyHolders('203.0.113.9', { ...user, via: 'pat', patId: 'p-2' })).toEqual(['address 203.0.113.9', 'user u-1']);
  });

  it('a guard whose cap is over a holder\'s share is refused: such a body could never be read', () => {
    const opts = { budget: new BodyBudget(1000), holdersOf: () => [], idleMs: 1000, deadlineMs: 1000 };
    expect(() => bodyGuard({ ...opts, maxBytes: 251 })).toThrow('maxBytes (251) is over a holder\'s share of the budget (250)');
    expect(() => bodyGuard({ ...opts, maxBytes: 250 })).not.toThrow();
  });
});

describe('bodyGuard: the deadline', () => {
  function deadlineApp(budget: BodyBudget, deadlineMs: number) {
    const app = new Hono();
    app.onError((err, c) => {
      if (!(err instanceof HttpError)) return c.json({ error: 'internal error', code: 'internal_error' }, 500);
      for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
      return c.json(err.body(), err.status as 400);
    });
    app.use('*', bodyGuard({ maxBytes: 1000, budget, idleMs: 30_000, deadlineMs }));
    app.post('/bytes', async (c) => c.json({ length: (await c.req.arrayBuffer()).byteLength }));
    return app;
  }
  /** A body of `chunks` one-byte chunks, the first after `firstAfterMs`, then one every `everyMs`. */
  function paced(chunks: number, firstAfterMs: number, everyMs: number): Request {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === chunks) return controller.close();
        await new Promise((r) => setTimeout(r, sent === 0 ? firstAfterMs : everyMs));
        sent++;
        controller.enqueue(new Uint8Array(1));
      },
    });
    return new Request('http://localhost/bytes', { method: 'POST', body, duplex: 'half' } as RequestInit);
  }

  it('a body that keeps trickling is cut off at the deadline: 408 with Connection: close, its bytes given back', async () => {
    const budget = new BodyBudget(1 << 20);
    // One byte every 20 ms for 500 bytes: never idle, ten seconds in all; the deadline is 300 ms.
    const res = await deadlineApp(budget, 300).request(paced(500, 0, 20));
    expect([res.status, await res.text(), res.headers.get('connection')]).toEqual([408, '{"error":"request body timeout","code":"body_timeout"}', 'close']);
    expect(budget.held).toBe(0);
  });

  it('counts from the first byte: a body whose first byte comes late but all at once is read', async () => {
    const res = await deadlineApp(new BodyBudget(1 << 20), 200).request(paced(1, 400, 0));
    expect([res.status, await res.text()]).toEqual([200, '{"length":1}']);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('corsMiddleware', () => {
  function corsApp(origins: string[]) {
    const app = new Hono();
    app.use('*', corsMiddleware(origins));
    app.get('/p', (c) => {
      c.header('X-Page-SHA', 'abc');
      return c.text('page');
    });
    return app;
  }
  const origins = ['http://localhost:5173', 'https://dash.example'];

  it('an allowed origin is echoed, X-Page-SHA exposed, Vary: Origin', async () => {
    const res = await corsApp(origins).request('/p', { headers: { Origin: 'https://dash.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    expect(res.headers.get('access-control-expose-headers')).toBe('X-Page-SHA');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(await res.text()).toBe('page');
  });

  it('a non-allowed origin gets no Access-Control-Allow-Origin (the request itself is served)', async () => {
    const res = await corsApp(origins).request('/p', { headers: { Origin: 'https://evil.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('no Origin header → no Access-Control-Allow-Origin', async () => {
    const res = await corsApp(origins).request('/p');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('* allows any origin with a literal *', async () => {
    const res = await corsApp(['*']).request('/p', { headers: { Origin: 'https://anything.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toBe('X-Page-SHA');
  });

  it('an empty list allows nothing', async () => {
    const res = await corsApp([]).request('/p', { headers: { Origin: 'http://localhost:5173' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('preflight → 204 with the exact methods and headers, handler not reached', async () => {
    const res = await corsApp(origins).request('/p', {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://localhost:5173',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST,DELETE,OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Authorization,Content-Type,X-Service-Client');
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(await res.text()).toBe('');
  });

  it('preflight from a non-allowed origin → 204 but no Access-Control-Allow-Origin', async () => {
    const res = await corsApp(origins).request('/p', {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'DELETE' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------
// The same middleware over a real socket (@hono/node-server), where the body arrives from the network.
describe('over a real socket', () => {
  let server: ServerType | undefined;
  afterEach(async () => {
    const s = server as Server | undefined;
    server = undefined;
    if (!s) return;
    const closed = new Promise<void>((r) => s.close(() => r()));
    s.closeAllConnections(); // a client may still be sending the rest of a refused body
    await closed;
  });

  async function start(app: Hono): Promise<number> {
    return new Promise((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) =>
        resolve(info.port),
      );
    });
  }

  function send(
    port: number,
    opts: { path: string; headers?: Record<string, string | number>; chunks: Buffer[] },
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: opts.path, headers: opts.headers });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      });
      req.on('error', reject);
      (async () => {
        for (const chunk of opts.chunks) {
          if (req.destroyed) return;
          req.write(chunk);
          await new Promise((r) => setTimeout(r, 1));
        }
        req.end();
      })().catch(() => {});
    });
  }

  function capServerApp(max: number) {
    const app = new Hono();
    renderHttpErrors(app);
    app.use('*', bodyCap(max));
    app.post('/bytes', async (c) => c.json({ length: (await c.req.arrayBuffer()).byteLength }));
    app.post('/json', async (c) => c.json({ got: await c.req.json() }));
    return app;
  }

  it('chunked body over the cap → 413 with the exact body', async () => {
    const port = await start(capServerApp(1024));
    const r = await send(port, { path: '/bytes', chunks: Array.from({ length: 8 }, () => Buffer.alloc(512, 97)) });
    expect(r).toEqual({ status: 413, body: '{"error":"request body too large","code":"body_too_large"}' });
  });

  it('declared Content-Length over the cap → 413 before the body is sent', async () => {
    const port = await start(capServerApp(1024));
    const r = await send(port, {
      path: '/bytes',
      headers: { 'content-length': 4096 },
      chunks: [Buffer.alloc(4096, 97)],
    });
    expect(r).toEqual({ status: 413, body: '{"error":"request body too large","code":"body_too_large"}' });
  });

  it('chunked body exactly at the cap reaches the handler', async () => {
    const port = await start(capServerApp(1024));
    const r = await send(port, { path: '/bytes', chunks: [Buffer.alloc(1000, 97), Buffer.alloc(24, 98)] });
    expect(r).toEqual({ status: 200, body: '{"length":1024}' });
    const j = await send(port, {
      path: '/json',
      headers: { 'content-type': 'application/json' },
      chunks: [Buffer.from('{"x":'), Buffer.from('"y"}')],
    });
    expect(j).toEqual({ status: 200, body: '{"got":{"x":"y"}}' });
  });

  it('client IP from the socket peer and X-Forwarded-For (the Node seam), keyed into the limiter', async () => {
    const ipOf = nodeClientIp(['127.0.0.1', '::1']);
    const limiter = new RateLimiter({ perMinute: 60, burst: 1, clock: new ManualClock() });
    const app = new Hono();
    app.use('*', rateLimit({ limiter, keyOf: ipOf }));
    app.post('/ip', (c) => c.json({ ip: ipOf(c), peer: nodePeer(c) }));
    const port = await start(app);
    const a = await send(port, { path: '/ip', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9' }, chunks: [] });
    expect(a).toEqual({ status: 200, body: '{"ip":"203.0.113.9","peer":"127.0.0.1"}' });
    const b = await send(port, { path: '/ip', headers: { 'x-forwarded-for': '203.0.113.9' }, chunks: [] });
    expect(b.status).toBe(429);
    const c = await send(port, { path: '/ip', headers: { 'x-forwarded-for': '203.0.113.10' }, chunks: [] });
    expect(c).toEqual({ status: 200, body: '{"ip":"203.0.113.10","peer":"127.0.0.1"}' });
    const d = await send(port, { path: '/ip', chunks: [] });
    expect(d).toEqual({ status: 200, body: '{"ip":"127.0.0.1","peer":"127.0.0.1"}' });
  });
});

describe('preflight without an Origin header', () => {
  it('is still answered 204 by the CORS layer, not routed', async () => {
    const { Hono } = await import('hono');
    const { corsMiddleware } = await import('../lib/framework/http/cors.ts');
    const app = new Hono();
    app.use('*', corsMiddleware(['http://localhost:5173']));
    app.get('/x', (c) => c.text('x'));
    const res = await app.request('/x', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST,DELETE,OPTIONS');
    const plain = await app.request('/x');
    expect(plain.status).toBe(200);
    expect(plain.headers.get('vary')).toBe('Origin');
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });
});
