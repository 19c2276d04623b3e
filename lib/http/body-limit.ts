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
 */
import type { Context, MiddlewareHandler } from 'hono';

const tooLarge = (c: Context) => c.json({ error: 'request body too large' }, 413);

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
    if (raw.body === null || raw.bodyUsed) return next();

    const reader = raw.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
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
