/**
 * Two ways to talk HTTP to the server under test, both on loopback:
 *  - `HttpClient`: node:http with a keep-alive agent (a bounded number of sockets), sending the path and
 *    headers exactly as given (no URL normalisation, no percent-encoding), any method, any body bytes;
 *  - `rawExchange`: a fresh TCP connection carrying arbitrary bytes (malformed request lines, NUL and
 *    control characters, oversized headers, conflicting framing), returning every status line received.
 */
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

export interface HttpResult {
  /** HTTP status, or 0 when the connection ended without a response, -1 on timeout. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  error?: string;
}

export class HttpClient {
  readonly agent: Agent;
  constructor(
    private readonly host: string,
    private readonly port: number,
    sockets: number,
    private readonly timeoutMs = 30_000,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets });
  }

  send(method: string, path: string, headers: Record<string, string>, body?: Uint8Array): Promise<HttpResult> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (r: HttpResult) => {
        if (!settled) {
          settled = true;
          resolve(r);
        }
      };
      let req;
      // Always frame a body explicitly: Node's client sends a GET/DELETE body with neither
      // Content-Length nor chunked encoding, which the server would read as the next request.
      const framed = body !== undefined ? { ...headers, 'content-length': String(body.byteLength) } : headers;
      try {
        req = request({ host: this.host, port: this.port, method, path, headers: framed, agent: this.agent, setHost: true });
      } catch (e) {
        // The client refused to send it (e.g. a character Node will not put on the wire): not sent.
        return done({ status: -2, headers: {}, body: Buffer.alloc(0), error: (e as Error).message });
      }
      req.setTimeout(this.timeoutMs, () => {
        done({ status: -1, headers: {}, body: Buffer.alloc(0), error: 'timeout' });
        req.destroy();
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('aborted', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', (e) => done({ status: 0, headers: {}, body: Buffer.alloc(0), error: e.message }));
      if (body !== undefined) req.end(body);
      else req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Sends `bytes` on a new connection and collects everything until the server closes it (or a timeout). */
export function rawExchange(host: string, port: number, bytes: Uint8Array, timeoutMs = 10_000): Promise<{ statuses: number[]; text: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host, port });
    let finished = false;
    const finish = (timedOut: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
      resolve({ statuses, text, timedOut });
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => finish(false));
    socket.on('close', () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write(bytes));
  });
}
