/**
 * The client side of live events (lib/core/sse/client.ts) on its own: the `text/event-stream` parser (line
 * ends split across chunks, comments, ids, the caps on a line and an event), the backoff's bounds, and
 * followEvents against a real HTTP server on port 0 that scripts each connection: a stream that ends, a 503
 * between two connections, `Last-Event-ID` on each reconnection, a handler failure replayed, an oversized push
 * turned into a reset, a refusal thrown, and `event: revoked` ending it. (The real servers' streams are
 * followed end to end by test/watch-cases.ts and test/mcp-live-cases.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SseParser, backoffDelay, followEvents, type LiveEvent } from '../lib/core/sse/client.ts';

describe('SseParser', () => {
  it('reads blocks across chunks with CRLF, LF and CR line ends; comments counted; ids kept when usable', () => {
    const p = new SseParser();
    const out = [
      ...p.push(': ping\r'),
      ...p.push('\nevent: push\r\nid: 7\r\ndata: {"a":'),
      ...p.push('1}\r\n\r'),
      ...p.push('\ndata: one\ndata:two\n\n'),
      ...p.push('id: bad id\revent: member\rdata: x\r\r'),
    ];
    expect(out).toEqual([
      { event: 'push', id: '7', data: '{"a":1}' },
      { event: 'message', data: 'one\ntwo' },
      { event: 'member', data: 'x' },
    ]);
    expect(p.comments).toBe(1);
  });

  it('an event whose data or one of whose lines goes over the cap is reported oversized, its data dropped; the next one is whole', () => {
    const p = new SseParser(16, 24);
    expect(p.push('event: push\nid: 1\ndata: 0123456789\ndata: 0123456789\ndata: 01\n\n')).toEqual([{ event: 'push', id: '1', data: '', oversized: true }]);
    expect(p.push('event: push\nid: 2\ndata: ' + 'x'.repeat(10))).toEqual([]);
    expect(p.push('y'.repeat(100))).toEqual([]);
    expect(p.push('z'.repeat(100) + '\n\nevent: member\ndata: ok\n\n')).toEqual([
      { event: 'push', id: '2', data: '', oversized: true },
      { event: 'member', data: 'ok' },
    ]);
  });
});

describe('backoffDelay', () => {
  it('doubles from the first delay to the cap, each a point of its upper half', () => {
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, 500, 30_000, () => 0))).toEqual([250, 500, 1000, 2000]);
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, 500, 30_000, () => 0.999999))).toEqual([500, 1000, 2000, 4000]);
    expect(backoffDelay(40, 500, 30_000, () => 0)).toBe(15_000);
    expect(backoffDelay(40, 500, 30_000, () => 0.999999)).toBe(30_000);
  });
});

describe('followEvents against a scripted server', () => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  /** A server answering connection n with script[n]; the Last-Event-ID of each request. */
  async function scripted(script: Array<(req: IncomingMessage, res: ServerResponse) => void>) {
    const seen: Array<string | null> = [];
    const server = createServer((req, res) => {
      seen.push((req.headers['last-event-id'] as string | undefined) ?? null);
      const step = script[seen.length - 1];
      if (!step) {
        res.writeHead(500).end();
        return;
      }
      step(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    close = () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`, seen };
  }
  const stream = (body: string) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(body);
  };
  const push = (id: string, sha: string) =>
    `event: push\nid: ${id}\ndata: ${JSON.stringify({ repo_id: 'r', sha, author: 'a', email: 'a@example.com', time: '2026-05-17T10:00:00Z', message: 'm', paths: [{ path: 'wiki/a.md', status: 'added' }] })}\n\n`;

  it('resumes with Last-Event-ID after each end, retries a 503, replays an event whose handler failed, ends on revoked', async () => {
    const { url, seen } = await scripted([
      stream(`: ping\n\n${push('e1', '1'.repeat(40))}`),
      (_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"restarting"}'),
      stream(`${push('e2', '2'.repeat(40))}`),
      stream(`${push('e2', '2'.repeat(40))}event: push\nid: e3\ndata: ${'x'.repeat(1000)}\n\nevent: revoked\ndata: {"reason":"removed from this repo"}\n\n`),
    ]);
    const got: string[] = [];
    const connected: Array<{ first: boolean; resumed: boolean }> = [];
    let failOnce = true;
    class Passing extends Error {}
    const end = await followEvents({
      open: (id, signal) => fetch(url, { headers: id === null ? {} : { 'Last-Event-ID': id }, signal }),
      refusal: async (res) => (res.status >= 500 ? new Passing(`status ${res.status}`) : new Error(`refused ${res.status}`)),
      retryable: (e) => e instanceof Passing,
      onConnected: (c) => {
        connected.push(c);
      },
      onEvent: (e: LiveEvent) => {
        const name = e.type === 'reset' ? `reset: ${e.reason}` : `${e.type} ${e.id}`;
        if (name === 'push e2' && failOnce) {
          failOnce = false;
          throw new Passing('the pull failed');
        }
        got.push(name);
      },
      backoffFirstMs: 1,
      backoffMaxMs: 2,
      eventChars: 400,
    });
    expect(end).toEqual({ kind: 'revoked', reason: 'removed from this repo' });
    expect(got).toEqual(['push e1', 'push e2', 'reset: a push event too large to read']);
    expect(seen).toEqual([null, 'e1', 'e1', 'e1']);
    expect(connected).toEqual([
      { first: true, resumed: false },
      { first: false, resumed: true },
      { first: false, resumed: true },
    ]);
  });

  it('a refusal that is not passing is thrown; an answer that is no event stream too', async () => {
    const { url } = await scripted([
      (_req, res) => res.writeHead(403, { 'content-type': 'application/json' }).end('{"error":"not a member of this repo","code":"not_a_member"}'),
      (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    ]);
    const opts = {
      open: (_id: string | null, signal: AbortSignal) => fetch(url, { signal }),
      refusal: async (res: Response) => new Error(`refused ${res.status} ${res.headers.get('content-type')}`),
      retryable: () => false,
      onEvent: () => {},
    };
    await expect(followEvents(opts)).rejects.toThrow('refused 403 application/json');
    await expect(followEvents(opts)).rejects.toThrow('refused 200 text/html');
  });

  it('aborting the signal stops it, with the stream open', async () => {
    const { url } = await scripted([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(push('e1', '1'.repeat(40)));
      },
    ]);
    const stop = new AbortController();
    const end = await followEvents({
      open: (_id, signal) => fetch(url, { signal }),
      refusal: async () => new Error('refused'),
      retryable: () => false,
      onEvent: () => stop.abort(),
      signal: stop.signal,
    });
    expect(end).toEqual({ kind: 'stopped' });
  });
});
