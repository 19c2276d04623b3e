/**
 * Request bodies (docs/limits.md "Request bodies"): read only after authentication, 64 KiB on the small JSON
 * routes and SERVICE_MAX_BODY_BYTES on push, never read on GET/DELETE, cut off when they stall, and bounded
 * all together (503 `server busy` with Retry-After). Real servers on port 0; bodies sent over bare sockets
 * where the point is what the server does before the body is complete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../functions/index.ts';
import { loadConfig } from '../../lib/framework/config.ts';
import { defineRoute } from '../../lib/framework/route.ts';
import { signIn, startIdpTestServer, type IdpTestServer } from '../helpers/idp.ts';
import { head, rawRequest, type RawResponse } from './helpers/raw-http.ts';

const KIB = 1024;
const MIB = 1024 * 1024;
const LEGACY = 'test-legacy-key';
const TOO_LARGE = '{"error":"request body too large","code":"body_too_large"}';

/** A JSON object of exactly `size` bytes: `fields` plus a `pad` string (unknown keys are ignored). */
function jsonOfSize(fields: Record<string, unknown>, size: number): string {
  const base = JSON.stringify({ ...fields, pad: '' });
  return JSON.stringify({ ...fields, pad: 'x'.repeat(size - base.length) });
}

/** A chunked upload through fetch (a stream body has no Content-Length). */
function chunked(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(enc.encode(chunks[i++]!));
      else controller.close();
    },
  });
}

function chunk(data: string | Buffer): Buffer {
  const b = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
}

describe('bodies on the real routes (max body 1 MiB, idle timeout 400 ms)', () => {
  let srv: IdpTestServer;
  let session: string;
  beforeAll(async () => {
    srv = await startIdpTestServer({ env: { SERVICE_MAX_BODY_BYTES: String(MIB), SERVICE_BODY_IDLE_TIMEOUT_MS: '400' } });
    session = (await signIn(srv, { sub: 'alice', email: 'alice@example.com' })).token;
    expect((await srv.api('/v1/repos', { method: 'POST', token: session, json: { id: 'r1' } })).status).toBe(201);
  });
  afterAll(async () => {
    await srv?.stop();
  });

  describe('an unauthenticated request is answered 401 with its body unread', () => {
    it.each([
      ['a bad token', { Authorization: 'Bearer not-a-token' }, '{"error":"invalid token","code":"invalid_token"}'],
      ['no Authorization header', {}, '{"error":"missing authorization header","code":"missing_authorization"}'],
    ])('%s, 8 MB declared, 10 bytes sent', async (_label, auth, body) => {
      const x = rawRequest(
        srv.url,
        head('POST', '/v1/repos/r1/sync/push', { ...auth, 'Content-Type': 'application/json', 'Content-Length': 8_000_000 }),
        '{"files":[',
      );
      const res = await x.response;
      expect(res.status).toBe(401);
      expect(res.body).toBe(body);
      expect(x.socket.bytesWritten).toBeLessThan(1000);
      // The server does not wait for the other 7.99 MB: it closes the connection (the Node adapter's drain).
      await x.closed;
    });

    it('a chunked body that never ends', async () => {
      const x = rawRequest(
        srv.url,
        head('POST', '/v1/repos/r1/sync/push', { Authorization: 'Bearer nope', 'Transfer-Encoding': 'chunked' }),
        chunk('{"files":['),
      );
      const res = await x.response;
      expect(res.status).toBe(401);
      expect(res.body).toBe('{"error":"invalid token","code":"invalid_token"}');
      await x.closed;
    });

    it('authentication comes before the cap: a body over it with a bad token is a 401, not a 413', async () => {
      const x = rawRequest(srv.url, head('POST', '/v1/repos', { Authorization: 'Bearer nope', 'Content-Length': 2 * MIB }));
      expect(await x.response).toMatchObject({ status: 401, body: '{"error":"invalid token","code":"invalid_token"}' });
      x.destroy();
    });
  });

  describe('routes that read no body still refuse a declared length over the cap', () => {
    it.each([
      ['legacy creation', 'POST', '/v1/repos/r2'],
      ['a listing', 'GET', '/v1/repos'],
      ['a revocation', 'DELETE', '/v1/pats/00000000-0000-4000-8000-000000000000'],
    ])('%s: declared 1 MiB + 1 → 413, nothing done', async (_label, method, path) => {
      const x = rawRequest(srv.url, head(method, path, { Authorization: `Bearer ${session}`, 'Content-Length': MIB + 1 }));
      const res = await x.response;
      expect([res.status, res.body]).toEqual([413, TOO_LARGE]);
      x.destroy();
    });
    it('and is answered as usual at the cap (the body stays unread)', async () => {
      const res = await srv.api('/v1/repos/r2', { method: 'POST', token: session, body: 'x'.repeat(100) });
      expect([res.status, await res.json()]).toEqual([201, { repo_id: 'r2' }]);
    });
  });

  describe('small JSON routes cap their body at 64 KiB', () => {
    const small: Array<[string, string, string | null]> = [
      ['sign-in', '/v1/auth/idp', null],
      ['PAT creation', '/v1/pats', 'session'],
      ['repository creation', '/v1/repos', 'session'],
      ['invite key creation', '/v1/repos/r1/invite-keys', 'session'],
      ['join', '/v1/repos/join', 'session'],
    ];
    it.each(small)('%s: declared 64 KiB + 1 → 413 before any byte of the body', async (_label, path, auth) => {
      const headers: Record<string, string | number> = { 'Content-Type': 'application/json', 'Content-Length': 64 * KIB + 1 };
      if (auth) headers.Authorization = `Bearer ${session}`;
      const x = rawRequest(srv.url, head('POST', path, headers));
      const res = await x.response;
      expect(res.status).toBe(413);
      expect(res.body).toBe(TOO_LARGE);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      x.destroy();
    });

    it.each(small)('%s: a chunked body over 64 KiB → 413 on the bytes read', async (_label, path, auth) => {
      const res = await srv.api(path, {
        method: 'POST',
        token: auth ? session : null,
        headers: { 'content-type': 'application/json' },
        body: chunked(['{"pad":"', 'x'.repeat(40 * KIB), 'x'.repeat(40 * KIB), '"}']),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(await res.text()).toBe(TOO_LARGE);
    });

    it('exactly 64 KiB is read: sign-in and repository creation succeed', async () => {
      const idToken = await srv.idp.signIdToken({ sub: 'bob', email: 'bob@example.com', name: 'bob' });
      const signInBody = jsonOfSize({ id_token: idToken }, 64 * KIB);
      expect(Buffer.byteLength(signInBody)).toBe(64 * KIB);
      const signedIn = await srv.api('/v1/auth/idp', { method: 'POST', token: null, headers: { 'content-type': 'application/json' }, body: signInBody });
      expect(signedIn.status).toBe(200);
      expect((await signedIn.json()).user).toMatchObject({ email: 'bob@example.com' });

      const createBody = jsonOfSize({ id: 'exactly-64k' }, 64 * KIB);
      const created = await srv.api('/v1/repos', { method: 'POST', token: session, headers: { 'content-type': 'application/json' }, body: createBody });
      expect(created.status).toBe(201);
      expect(await created.json()).toEqual({ id: 'exactly-64k', role: 'owner' });
    });
  });

  describe('push alone takes SERVICE_MAX_BODY_BYTES', () => {
    it('a 300 KiB push is accepted', async () => {
      const res = await srv.api('/v1/repos/big-push/sync/push', { method: 'POST', json: { files: [{ path: 'big.md', content: `# Big\n\n${'y'.repeat(300 * KIB)}\n` }] } });
      expect(res.status).toBe(200);
      const out = await res.json();
      expect(out.pushed.map((p: { path: string }) => p.path)).toEqual(['big.md']);
      expect(out.conflicts).toEqual([]);
    });

    it('declared over 1 MiB → 413 with the body unsent; chunked over 1 MiB → 413 on the bytes read', async () => {
      const x = rawRequest(srv.url, head('POST', '/v1/repos/big-push/sync/push', { Authorization: `Bearer ${LEGACY}`, 'Content-Length': MIB + 1 }));
      expect(await x.response).toMatchObject({ status: 413, body: TOO_LARGE });
      x.destroy();
      const res = await srv.api('/v1/repos/big-push/sync/push', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chunked(['{"files":[{"path":"a.md","content":"', ...Array.from({ length: 5 }, () => 'z'.repeat(256 * KIB)), '"}]}']),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(await res.text()).toBe(TOO_LARGE);
    });
  });

  describe('routes without a body never read one', () => {
    it('GET with 512 KiB declared and 5 bytes sent is answered at once', async () => {
      const x = rawRequest(srv.url, head('GET', '/v1/repos', { Authorization: `Bearer ${LEGACY}`, 'Content-Length': 512 * KIB }), 'hello');
      const res = await x.response;
      expect(res.status).toBe(200);
      expect(Array.isArray(JSON.parse(res.body).repos)).toBe(true);
      x.destroy();
    });

    it('DELETE with 512 KiB declared is answered at once', async () => {
      const x = rawRequest(
        srv.url,
        head('DELETE', '/v1/pats/00000000-0000-4000-8000-000000000000', { Authorization: `Bearer ${session}`, 'Content-Length': 512 * KIB }),
        'hello',
      );
      expect(await x.response).toMatchObject({ status: 404, body: '{"error":"pat not found","code":"pat_not_found"}' });
      x.destroy();
    });

    it('the legacy creation POST /v1/repos/:id ignores its body', async () => {
      const x = rawRequest(srv.url, head('POST', '/v1/repos/legacy-body', { Authorization: `Bearer ${LEGACY}`, 'Content-Length': 512 * KIB }), '{');
      expect(await x.response).toMatchObject({ status: 201, body: '{"repo_id":"legacy-body"}' });
      x.destroy();
    });
  });

  describe('a body that stops arriving is cut off', () => {
    it("Node's own limits: headers within 30 s, the whole request within 120 s", () => {
      expect(srv.server.headersTimeout).toBe(30_000);
      expect(srv.server.requestTimeout).toBe(120_000);
    });

    it('declared length, 10 bytes sent, then nothing → 408 and the connection is closed', async () => {
      const x = rawRequest(
        srv.url,
        head('POST', '/v1/repos/idle/sync/push', { Authorization: `Bearer ${LEGACY}`, 'Content-Type': 'application/json', 'Content-Length': 1000 }),
        '{"files":[',
      );
      const res = await x.response;
      expect(res.status).toBe(408);
      expect(res.body).toBe('{"error":"request body timeout","code":"body_timeout"}');
      expect(res.headers.connection).toBe('close');
      await x.closed;
    });

    it('chunked, one chunk, then nothing → 408', async () => {
      const x = rawRequest(
        srv.url,
        head('POST', '/v1/repos', { Authorization: `Bearer ${session}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }),
        chunk('{"id":'),
      );
      expect(await x.response).toMatchObject({ status: 408, body: '{"error":"request body timeout","code":"body_timeout"}' });
      await x.closed;
    });

    it('a slow body that keeps arriving is not cut off', async () => {
      const body = JSON.stringify({ id: 'slow-but-steady' });
      const x = rawRequest(
        srv.url,
        head('POST', '/v1/repos', { Authorization: `Bearer ${session}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }),
      );
      // Six pieces, 150 ms apart: 750 ms in all, longer than the 400 ms idle timeout, never idle that long.
      for (let i = 0; i < body.length; i += 5) {
        await new Promise((r) => setTimeout(r, 150));
        await x.write(body.slice(i, i + 5));
      }
      expect(await x.response).toMatchObject({ status: 201, body: '{"id":"slow-but-steady","role":"owner"}' });
      x.destroy();
    });
  });
});

describe('the ceiling and the shares of the bytes held by bodies in flight (max body 1 MiB, ceiling 4 MiB: 1 MiB a holder)', () => {
  let srv: IdpTestServer;
  const tokens: string[] = [];
  // A test route that reads its whole body (push-sized cap) and tells when it starts and ends, by the
  // request's X-Tag.
  const waiting = new Map<string, () => void>();
  const when = (event: 'enter' | 'leave', tag: string) => new Promise<void>((r) => waiting.set(`${event}:${tag}`, r));
  const signal = (event: 'enter' | 'leave', tag: string | undefined) => waiting.get(`${event}:${tag}`)?.();
  /** The head of a /test/slurp request of user `u` from address `ip`. */
  const slurp = (tag: string, u: number, ip: string, headers: Record<string, string | number>) =>
    head('POST', '/test/slurp', { Authorization: `Bearer ${tokens[u]}`, 'X-Tag': tag, 'X-Forwarded-For': ip, ...headers });
  beforeAll(async () => {
    srv = await startIdpTestServer({
      env: { SERVICE_MAX_BODY_BYTES: String(MIB), SERVICE_MAX_INFLIGHT_BODY_BYTES: String(4 * MIB) },
      routes: [
        ...routes,
        defineRoute({
          method: 'POST',
          path: '/test/slurp',
          body: 'push',
          handler: async (c) => {
            const tag = c.req.header('x-tag');
            signal('enter', tag);
            try {
              return c.json({ bytes: (await c.req.arrayBuffer()).byteLength });
            } finally {
              signal('leave', tag);
            }
          },
        }),
      ],
    });
    for (let u = 0; u < 5; u++) tokens.push((await signIn(srv, { sub: `u${u}`, email: `u${u}@example.com` })).token);
  });
  afterAll(async () => {
    await srv?.stop();
  });

  it("a declared body reserves its length against the ceiling and its holders' shares; past either, 503 server busy", async () => {
    // A, B, C, D: four users at four addresses, 1 MiB declared each, 1 KiB sent, stalled. Their reading has
    // started: each holds its whole share, together the whole ceiling.
    const held = ['a', 'b', 'c', 'd'].map((tag, u) => {
      const entered = when('enter', tag);
      const left = when('leave', tag);
      const x = rawRequest(srv.url, slurp(tag, u, `10.0.0.${u + 1}`, { 'Content-Length': MIB }), Buffer.alloc(KIB, 97));
      return { x, entered, left };
    });
    await Promise.all(held.map((h) => h.entered));

    // E: a fifth user at a fifth address, 100 bytes: nothing held by either, but the ceiling is full.
    const expectBusy = (res: RawResponse) => expect([res.status, res.body, res.headers['retry-after']]).toEqual([503, '{"error":"server busy","code":"server_busy"}', '5']);
    expectBusy(await rawRequest(srv.url, slurp('e', 4, '10.0.0.5', { 'Content-Length': 100 }), 'x'.repeat(100)).response);

    // D goes away: its request ends (400 request body incomplete, no one left to read it) and its 1 MiB is
    // given back to the ceiling, to its user and to its address.
    held[3]!.x.destroy();
    await held[3]!.left;
    // F: A's user from a new address, 100 bytes: A's identity holds its share.
    expectBusy(await rawRequest(srv.url, slurp('f', 0, '10.0.0.6', { 'Content-Length': 100 }), 'x'.repeat(100)).response);
    // G: E's user from A's address: the address holds its share.
    expectBusy(await rawRequest(srv.url, slurp('g', 4, '10.0.0.1', { 'Content-Length': 100 }), 'x'.repeat(100)).response);

    // H: D's user at D's address again, 512 KiB declared, stalled: 3.5 MiB held.
    const hIn = when('enter', 'h');
    const hOut = when('leave', 'h');
    const h = rawRequest(srv.url, slurp('h', 3, '10.0.0.4', { 'Content-Length': 512 * KIB }), Buffer.alloc(KIB, 97));
    await hIn;
    // K: E's user at E's address, chunked: what arrives is reserved as it comes. 256 KiB fit, 300 KiB more
    // would pass the ceiling (though not E's share).
    const kIn = when('enter', 'k');
    const kOut = when('leave', 'k');
    const k = rawRequest(srv.url, slurp('k', 4, '10.0.0.5', { 'Transfer-Encoding': 'chunked' }), chunk(Buffer.alloc(256 * KIB, 98)));
    await kIn;
    await k.write(chunk(Buffer.alloc(300 * KIB, 99)));
    expectBusy(await k.response);
    k.destroy();
    await kOut;
    h.destroy();
    await hOut;

    // I: D's user at D's address: a whole 1 MiB fits, D's, H's and K's bytes were all given back.
    const iIn = when('enter', 'i');
    const whole = await srv.api('/test/slurp', { method: 'POST', token: tokens[3], headers: { 'x-tag': 'i', 'x-forwarded-for': '10.0.0.4' }, body: new Uint8Array(MIB) });
    await iIn;
    expect(whole.status).toBe(200);
    expect(await whole.text()).toBe(`{"bytes":${MIB}}`);

    const ended = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'request' && l.path === '/test/slurp').map((l) => l.status);
    expect(ended).toEqual([503, 400, 503, 503, 503, 400, 200]); // E, D, F, G, K, H, I
    for (const { x, left } of held.slice(0, 3)) {
      x.destroy();
      await left;
    }
  });

  it('refused and finished bodies all gave their bytes back: four users fill the ceiling with whole bodies', async () => {
    const tags = ['one', 'two', 'three', 'four'];
    const entered = tags.map((tag) => when('enter', tag));
    const xs = tags.map((tag, u) => rawRequest(srv.url, slurp(tag, u, `10.0.0.${u + 1}`, { 'Content-Length': MIB }), Buffer.alloc(KIB)));
    await Promise.all(entered);
    for (const x of xs) await x.write(Buffer.alloc(MIB - KIB));
    for (const x of xs) expect(await x.response).toMatchObject({ status: 200, body: `{"bytes":${MIB}}` });
    for (const x of xs) x.destroy();
  });
});

describe('configuration of the body limits', () => {
  const base = { SERVICE_SESSION_SECRET: 'x'.repeat(32), SERVICE_API_KEY: 'k', SERVICE_LISTEN_ADDR: '127.0.0.1:0' };
  it('defaults: 32 MiB ceiling, 30 s idle timeout, 120 s deadline', () => {
    const { config, warnings } = loadConfig(base, '/tmp');
    expect(config.maxInflightBodyBytes).toBe(32 * MIB);
    expect(config.bodyIdleTimeoutMs).toBe(30_000);
    expect(config.bodyTimeoutMs).toBe(120_000);
    expect(warnings).toEqual([]);
  });
  it('unset ceiling follows four maximal bodies silently when that is more', () => {
    const { config, warnings } = loadConfig({ ...base, SERVICE_MAX_BODY_BYTES: String(100 * MIB) }, '/tmp');
    expect(config.maxInflightBodyBytes).toBe(400 * MIB);
    expect(warnings).toEqual([]);
    expect(loadConfig({ ...base, SERVICE_MAX_BODY_BYTES: String(MIB) }, '/tmp').config.maxInflightBodyBytes).toBe(32 * MIB);
  });
  it('a ceiling set below four maximal bodies is raised to them, with a warning (a quarter must hold one)', () => {
    const { config, warnings } = loadConfig({ ...base, SERVICE_MAX_INFLIGHT_BODY_BYTES: '1000' }, '/tmp');
    expect(config.maxInflightBodyBytes).toBe(32 * MIB);
    expect(warnings).toEqual(['SERVICE_MAX_INFLIGHT_BODY_BYTES (1000) is below 4 × SERVICE_MAX_BODY_BYTES (8388608); using 33554432']);
    expect(loadConfig({ ...base, SERVICE_MAX_BODY_BYTES: String(MIB), SERVICE_MAX_INFLIGHT_BODY_BYTES: String(4 * MIB) }, '/tmp')).toMatchObject({
      config: { maxInflightBodyBytes: 4 * MIB },
      warnings: [],
    });
  });
  it('the deadline can be shortened, not lengthened past 120 s', () => {
    expect(loadConfig({ ...base, SERVICE_BODY_TIMEOUT_MS: '1500' }, '/tmp')).toMatchObject({ config: { bodyTimeoutMs: 1500 }, warnings: [] });
    const { config, warnings } = loadConfig({ ...base, SERVICE_BODY_TIMEOUT_MS: '600000' }, '/tmp');
    expect(config.bodyTimeoutMs).toBe(120_000);
    expect(warnings).toEqual(['SERVICE_BODY_TIMEOUT_MS (600000) is above 120000; using 120000']);
  });
  it('like every numeric setting, anything but an integer > 0 means the default', () => {
    const { config } = loadConfig({ ...base, SERVICE_MAX_INFLIGHT_BODY_BYTES: '0', SERVICE_BODY_IDLE_TIMEOUT_MS: '1.5', SERVICE_BODY_TIMEOUT_MS: '-1' }, '/tmp');
    expect(config.maxInflightBodyBytes).toBe(32 * MIB);
    expect(config.bodyIdleTimeoutMs).toBe(30_000);
    expect(config.bodyTimeoutMs).toBe(120_000);
    expect(loadConfig({ ...base, SERVICE_BODY_IDLE_TIMEOUT_MS: ' 250 ' }, '/tmp').config.bodyIdleTimeoutMs).toBe(250);
  });
});
