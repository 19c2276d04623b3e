/**
 * The client's HTTP transport (client/transport.ts: node:http in the place of fetch) against a loopback
 * server: what client/api.ts reads of an answer behaves as fetch's did — redirects not followed, the time
 * limit covering the body, a refused connection's code, repeated headers, no body for a 204, a streamed body
 * read piece by piece as it comes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeFetch } from '../client/transport.ts';
import { Api, ApiError } from '../client/api.ts';

let server: Server;
let base = '';
const seen: string[] = [];
let release: (() => void) | undefined;
const open: ServerResponse[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      if (req.url === '/moved') return void res.writeHead(302, { location: `${base}/target` }).end();
      if (req.url === '/empty') return void res.writeHead(204).end();
      if (req.url === '/echo') {
        res.setHeader('set-cookie', ['a=1', 'b=2']);
        return void res.writeHead(201, { 'content-type': 'application/json', 'x-length': String(req.headers['content-length']) }).end(JSON.stringify({ got: body }));
      }
      if (req.url === '/stalls') {
        // The head at once, then part of the body, then nothing.
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        open.push(res);
        return;
      }
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('one\n');
        open.push(res);
        release = () => res.end('two\n');
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found', code: 'not_found' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const r of open) r.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('client/transport.ts', () => {
  it('does not follow a redirect; the Api reports it as one', async () => {
    const res = await nodeFetch(`${base}/moved`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.ok).toBe(false);
    expect(res.headers.get('Location')).toBe(`${base}/target`);
    await res.text();
    expect(seen).not.toContain('GET /target');
    const api = new Api({ baseUrl: base, token: 't' });
    const err = await api.call('GET', '/moved', (await import('zod')).z.object({})).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('redirect');
    expect((err as ApiError).message).toBe(`the server answered with a redirect to ${base}/target; point kr at the final URL (kr login --server <url>)`);
  });

  it('sends the body with its length; reads status, JSON and repeated headers; a 204 has no body', async () => {
    const res = await nodeFetch(`${base}/echo`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"é":1}' });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.statusText).toBe('Created');
    expect(res.url).toBe(`${base}/echo`);
    expect(res.headers.get('x-length')).toBe(String(Buffer.byteLength('{"é":1}')));
    expect(res.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(res.headers.get('x-absent')).toBeNull();
    expect(await res.json()).toEqual({ got: '{"é":1}' });
    await expect(res.text()).rejects.toThrow(/already been read/);
    const empty = await nodeFetch(`${base}/empty`, { method: 'DELETE' });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it('the time limit covers the body: a stalled body is cut with a TimeoutError, which the Api reports as such', async () => {
    const res = await nodeFetch(`${base}/stalls`, { signal: AbortSignal.timeout(300) });
    expect(res.status).toBe(200);
    const err = await res.text().catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
    // Cut while nobody was reading the body: asked for afterwards, it fails the same way (no wait for events gone).
    const idle = await nodeFetch(`${base}/stalls`, { signal: AbortSignal.timeout(200) });
    await new Promise((r) => setTimeout(r, 400));
    expect(((await idle.text().catch((e: unknown) => e)) as Error).name).toBe('TimeoutError');
    const api = new Api({ baseUrl: base, token: 't', timeoutMs: 300 });
    const viaApi = await api.call('GET', '/stalls', (await import('zod')).z.object({})).catch((e: unknown) => e);
    expect((viaApi as ApiError).code).toBe('timeout');
    expect((viaApi as ApiError).message).toBe(`the server at ${base} did not answer within 0.3 s`);
  });

  it('a refused connection rejects like fetch: a TypeError whose cause has the code', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await nodeFetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
  });

  it('a streamed body is read piece by piece as it comes (the event stream), and cancelling drops the rest', async () => {
    const res = await nodeFetch(`${base}/stream`, { headers: { Accept: 'text/event-stream' } });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('one\n');
    release!();
    const second = await reader.read();
    expect(new TextDecoder().decode(second.value)).toBe('two\n');
    expect((await reader.read()).done).toBe(true);
    const again = await nodeFetch(`${base}/stalls`);
    await again.body!.cancel();
    expect(() => again.body).not.toThrow();
  });
});
