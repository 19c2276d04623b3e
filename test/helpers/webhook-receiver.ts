/**
 * A webhook receiver for tests: a real HTTP server on loopback (port 0) that records every request it gets —
 * method, path, headers, the raw body — and answers what the test tells it to (200 by default), or never
 * answers at all (`'never'`: the request is held open until the sender gives up, recorded in `gaveUp`).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  raw: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: Received[];
  /** Requests to `path` only. */
  to(path: string): Received[];
  /** How the next requests are answered (by path; default 200); `'never'` holds the request open unanswered. */
  answer: (req: Received) => Answer | 'never';
  /** Requests never answered whose sender closed the connection (gave up waiting), in the order they did. */
  gaveUp: Received[];
  /** Requests held open unanswered right now. */
  hanging(): number;
  /** Waits until `n` requests to `path` have arrived (polling; the test's timeout bounds it). */
  waitFor(path: string, n: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let hanging = 0;
  const r: Receiver = {
    url: '',
    received,
    gaveUp: [],
    hanging: () => hanging,
    to: (path) => received.filter((x) => x.path === path),
    answer: () => ({ status: 200 }),
    async waitFor(path, n) {
      while (r.to(path).length < n) await new Promise((res) => setTimeout(res, 25));
      return r.to(path);
    },
    close: () =>
      new Promise<void>((res) => {
        server.close(() => res());
        server.closeAllConnections();
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') };
      received.push(got);
      const a = r.answer(got);
      if (a === 'never') {
        hanging++;
        res.on('close', () => {
          hanging--;
          r.gaveUp.push(got);
        });
        return;
      }
      res.writeHead(a.status, a.headers ?? {}).end('ok');
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}

/** Checks `X-KR-Signature` against the raw body with the webhook's secret, independently of lib/. */
export function signatureValid(header: string | string[] | undefined, raw: string, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header ?? ''));
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.`).update(raw).digest('hex');
  return expected === m[2];
}

/** Polls `fn` until it returns a value that is not undefined (the test's timeout bounds the wait). */
export async function eventually<T>(fn: () => Promise<T | undefined> | T | undefined, everyMs = 50): Promise<T> {
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((res) => setTimeout(res, everyMs));
  }
}
