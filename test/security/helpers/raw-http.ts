/**
 * HTTP/1.1 over a bare TCP socket, for what fetch cannot do: send a request head and only part of its
 * body, see the answer arrive while the rest is still unsent, and see the server close the connection.
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names lowercased. */
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  socket: Socket;
  /** The first response on the connection (rejects if the connection ends before a whole one). */
  response: Promise<RawResponse>;
  /** Resolves when the server has ended or closed the connection. */
  closed: Promise<void>;
  write(data: string | Uint8Array): Promise<void>;
  destroy(): void;
}

/** Opens a connection to `url`'s host and port, writes `head` (and `body` if given), and parses the answer. */
export function rawRequest(url: string, head: string, body?: string | Uint8Array): RawExchange {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on('error', () => undefined); // a reset after the answer is expected in several tests
  let buf = Buffer.alloc(0);
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const response = new Promise<RawResponse>((resolve, reject) => {
    const tryParse = () => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1]);
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const rest = buf.subarray(end + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        const out: Buffer[] = [];
        let at = 0;
        for (;;) {
          const nl = rest.indexOf('\r\n', at);
          if (nl < 0) return;
          const size = parseInt(rest.subarray(at, nl).toString('latin1'), 16);
          if (size === 0) break;
          if (rest.length < nl + 2 + size + 2) return;
          out.push(rest.subarray(nl + 2, nl + 2 + size));
          at = nl + 2 + size + 2;
        }
        resolve({ status, headers, body: Buffer.concat(out).toString('utf8') });
      } else {
        const len = Number(headers['content-length'] ?? 0);
        if (rest.length < len) return;
        resolve({ status, headers, body: rest.subarray(0, len).toString('utf8') });
      }
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      tryParse();
    });
    const gone = () => {
      resolveClosed();
      reject(new Error(`connection ended before a whole response: ${JSON.stringify(buf.toString('latin1').slice(0, 300))}`));
    };
    socket.on('end', gone);
    socket.on('close', gone);
  });
  response.catch(() => undefined);
  socket.write(head);
  if (body !== undefined && body.length > 0) socket.write(body);
  return {
    socket,
    response,
    closed,
    write: (data) =>
      new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve()))),
    destroy: () => socket.destroy(),
  };
}

/** A request head: `METHOD path HTTP/1.1`, Host, the given headers, blank line. */
export function head(method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
