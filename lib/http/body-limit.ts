/**
 * Request bodies (API.md "Conventions"): read only after authentication, capped per route, cut off when
 * they stop arriving, and bounded all together.
 *
 * - **Per route cap.** Each route declares its body (lib/route.ts `body`): `none` (never read, nothing
 *   mounted), `small` (JSON under SMALL_BODY_BYTES, or SERVICE_MAX_BODY_BYTES if that is lower) or `push`
 *   (SERVICE_MAX_BODY_BYTES). Over the cap → 413 `request body too large`, on the declared Content-Length
 *   before anything is read, and on the bytes actually read (chunked bodies declare nothing).
 * - **Lazy.** lib/app.ts mounts `bodyGuard` after `authenticate`; it only checks the declared length and
 *   swaps `c.req.raw` for a request whose body pulls from the real one through a guard. Nothing is read
 *   until the handler asks (`parseBody`, `c.req.json()`, `c.req.arrayBuffer()`…), so push's membership
 *   precheck still comes before its body, and a refused request leaves its body unread (the Node adapter
 *   drains or closes the rest after the response).
 * - **Idle timeout.** While the handler waits for the next chunk, a timer runs; when no byte arrives for
 *   `idleMs` → 408 `request body timeout` with `Connection: close`.
 * - **Ceiling.** One BodyBudget per app counts the bytes of every body being read. A body reserves its
 *   declared Content-Length when its reading starts (so many slow uploads cannot each claim a share they
 *   have not sent yet), a body without one reserves chunk by chunk; a reservation past the ceiling → 503
 *   `server busy` with `Retry-After`. Reservations are released when the request ends. The default
 *   ceiling (SERVICE_MAX_INFLIGHT_BODY_BYTES, 32 MiB: four maximal pushes) is set by measurement: a body
 *   costs about three times its size while it is read, decoded and parsed (eight 8 MiB bodies at once
 *   lifted the peak RSS by 180 MiB), so 32 MiB keeps a default server well under 300 MiB.
 * - A body that breaks off (client gone, broken chunked framing) → 400 `request body incomplete`.
 *
 * Web-standard only (streams, setTimeout): the same code runs on Workers.
 */
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './errors.ts';

/** Cap of routes whose body is small JSON: sign-in, PATs, repository creation, invite keys, join. */
export const SMALL_BODY_BYTES = 64 * 1024;
/** `Retry-After` of a 503 `server busy`, in seconds. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

/** What a route's body is: see the file comment. */
export type BodyKind = 'none' | 'small' | 'push';

/** A refused body: an HttpError, with its response headers (rendered by lib/app.ts). */
export class BodyRefused extends HttpError {
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(status, message, undefined, headers);
    this.name = 'BodyRefused';
  }
}

const tooLarge = () => new BodyRefused(413, 'request body too large');
const busy = () => new BodyRefused(503, 'server busy', { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) });
const idle = () => new BodyRefused(408, 'request body timeout', { Connection: 'close' });
const incomplete = () => new BodyRefused(400, 'request body incomplete');

/** Bytes held by the bodies in flight of one app, against a ceiling. */
export class BodyBudget {
  readonly ceiling: number;
  #held = 0;
  constructor(ceiling: number) {
    if (!Number.isSafeInteger(ceiling) || ceiling < 0) throw new RangeError(`ceiling must be a non-negative integer, got ${ceiling}`);
    this.ceiling = ceiling;
  }
  get held(): number {
    return this.#held;
  }
  /** Takes `n` bytes if they fit under the ceiling; false (nothing taken) otherwise. */
  tryReserve(n: number): boolean {
    if (this.#held + n > this.ceiling) return false;
    this.#held += n;
    return true;
  }
  release(n: number): void {
    this.#held -= n;
  }
}

export interface BodyGuardOptions {
  /** The route's cap in bytes. */
  maxBytes: number;
  budget: BodyBudget;
  /** A body with no new byte for this long is cut off (408). */
  idleMs: number;
}

/** Content-Length when it governs the framing (RFC 9112 §6.3: Transfer-Encoding wins), else undefined. */
function declaredLength(headers: Headers): number | undefined {
  if (headers.has('transfer-encoding')) return undefined;
  const v = headers.get('content-length')?.trim();
  return v !== undefined && /^[0-9]+$/.test(v) ? Number(v) : undefined;
}

/** Middleware for routes with a body; see the file comment. Mount it after authentication. */
export function bodyGuard(opts: BodyGuardOptions): MiddlewareHandler {
  if (!Number.isSafeInteger(opts.maxBytes) || opts.maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${opts.maxBytes}`);
  }
  return async function bodyGuardMiddleware(c, next) {
    const raw = c.req.raw;
    if (raw.method === 'GET' || raw.method === 'HEAD') return next();
    const declared = declaredLength(raw.headers);
    if (declared !== undefined && declared > opts.maxBytes) return c.json({ error: 'request body too large' }, 413);
    if (declared === 0) return next();
    const body = new GuardedBody(raw, declared, opts);
    c.req.raw = new Request(raw.url, {
      method: raw.method,
      headers: raw.headers,
      body: body.stream,
      duplex: 'half',
    } as RequestInit);
    try {
      await next();
    } finally {
      body.end();
    }
  };
}

/** The guarded body of one request: pulls from the real body only when read. */
class GuardedBody {
  readonly stream: ReadableStream<Uint8Array>;
  readonly #source: Request;
  readonly #declared: number | undefined;
  readonly #opts: BodyGuardOptions;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #read = 0;
  #reserved = 0;
  #ended = false;

  constructor(source: Request, declared: number | undefined, opts: BodyGuardOptions) {
    this.#source = source;
    this.#declared = declared;
    this.#opts = opts;
    // highWaterMark 0: nothing is pulled before someone reads.
    this.stream = new ReadableStream<Uint8Array>({ pull: (controller) => this.#pull(controller) }, { highWaterMark: 0 });
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    // Read after the request ended (a handler keeping the stream): refuse rather than reserve again.
    if (this.#ended) throw incomplete();
    if (!this.#reader) {
      const body = this.#source.body;
      if (!body) return controller.close();
      if (this.#declared !== undefined) this.#reserve(this.#declared);
      this.#reader = body.getReader();
    }
    const { done, value } = await this.#next(this.#reader);
    if (done) return controller.close();
    this.#read += value.byteLength;
    if (this.#read > this.#opts.maxBytes) throw tooLarge();
    if (this.#read > this.#reserved) this.#reserve(this.#read - this.#reserved);
    controller.enqueue(value);
  }

  #reserve(n: number): void {
    if (!this.#opts.budget.tryReserve(n)) throw busy();
    this.#reserved += n;
  }

  /** The next chunk, or 408 when none comes within idleMs, or 400 when the body breaks off. */
  async #next(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<ReadableStreamReadResult<Uint8Array>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(idle()), this.#opts.idleMs);
    });
    const read = reader.read().catch(() => {
      throw incomplete();
    });
    try {
      return await Promise.race([read, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The request is over: give its bytes back to the budget. The unread rest is the runtime's to drain. */
  end(): void {
    this.#ended = true;
    this.#opts.budget.release(this.#reserved);
    this.#reserved = 0;
  }
}

/**
 * For routes that read no body: a declared Content-Length over the body cap is refused all the same (413,
 * API.md "Conventions"), without reading anything; any body is otherwise left unread.
 */
export function declaredCap(maxBytes: number): MiddlewareHandler {
  return async function declaredCapMiddleware(c, next) {
    const declared = declaredLength(c.req.raw.headers);
    if (declared !== undefined && declared > maxBytes) return c.json({ error: 'request body too large' }, 413);
    return next();
  };
}
