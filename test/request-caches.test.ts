// The per-request caches that cut a page read's server CPU: route matches (lib/framework/http/router.ts), peer
// addresses (lib/framework/http/client-ip.ts), the log's time text (lib/framework/log.ts) and the LRU's most recent entry
// (lib/git/lru.ts), the session key (lib/auth/session.ts). Each must answer exactly as the uncached code does, and stay bounded.
import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { TrieRouter } from 'hono/router/trie-router';
import { CachingRouter, MATCH_CACHE_ENTRIES, MATCH_CACHE_PATH_CHARS } from '../lib/framework/http/router.ts';
import { PEERS_KEPT, TrustedProxies, clientIp } from '../lib/framework/http/client-ip.ts';
import { jsonLogger } from '../lib/framework/log.ts';
import { LruCache } from '../lib/git/lru.ts';
import { mintSession, verifySession } from '../lib/auth/session.ts';
import { ManualClock } from '../lib/util/clock.ts';

/** Two apps with the same routes, one on Hono's default router and one on CachingRouter. */
function apps() {
  const build = (app: Hono) => {
    app.use('*', async (c, next) => {
      await next();
      c.header('X-Seen', 'yes');
    });
    app.post('/v1/repos/join', (c) => c.text('join'));
    app.post('/v1/repos/:id', (c) => c.text(`create ${c.req.param('id')}`));
    app.get('/v1/repos/:id/pages/:path{.+}', (c) => c.text(`page ${c.req.param('id')} ${c.req.param('path')}`));
    app.get('/v1/repos/:id/history/:path{.+}', (c) => c.json(c.req.param()));
    app.all('/v1/repos/:id/pages/:path{.+}', (c) => c.text('method not allowed', 405));
    app.notFound((c) => c.text('not found', 404));
    return app;
  };
  return { plain: build(new Hono()), cached: build(new Hono({ router: new CachingRouter() })) };
}

const REQUESTS: Array<[string, string]> = [
  ['GET', '/v1/repos/acme/pages/notes/a.md'],
  ['GET', '/v1/repos/acme/pages/notes/a.md'],
  ['GET', '/v1/repos/other/pages/notes/a.md'],
  ['GET', '/v1/repos/acme/pages/caf%C3%A9%20menu.md'],
  ['GET', '/v1/repos/acme/pages/caf%C3%A9%20menu.md'],
  ['GET', '/v1/repos/acme/history/x%2Fy.md'],
  ['GET', '/v1/repos/acme/history/x%2Fy.md'],
  ['DELETE', '/v1/repos/acme/pages/notes/a.md'],
  ['POST', '/v1/repos/join'],
  ['POST', '/v1/repos/join'],
  ['POST', '/v1/repos/acme'],
  ['POST', '/v1/repos/acme'],
  ['GET', '/v1/repos/acme'],
  ['GET', '/nowhere'],
];

async function answer(app: Hono, method: string, path: string) {
  const r = await app.request(path, { method });
  return { status: r.status, body: await r.text(), seen: r.headers.get('X-Seen') };
}

describe('CachingRouter', () => {
  it('answers every request as the default router does, the first time and when it repeats', async () => {
    const { plain, cached } = apps();
    for (const [method, path] of REQUESTS) {
      expect(await answer(cached, method, path), `${method} ${path}`).toEqual(await answer(plain, method, path));
    }
    // Spot checks, so that equal answers are also right ones.
    expect(await answer(cached, 'GET', '/v1/repos/acme/pages/caf%C3%A9%20menu.md')).toEqual({ status: 200, body: 'page acme café menu.md', seen: 'yes' });
    expect(await answer(cached, 'GET', '/v1/repos/acme/history/x%2Fy.md')).toEqual({ status: 200, body: '{"id":"acme","path":"x/y.md"}', seen: 'yes' });
    expect((await answer(cached, 'POST', '/v1/repos/join')).body).toBe('join');
    expect((await answer(cached, 'DELETE', '/v1/repos/acme/pages/a.md')).status).toBe(405);
  });

  it('keeps at most MATCH_CACHE_ENTRIES matches, the oldest dropped first, and no long path', () => {
    const router = new CachingRouter<string>(new TrieRouter<string>());
    router.add('GET', '/p/:id', 'page');
    for (let i = 0; i < MATCH_CACHE_ENTRIES + 100; i++) router.match('GET', `/p/${i}`);
    expect(router.size).toBe(MATCH_CACHE_ENTRIES);
    // The first ones were dropped and are matched again, correctly.
    expect(router.match('GET', '/p/0')).toEqual([[['page', { id: '0' }]]]);
    const long = `/p/${'x'.repeat(MATCH_CACHE_PATH_CHARS)}`;
    const before = router.size;
    expect(router.match('GET', long)).toEqual([[['page', { id: 'x'.repeat(MATCH_CACHE_PATH_CHARS) }]]]);
    expect(router.size).toBe(before);
  });

  it('forgets every match when a route is added', () => {
    const router = new CachingRouter<string>(new TrieRouter<string>());
    router.add('GET', '/p/:id', 'page');
    expect(router.match('GET', '/p/special')).toEqual([[['page', { id: 'special' }]]]);
    router.add('GET', '/p/special', 'special');
    expect(router.size).toBe(0);
    expect(router.match('GET', '/p/special')[0].map(([h]) => h)).toEqual(['page', 'special']);
  });
});

describe('clientIp with the peer cache', () => {
  const none = new TrustedProxies([]);
  const proxy = new TrustedProxies(['127.0.0.1']);

  it('answers a repeated peer as the first time, with or without a trusted proxy', () => {
    for (let i = 0; i < 3; i++) {
      expect(clientIp('::ffff:127.0.0.1', undefined, none)).toBe('127.0.0.1');
      expect(clientIp('127.0.0.1', '203.0.113.5', none)).toBe('127.0.0.1');
      expect(clientIp('127.0.0.1', '203.0.113.5', proxy)).toBe('203.0.113.5');
      expect(clientIp('::ffff:127.0.0.1', '198.51.100.1, 203.0.113.6', proxy)).toBe('203.0.113.6');
      expect(clientIp('not an address', undefined, none)).toBe('not an address');
      expect(clientIp(` 2001:DB8::1 `, undefined, none)).toBe('2001:db8::1');
    }
  });

  it('stays right past PEERS_KEPT peers and for peers too long to keep', () => {
    for (let i = 0; i < PEERS_KEPT + 10; i++) {
      const peer = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      expect(clientIp(peer, undefined, none)).toBe(peer);
    }
    expect(clientIp('10.0.0.0', '203.0.113.5', new TrustedProxies(['10.0.0.0/8']))).toBe('203.0.113.5');
    const long = `${'0:'.repeat(40)}1`;
    expect(clientIp(long, undefined, none)).toBe(long);
  });
});

describe('jsonLogger time text', () => {
  it('is the time of each line, also for lines made in the same millisecond', () => {
    const lines: string[] = [];
    let now = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    const log = jsonLogger((l) => lines.push(l), undefined, () => now);
    log.info('a', { x: 1 });
    log.info('b');
    now += 1;
    log.warn('c', { time: 'overridden' });
    now += 60_000;
    log.error('d');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { time: '2026-01-02T03:04:05.006Z', level: 'info', event: 'a', x: 1 },
      { time: '2026-01-02T03:04:05.006Z', level: 'info', event: 'b' },
      { time: 'overridden', level: 'warn', event: 'c' },
      { time: '2026-01-02T03:05:05.007Z', level: 'error', event: 'd' },
    ]);
  });
});

describe('LruCache', () => {
  const sizeOne = () => 1;

  it('evicts the least recently used entry, a hit on the newest entry included', () => {
    const c = new LruCache<string>(3, sizeOne);
    c.set('a', 'A');
    c.set('b', 'B');
    c.set('c', 'C');
    expect(c.get('c')).toBe('C'); // the newest already: its place is unchanged
    expect(c.get('a')).toBe('A'); // now the newest: b is the oldest
    expect(c.get('a')).toBe('A');
    c.set('d', 'D');
    expect([c.get('b'), c.get('c'), c.get('a'), c.get('d')]).toEqual([undefined, 'C', 'A', 'D']);
    // Order now (oldest first): c, a, d.
    c.set('e', 'E');
    expect(c.get('c')).toBeUndefined();
    expect(c.bytes).toBe(3);
  });

  it('keeps the order right after the newest entry is deleted or the cache cleared', () => {
    const c = new LruCache<string>(2, sizeOne);
    c.set('a', 'A');
    c.set('b', 'B');
    c.delete('b');
    expect(c.get('a')).toBe('A');
    c.set('b', 'B');
    c.set('a', 'A2'); // replaces a, which becomes the newest
    c.set('c', 'C'); // evicts b
    expect([c.get('b'), c.get('a'), c.get('c')]).toEqual([undefined, 'A2', 'C']);
    c.clear();
    c.set('x', 'X');
    c.set('y', 'Y');
    expect(c.get('x')).toBe('X'); // x was not the newest: it moves up, y is the oldest
    c.set('z', 'Z');
    expect([c.get('y'), c.get('x'), c.get('z')]).toEqual([undefined, 'X', 'Z']);
  });
});

describe('verifySession with the imported key kept', () => {
  it('follows the secret bytes, also when the same array is changed in place', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const secret = new TextEncoder().encode('a'.repeat(48));
    const token = await mintSession(secret, clock, { id: 'u1', email: 'u1@example.com' });
    expect((await verifySession(secret, clock, token))?.sub).toBe('u1');
    expect(await verifySession(new TextEncoder().encode('b'.repeat(48)), clock, token)).toBeNull();
    expect((await verifySession(secret, clock, token))?.sub).toBe('u1');
    secret[0] = 'c'.charCodeAt(0);
    expect(await verifySession(secret, clock, token)).toBeNull();
    secret[0] = 'a'.charCodeAt(0);
    expect((await verifySession(secret, clock, token))?.sub).toBe('u1');
    expect(await verifySession(secret, clock, `${token.slice(0, -2)}xx`)).toBeNull();
  });
});
