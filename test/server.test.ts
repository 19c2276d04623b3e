import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { routes } from '../functions/index.ts';
import { defineRoute } from '../lib/framework/route.ts';
import { HttpError } from '../lib/core/errors.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { serverNodeFlags } from '../bench/procs.ts';

/** User, key, PAT and request ids are UUID v4. */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Sends a request with a chunked body, fed by hand. */
function chunkedPost(url: string, path: string) {
  const u = new URL(url);
  const chunks: Buffer[] = [];
  let resolveRes!: (v: { status: number; body: string; headers: Record<string, unknown> }) => void;
  const done = new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((r) => (resolveRes = r));
  const req = request(
    { host: u.hostname, port: u.port, path, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
    (res) => {
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolveRes({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    },
  );
  req.on('error', () => undefined);
  return { req, done };
}

describe('the real server on port 0', () => {
  let srv: TestServer;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  beforeAll(async () => {
    srv = await startTestServer({
      env: { SERVICE_MAX_BODY_BYTES: '1024' },
      routes: [
        ...routes,
        defineRoute({ method: 'POST', path: '/test/echo', public: true, handler: async (c) => c.json({ bytes: (await c.req.arrayBuffer()).byteLength }) }),
        defineRoute({ method: 'GET', path: '/test/slow', public: true, handler: async (c) => (await gate, c.json({ slow: true })) }),
        defineRoute({ method: 'GET', path: '/test/boom', public: true, handler: () => { throw new Error('secret internals'); } }),
        defineRoute({ method: 'GET', path: '/test/teapot', public: true, handler: () => { throw new HttpError(418, 'teapot', 'short and stout', { spout: 1 }); } }),
      ],
    });
  });
  afterAll(async () => {
    release();
    await srv?.stop();
  });

  it('answers /health with a request id, created its data root and database', async () => {
    const res = await fetch(`${srv.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(UUID_V4);
    expect(existsSync(join(srv.dataRoot, 'service.db'))).toBe(true);
    expect(existsSync(join(srv.dataRoot, 'repos'))).toBe(true);
  });

  it('renders unknown routes, wrong methods, HttpErrors and crashes as JSON', async () => {
    const nf = await fetch(`${srv.url}/v1/nothing-here`);
    expect(nf.status).toBe(404);
    expect(await nf.json()).toEqual({ error: 'not found', code: 'not_found' });
    expect(nf.headers.get('x-request-id')).toMatch(UUID_V4);

    const wm = await fetch(`${srv.url}/health`, { method: 'DELETE' });
    expect(wm.status).toBe(405);
    expect(await wm.json()).toEqual({ error: 'method not allowed', code: 'method_not_allowed' });
    expect(wm.headers.get('allow')).toBe('GET, OPTIONS');

    const tp = await fetch(`${srv.url}/test/teapot`);
    expect(tp.status).toBe(418);
    expect(await tp.json()).toEqual({ error: 'short and stout', code: 'teapot', spout: 1 });

    const boom = await fetch(`${srv.url}/test/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.json()).toEqual({ error: 'internal error', code: 'internal_error' });
    const id = boom.headers.get('x-request-id')!;
    const logged = srv.logs.map((l) => JSON.parse(l)).find((l) => l.event === 'unhandled' && l.id === id);
    expect(logged.error).toBe('Error: secret internals');
  });

  it('writes one JSON access-log line per request', async () => {
    const res = await fetch(`${srv.url}/health?x=1`);
    const id = res.headers.get('x-request-id');
    const lines = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'request' && l.id === id);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', method: 'GET', path: '/health', status: 200, ip: '127.0.0.1' });
    expect(typeof lines[0].ms).toBe('number');
  });

  it('caps bodies on the declared length and on the bytes read', async () => {
    const ok = await fetch(`${srv.url}/test/echo`, { method: 'POST', body: 'x'.repeat(1024) });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ bytes: 1024 });

    const declared = await fetch(`${srv.url}/test/echo`, { method: 'POST', body: 'x'.repeat(1025) });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: 'request body too large', code: 'body_too_large' });

    const { req, done } = chunkedPost(srv.url, '/test/echo');
    for (let i = 0; i < 5; i++) req.write('y'.repeat(300));
    req.end();
    const streamed = await done;
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.body)).toEqual({ error: 'request body too large', code: 'body_too_large' });
  });

  it('lets in-flight requests finish on shutdown, then stops listening', async () => {
    const inflight = fetch(`${srv.url}/test/slow`);
    await new Promise((r) => setTimeout(r, 50));
    const closing = srv.close();
    await new Promise((r) => setTimeout(r, 50));
    release();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ slow: true });
    await closing;
    await expect(fetch(`${srv.url}/health`)).rejects.toThrow();
  });
});

describe('rate limiting over real HTTP', () => {
  it('limits per client IP, trusting X-Forwarded-For only from a trusted proxy', async () => {
    const srv = await startTestServer({ env: { SERVICE_RATELIMIT_DISABLE: 'no', SERVICE_RATELIMIT_BURST: '3', SERVICE_RATELIMIT_PER_MIN: '1' } });
    try {
      const hit = (xff?: string) => fetch(`${srv.url}/v1/x`, { headers: xff ? { 'x-forwarded-for': xff } : {} });
      // The peer 127.0.0.1 is a trusted proxy by default: each forwarded client has its own bucket.
      for (let i = 0; i < 3; i++) expect((await hit('203.0.113.7')).status).toBe(404);
      const limited = await hit('203.0.113.7');
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await hit('203.0.113.8')).status).toBe(404);
      // A forged left-most entry cannot dodge the limiter: the proxy's right-most entry is the client.
      expect((await hit('198.51.100.1, 203.0.113.7')).status).toBe(429);
      // /health is exempt.
      for (let i = 0; i < 5; i++) expect((await fetch(`${srv.url}/health`, { headers: { 'x-forwarded-for': '203.0.113.7' } })).status).toBe(200);
    } finally {
      await srv.stop();
    }
  });

  it('ignores X-Forwarded-For from an untrusted peer: everyone shares the peer bucket', async () => {
    const srv = await startTestServer({
      env: { SERVICE_RATELIMIT_DISABLE: '', SERVICE_RATELIMIT_BURST: '2', SERVICE_RATELIMIT_PER_MIN: '1', SERVICE_TRUSTED_PROXIES: '10.9.9.9' },
    });
    try {
      const hit = (xff: string) => fetch(`${srv.url}/v1/x`, { headers: { 'x-forwarded-for': xff } });
      expect((await hit('203.0.113.1')).status).toBe(404);
      expect((await hit('203.0.113.2')).status).toBe(404);
      expect((await hit('203.0.113.3')).status).toBe(429);
    } finally {
      await srv.stop();
    }
  });
});

describe('npm start (scripts/start.mjs: the bundle, built when stale, run in the same process)', () => {
  let child: ChildProcess | undefined;
  afterAll(() => child?.kill('SIGKILL'));

  it("the Dockerfile's command runs the bundle with npm start's node flags, and its code cache is written with them", () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
    expect(JSON.parse(cmd![1]!)).toEqual(['node', ...serverNodeFlags(), 'dist/server.mjs']);
    // The code cache is written under the same flags: V8 rejects one made under others.
    expect(dockerfile).toContain(`&& ${['node', ...serverNodeFlags(), 'dist/server.mjs', '--write-code-cache'].join(' ')} &&`);
  });

  it('boots with the start command, serves /health, and exits 0 on SIGTERM after finishing', async () => {
    const dir = await tempDir();
    try {
      // What `npm start` runs: scripts/start.mjs, which builds the bundle if it is stale and imports it.
      // (npm itself is left out so that SIGTERM reaches the server, as in the container.)
      execFileSync(process.execPath, ['scripts/bundle.mjs', '--if-stale'], { stdio: 'inherit' });
      child = spawn(process.execPath, [...serverNodeFlags(), 'scripts/start.mjs'], {
        env: { ...process.env, SERVICE_DATA_ROOT: join(dir.path, 'data'), SERVICE_LISTEN_ADDR: '127.0.0.1:0', SERVICE_API_KEY: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const url = await new Promise<string>((resolve, reject) => {
        const t = setInterval(() => {
          const m = /"event":"listening","url":"([^"]+)"/.exec(out);
          if (m) {
            clearInterval(t);
            resolve(m[1]!);
          }
        }, 10);
        child!.once('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
      });
      const res = await fetch(`${url}/health`);
      expect(await res.json()).toEqual({ status: 'ok' });
      // The bundle was fresh: nothing was built, and the listening line reports the boot's parts.
      expect(err).not.toContain('"event":"build"');
      const listening = JSON.parse(out.split('\n').find((l) => l.includes('"listening"'))!);
      expect(listening.boot_ms).toEqual({ load: expect.any(Number), open: expect.any(Number), total: expect.any(Number) });
      expect(listening.boot_ms.total).toBeGreaterThanOrEqual(listening.boot_ms.load + listening.boot_ms.open);
      expect(existsSync(join(dir.path, 'data', 'service.db'))).toBe(true);
      // Unset secrets are warned about on stderr, not silently defaulted.
      expect(err).toContain('SERVICE_SESSION_SECRET');
      expect(err).toContain('dev-key');
      const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('"event":"shutdown"');
    } finally {
      await dir.cleanup();
    }
  });
});

describe('slow requests', () => {
  it('are reported once as a slow_request warning with their id, method and path', async () => {
    const { ManualClock } = await import('../lib/util/clock.ts');
    const clock = new ManualClock(Date.UTC(2026, 10, 21, 9, 0, 0));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const srv = await startTestServer({
      clock,
      slowCheckMs: 20,
      routes: [...routes, defineRoute({ method: 'GET', path: '/test/stuck', public: true, handler: async (c) => (await gate, c.json({ done: true })) })],
    });
    try {
      const pending = fetch(`${srv.url}/test/stuck`);
      await new Promise((r) => setTimeout(r, 60));
      expect(srv.logs.filter((l) => l.includes('slow_request'))).toEqual([]);
      clock.advance(31_000);
      await new Promise((r) => setTimeout(r, 100));
      const slow = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'slow_request');
      expect(slow).toEqual([
        { time: expect.any(String), level: 'warn', event: 'slow_request', id: expect.stringMatching(UUID_V4), method: 'GET', path: '/test/stuck', ms: 31_000 },
      ]);
      open();
      const res = await pending;
      expect(res.headers.get('x-request-id')).toBe(slow[0].id);
      await new Promise((r) => setTimeout(r, 60));
      expect(srv.logs.filter((l) => l.includes('slow_request'))).toHaveLength(1);
    } finally {
      open();
      await srv.stop();
    }
  });
});
