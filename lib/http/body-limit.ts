/**
 * Request body cap (API.md "Conventions"): 413 `{"error":"request body too large"}`, checked before any
 * parsing, both on the declared Content-Length and on the bytes actually received (chunked bodies carry no
 * Content-Length, and a declared length is not proof of what arrives).
 *
 * The body is read here, up to the cap, and handed on as a buffered request, so handlers keep using
 * `c.req.json()`, `c.req.text()`, `c.req.arrayBuffer()` or `c.req.raw` as usual. Holding at most
 * `maxBytes` per request in memory is the price; the cap bounds it.
 *
 * On overflow the incoming stream is left alone rather than cancelled: cancelling it would destroy the
 * socket under @hono/node-server before the 413 could be written. The Node adapter drains or closes the
 * unread remainder after the response.
 *
 * A body that breaks off before its end (the client disconnected, or broke the chunked framing) is a client
 * error: 400 `{"error":"request body incomplete"}` (usually no one is left to read it).
 */
import type { Context, MiddlewareHandler } from 'hono';

const tooLarge = (c: Context) => c.json({ error: 'request body too large' }, 413);
const incomplete = (c: Context) => c.json({ error: 'request body incomplete' }, 400);

export function bodyCap(maxBytes: number): MiddlewareHandler {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  return async function bodyCapMiddleware(c, next) {
    const raw = c.req.raw;
    // With Transfer-Encoding present, Content-Length must be ignored (RFC 9112 §6.3); the count still applies.
    if (!raw.headers.has('transfer-encoding')) {
      const declared = raw.headers.get('content-length')?.trim();
      if (declared !== undefined && /^[0-9]+$/.test(declared) && Number(declared) > maxBytes) {
        return tooLarge(c);
      }
    }
    // No handler reads a body on these methods; not touching `raw.body` also spares @hono/node-server
    // from building a full Request for every read.
    const m = c.req.method;
    if (m === 'GET' || m === 'HEAD' || m === 'OPTIONS' || m === 'DELETE') return next();
    if (raw.body === null || raw.bodyUsed) return next();

    const reader = raw.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch {
        // The client went away or broke the framing mid-body (e.g. a bad chunk size): its fault, not ours,
        // and there is no one left to answer. Without this it was an unhandled error logged as a 500.
        return incomplete(c);
      }
      const { done, value } = chunk;
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        reader.releaseLock();
        return tooLarge(c);
      }
      chunks.push(value);
    }
    reader.releaseLock();

    const body = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      body.set(chunk, offset);
      offset += chunk.byteLength;
    }
    c.req.raw = new Request(raw, { body });
    return next();
  };
}
