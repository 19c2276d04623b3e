/**
 * The client's HTTP transport: the part of `fetch` that kr uses, made on node:http and node:https. Node 20's
 * `fetch` (undici) costs more to load than node itself takes to start (`node -e "fetch(url)"` measured 3.5×
 * `node -e 0` where `http.get` measured 1×): kr's start-up target (within 3× `node -e 0` for `kr status`)
 * cannot be met through it. What this keeps of fetch, so that client/api.ts reads an answer the same way:
 *  - `status`, `statusText`, `ok`, `url`, `headers.get(name)` (repeated headers joined with `, `);
 *  - `text()`, `arrayBuffer()`, `json()`, and `body`, a web ReadableStream (null for 204 and 304), made
 *    only when asked for (the event stream; `body.cancel()` drops an answer unread);
 *  - redirects are never followed (fetch's `redirect: "manual"`, which is all kr asks for);
 *  - the signal covers the whole exchange, the body included: aborting destroys the connection and rejects
 *    with the signal's reason (a TimeoutError from AbortSignal.timeout, as fetch); a network failure
 *    rejects with a TypeError whose `cause` is node's error (its `code`: ECONNREFUSED, ...), as fetch.
 */
import type { IncomingMessage, RequestOptions } from 'node:http';
import { Readable } from 'node:stream';

export interface TransportInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  redirect?: 'manual';
}

/** The answer: the subset of a fetch Response that kr reads. */
export interface TransportResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly url: string;
  readonly headers: { get(name: string): string | null };
  readonly body: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  json(): Promise<unknown>;
}

const abortError = (signal: AbortSignal): unknown =>
  signal.reason instanceof Error || signal.reason instanceof DOMException ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

export async function nodeFetch(input: URL | string, init: TransportInit = {}): Promise<TransportResponse> {
  const url = new URL(String(input));
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const signal = init.signal;
  if (signal?.aborted) throw abortError(signal);
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(init.body));
  const options: RequestOptions = { method: init.method ?? 'GET', headers };

  return new Promise<TransportResponse>((resolve, reject) => {
    let answer: IncomingMessage | undefined;
    const req = request(url, options);
    const onAbort = () => {
      const reason = abortError(signal!);
      req.destroy(reason as Error);
      answer?.destroy(reason as Error);
      reject(reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    req.on('error', (e) => {
      done();
      reject(signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: e }));
    });
    req.on('response', (res) => {
      answer = res;
      res.on('close', done);
      const status = res.statusCode ?? 0;
      const noBody = status === 204 || status === 304 || options.method === 'HEAD';
      let stream: ReadableStream<Uint8Array> | null | undefined;
      let used = false;
      const take = () => {
        if (used) throw new TypeError('Body is unusable: Body has already been read');
        used = true;
      };
      const readAll = (): Promise<Buffer> => {
        take();
        return new Promise<Buffer>((ok, fail) => {
          // Cut before the body was asked for: its events are gone, the reason is not.
          if (signal?.aborted) return fail(abortError(signal));
          if (res.destroyed && !res.readableEnded) return fail(new TypeError('terminated', { cause: new Error('the connection was closed before the answer ended') }));
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => ok(Buffer.concat(chunks)));
          // Cut by the signal (the time limit): its reason, whichever of these events comes first.
          const cut = (e: Error) => fail(signal?.aborted ? abortError(signal) : new TypeError('terminated', { cause: e }));
          res.on('error', cut);
          res.on('aborted', () => cut(new Error('the connection was closed before the answer ended')));
        });
      };
      resolve({
        status,
        statusText: res.statusMessage ?? '',
        ok: status >= 200 && status < 300,
        url: url.toString(),
        headers: {
          get(name: string): string | null {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(', ') : String(v);
          },
        },
        get body(): ReadableStream<Uint8Array> | null {
          if (noBody) return null;
          if (stream === undefined) {
            take();
            stream = Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>;
          }
          return stream;
        },
        text: async () => (await readAll()).toString('utf8'),
        arrayBuffer: async () => {
          const b = await readAll();
          return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
        },
        json: async () => JSON.parse((await readAll()).toString('utf8')) as unknown,
      });
    });
    req.end(init.body);
  });
}
