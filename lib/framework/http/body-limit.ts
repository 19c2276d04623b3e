/**
 * Request bodies (docs/limits.md "Request bodies"): read only after authentication, capped per route, cut off when
 * they stop arriving or take too long, and bounded all together, per client and per identity.
 *
 * - **Per route cap.** Each route declares its body (lib/framework/route.ts `body`): `none` (never read, nothing
 *   mounted), `small` (JSON under SMALL_BODY_BYTES, or SERVICE_MAX_BODY_BYTES if that is lower) or `push`
 *   (SERVICE_MAX_BODY_BYTES). Over the cap → 413 `request body too large`, on the declared Content-Length
 *   before anything is read, and on the bytes actually read (chunked bodies declare nothing).
 * - **Lazy.** lib/framework/app.ts mounts `bodyGuard` after `authenticate`; it only checks the declared length and
 *   puts a guard in front of the body. Nothing is read until the handler asks (`readBody`, which
 *   `parseBody` uses), so push's membership precheck still comes before its body, and a refused request
 *   leaves its body unread (the Node adapter drains or closes the rest after the response).
 * - **Where the bytes come from** is the runtime's (`BodySourceOf`): the request's web stream by default
 *   (Workers, in-process `app.request()`); on Node, lib/runtime/node/body.ts reads the socket's IncomingMessage
 *   directly, which spares every request with a body a web stream, a second Request and their promises
 *   (a fifth of a one-page push's time on the event loop).
 * - **Idle timeout and deadline.** While the handler waits for the next chunk, a timer runs; when no byte
 *   arrives for `idleMs` (SERVICE_BODY_IDLE_TIMEOUT_MS), or the body is not whole `deadlineMs` after its
 *   first byte (SERVICE_BODY_TIMEOUT_MS, 120 s), however steadily it trickles → 408 `request body timeout`
 *   with `Connection: close`.
 * - **Budgets.** A BodyBudget counts the bytes of every body being read against a ceiling. A body reserves
 *   its declared Content-Length when its reading starts (so many slow uploads cannot each claim a share
 *   they have not sent yet), a body without one reserves chunk by chunk; a reservation past the ceiling →
 *   503 `server busy` with `Retry-After`. Reservations are released when the request ends. lib/framework/app.ts
 *   keeps two budgets: pushes (SERVICE_MAX_INFLIGHT_BODY_BYTES) and small JSON bodies
 *   (SMALL_BODIES_CEILING), so that pushes filling theirs never turn sign-in, PAT creation or the billing
 *   webhook away. The push ceiling's default (32 MiB: four maximal pushes) is set by measurement: a body
 *   costs about three times its size while it is read, decoded and parsed (eight 8 MiB bodies at once
 *   lifted the peak RSS by 180 MiB), so 32 MiB keeps a default server well under 300 MiB.
 * - **Shares.** Within a budget, no one holder may hold more than a quarter of the ceiling (`share`): a
 *   body is held for its client address (the rate limiter's key: IPv4 address, IPv6 /64) and, behind
 *   authentication, for its identity (`bodyHolders`). Past either share → 503 `server busy`, while other
 *   addresses and identities still get in; so a few slow uploads of one client (or of one account spread
 *   over many addresses) cannot hold the whole ceiling. An identity is a user, whichever session or PAT
 *   it comes with; the legacy key is one identity, shared by everyone who uses it. lib/framework/config.ts keeps
 *   the push ceiling at four maximal bodies or more, so that a share always fits one.
 * - A body that breaks off (client gone, broken chunked framing) → 400 `request body incomplete`.
 *
 * Web-standard only (streams, setTimeout, performance.now): the same code runs on Workers, where the
 * budgets, like everything in memory, are per isolate (one isolate serves many requests, not all of them).
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Identity } from '../../auth/identity.ts';
import { HttpError } from '../../core/errors.ts';
import { R, type Refusal } from '../../core/refusals.ts';

/** Cap of routes whose body is small JSON: sign-in, PATs, repository creation, invite keys, join, billing webhook. */
export const SMALL_BODY_BYTES = 64 * 1024;
/** Ceiling of the small JSON bodies' own budget: 64 maximal ones, 16 per holder. */
export const SMALL_BODIES_CEILING = 64 * SMALL_BODY_BYTES;
/** A holder's share of a budget is its ceiling divided by this. */
export const SHARES_PER_BUDGET = 4;
/** `Retry-After` of a 503 `server busy`, in seconds. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * What a route's body is: see the file comment. `import` (a git bundle, up to SERVICE_MAX_IMPORT_BYTES) is
 * streamed to storage as it arrives (`streamBody`) instead of being held, so its budget counts bytes being
 * stored rather than memory: a ceiling of its own, four maximal imports.
 */
export type BodyKind = 'none' | 'small' | 'push' | 'git' | 'import';
/** Cap of a git client's upload-pack request (want and have lines: a round of 32,768 haves is 1.6 MB). */
export const GIT_BODY_BYTES = 2 * 1024 * 1024;
/** Ceiling of git requests' own budget: eight maximal ones, two per holder. */
export const GIT_BODIES_CEILING = 8 * GIT_BODY_BYTES;

/** A refused body: an HttpError, with its response headers (rendered by lib/framework/app.ts). */
export class BodyRefused extends HttpError {
  constructor(refusal: Refusal, message: string = refusal.message, headers: Record<string, string> = {}) {
    super(refusal.status, refusal.code, message, undefined, headers);
    this.name = 'BodyRefused';
  }
}

/** A 413's refusal and message: `request body too large`, or an import's, which says the limit. */
export interface TooLarge {
  refusal: Refusal<never>;
  message: string;
}
const TOO_LARGE: TooLarge = { refusal: R.body_too_large, message: R.body_too_large.message };

const tooLarge = (t: TooLarge = TOO_LARGE) => new BodyRefused(t.refusal as Refusal, t.message);
const busy = () => new BodyRefused(R.server_busy, undefined, { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) });
const timedOut = () => new BodyRefused(R.body_timeout, undefined, { Connection: 'close' });
const incomplete = () => new BodyRefused(R.body_incomplete);

/**
 * Bytes held by the bodies in flight, against a ceiling, and by each holder (a client address, an
 * identity), against its share: a quarter of the ceiling.
 */
export class BodyBudget {
  readonly ceiling: number;
  readonly share: number;
  #held = 0;
  readonly #byHolder = new Map<string, number>();
  constructor(ceiling: number) {
    if (!Number.isSafeInteger(ceiling) || ceiling < 0) throw new RangeError(`ceiling must be a non-negative integer, got ${ceiling}`);
    this.ceiling = ceiling;
    this.share = Math.floor(ceiling / SHARES_PER_BUDGET);
  }
  get held(): number {
    return this.#held;
  }
  /** Bytes held for one holder. */
  heldBy(holder: string): number {
    return this.#byHolder.get(holder) ?? 0;
  }
  /** Takes `n` bytes for `holders` if they fit under the ceiling and each holder's share; false (nothing taken) otherwise. */
  tryReserve(n: number, holders: readonly string[]): boolean {
    if (this.#held + n > this.ceiling) return false;
    for (const h of holders) if (this.heldBy(h) + n > this.share) return false;
    this.#held += n;
    for (const h of holders) this.#byHolder.set(h, this.heldBy(h) + n);
    return true;
  }
  /** Gives back `n` bytes taken for `holders`. */
  release(n: number, holders: readonly string[]): void {
    this.#held -= n;
    for (const h of holders) {
      const left = this.heldBy(h) - n;
      if (left > 0) this.#byHolder.set(h, left);
      else this.#byHolder.delete(h);
    }
  }
}

/**
 * Who a body is held for: its client address (already reduced to the rate limiter's key, `ipBucketKey`)
 * and its identity, if the route authenticates. A user is one identity whichever session or PAT they use
 * (more tokens buy no more share); the legacy key is one identity for all who hold it.
 */
export function bodyHolders(address: string, identity: Identity | undefined): string[] {
  const holders = [`address ${address}`];
  if (identity) holders.push(identity.kind === 'user' ? `user ${identity.userId}` : 'legacy');
  return holders;
}

/** A request body as the runtime delivers it: chunk by chunk, null at its end. */
export interface BodySource {
  /** The next chunk, or null at the end; rejects when the body breaks off (client gone, bad framing). */
  next(): Promise<Uint8Array | null>;
  /** Nothing more will be read: stop taking chunks (the runtime drains or closes the rest). */
  cancel(): void;
}

/** The runtime's body of a request; undefined: read the Request's web stream. */
export type BodySourceOf = (c: Context) => BodySource | undefined;

/** A Request's web stream as a BodySource (undefined when it has no body). */
export function webBodySource(req: Request): BodySource | undefined {
  const body = req.body;
  if (!body) return undefined;
  const reader = body.getReader();
  return {
    next: async () => {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
    cancel: () => {
      reader.cancel().catch(() => undefined);
    },
  };
}

export interface BodyGuardOptions {
  /** The route's cap in bytes. */
  maxBytes: number;
  budget: BodyBudget;
  /** Whom a request's body is held for (`bodyHolders`); none: only the ceiling applies. */
  holdersOf?: (c: Context) => readonly string[];
  /** A body with no new byte for this long is cut off (408). */
  idleMs: number;
  /** A body not whole this long after its first byte is cut off (408), whatever its pace. */
  deadlineMs: number;
  /** Where the bytes come from (default: the Request's web stream). */
  sourceOf?: BodySourceOf;
  /** The 413 (default `request body too large`). */
  tooLarge?: TooLarge;
}

/** The guarded body of each request that has one (set by bodyGuard, read by readBody). */
const guarded = new WeakMap<Request, GuardedBody>();
const EMPTY = new Uint8Array(0);

/**
 * The whole request body, through the route's guard (cap, idle timeout, budget): the one way handlers read a
 * body. A route without a guard (no body declared, or Content-Length 0) reads what the request holds.
 */
export async function readBody(c: Context): Promise<Uint8Array> {
  const body = guarded.get(c.req.raw);
  if (body) return body.readAll();
  if (c.req.raw.headers.get('content-length') === '0') return EMPTY;
  return new Uint8Array(await c.req.raw.arrayBuffer());
}

/**
 * The request body chunk by chunk, through the route's guard (cap, idle timeout, deadline, budget), each
 * handed to `onChunk` (awaited before the next is read) and not kept: for bodies that go to storage as they
 * arrive (an import). Returns the bytes read.
 */
export async function streamBody(c: Context, onChunk: (chunk: Uint8Array) => Promise<void>): Promise<number> {
  const body = guarded.get(c.req.raw);
  if (body) return body.pump(onChunk);
  const reader = c.req.raw.body?.getReader();
  let n = 0;
  if (!reader) return n;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return n;
    n += value.byteLength;
    await onChunk(value);
  }
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
  // A holder must be able to send one body of the largest size, or such a body could never be read.
  if (opts.holdersOf && opts.maxBytes > opts.budget.share) {
    throw new RangeError(`maxBytes (${opts.maxBytes}) is over a holder's share of the budget (${opts.budget.share})`);
  }
  return async function bodyGuardMiddleware(c, next) {
    const raw = c.req.raw;
    if (raw.method === 'GET' || raw.method === 'HEAD') return next();
    const declared = declaredLength(raw.headers);
    if (declared !== undefined && declared > opts.maxBytes) return c.json(tooLarge(opts.tooLarge).body(), 413);
    if (declared === 0) return next();
    const body = new GuardedBody(() => opts.sourceOf?.(c) ?? webBodySource(raw), declared, opts.holdersOf?.(c) ?? [], opts);
    c.req.raw = guardedRequest(raw, body);
    guarded.set(c.req.raw, body);
    try {
      await next();
    } finally {
      body.end();
    }
  };
}

/**
 * The request as handlers see it: the same request, but whatever reads its body (`c.req.json()`,
 * `c.req.arrayBuffer()`, `.body`…) reads it through the guard. A proxy rather than a new Request: making
 * one (with a stream of the body) cost more than the rest of a small request's handling.
 */
function guardedRequest(raw: Request, body: GuardedBody): Request {
  const bytes = () => body.readAll();
  const arrayBuffer = async (): Promise<ArrayBuffer> => {
    const b = await bytes();
    return b.buffer instanceof ArrayBuffer && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : new Uint8Array(b).buffer;
  };
  const type = () => raw.headers.get('content-type') ?? '';
  const overrides: Record<string | symbol, unknown> = {
    arrayBuffer,
    bytes,
    text: async () => decoder.decode(await bytes()),
    json: async () => JSON.parse(decoder.decode(await bytes())),
    blob: async () => new Blob([await arrayBuffer()], { type: type() }),
    formData: async () => new Response(await arrayBuffer(), { headers: { 'content-type': type() } }).formData(),
  };
  return new Proxy(raw, {
    get(target, prop) {
      if (prop === 'body') {
        // Handed out whole once read (highWaterMark 0: nothing is read before someone pulls).
        return new ReadableStream<Uint8Array>(
          {
            async pull(controller) {
              controller.enqueue(await bytes());
              controller.close();
            },
          },
          { highWaterMark: 0 },
        );
      }
      if (Object.hasOwn(overrides, prop)) return overrides[prop];
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const decoder = new TextDecoder();

/** The guarded body of one request: reads from its source only when asked, once. */
class GuardedBody {
  readonly #sourceOf: () => BodySource | undefined;
  readonly #declared: number | undefined;
  readonly #holders: readonly string[];
  readonly #opts: BodyGuardOptions;
  #source: BodySource | undefined;
  /** performance.now() past which the body is cut off; set at its first byte. */
  #deadline = Infinity;
  #whole: Promise<Uint8Array> | undefined;
  #read = 0;
  #reserved = 0;
  #ended = false;

  constructor(sourceOf: () => BodySource | undefined, declared: number | undefined, holders: readonly string[], opts: BodyGuardOptions) {
    this.#sourceOf = sourceOf;
    this.#declared = declared;
    this.#holders = holders;
    this.#opts = opts;
  }

  /** The whole body (the same promise however often it is asked for). */
  readAll(): Promise<Uint8Array> {
    // Read after the request ended (a handler keeping the body): refuse rather than reserve again.
    if (this.#ended) return Promise.reject(incomplete());
    this.#whole ??= this.#collect().catch((e) => {
      this.#source?.cancel();
      throw e;
    });
    return this.#whole;
  }

  /** Every chunk, through the guard, handed to `onChunk` and not kept (streamBody). The bytes read. */
  async pump(onChunk: (chunk: Uint8Array) => Promise<void>): Promise<number> {
    if (this.#ended || this.#whole) throw incomplete();
    this.#whole = Promise.resolve(EMPTY);
    try {
      await this.#each(onChunk);
    } catch (e) {
      this.#source?.cancel();
      throw e;
    }
    return this.#read;
  }

  async #each(onChunk: (chunk: Uint8Array) => void | Promise<void>): Promise<void> {
    const source = (this.#source = this.#sourceOf());
    if (!source) return;
    if (this.#declared !== undefined) this.#reserve(this.#declared);
    for (;;) {
      const value = await this.#next(source);
      if (value === null) break;
      if (this.#ended) throw incomplete();
      if (this.#read === 0 && value.byteLength > 0) this.#deadline = performance.now() + this.#opts.deadlineMs;
      this.#read += value.byteLength;
      if (this.#read > this.#opts.maxBytes) throw tooLarge(this.#opts.tooLarge);
      if (this.#read > this.#reserved) this.#reserve(this.#read - this.#reserved);
      await onChunk(value);
    }
  }

  async #collect(): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    await this.#each((value) => {
      chunks.push(value);
    });
    if (chunks.length === 0) return EMPTY;
    if (chunks.length === 1) return chunks[0]!;
    const whole = new Uint8Array(this.#read);
    let at = 0;
    for (const chunk of chunks) {
      whole.set(chunk, at);
      at += chunk.byteLength;
    }
    return whole;
  }

  #reserve(n: number): void {
    if (!this.#opts.budget.tryReserve(n, this.#holders)) throw busy();
    this.#reserved += n;
  }

  /** The next chunk; 408 when none comes within idleMs or the deadline passes first; 400 when the body breaks off. */
  async #next(source: BodySource): Promise<Uint8Array | null> {
    // Past the deadline the timer fires at once, but a chunk (or the end) already there still wins the race.
    const left = Math.max(0, this.#deadline - performance.now());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut()), Math.min(this.#opts.idleMs, left));
    });
    const read = source.next().catch(() => {
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
    this.#source?.cancel();
    this.#opts.budget.release(this.#reserved, this.#holders);
    this.#reserved = 0;
  }
}

/**
 * For routes that read no body: a declared Content-Length over the body cap is refused all the same (413,
 * docs/limits.md "Request bodies"), without reading anything; any body is otherwise left unread.
 */
export function declaredCap(maxBytes: number): MiddlewareHandler {
  return async function declaredCapMiddleware(c, next) {
    const declared = declaredLength(c.req.raw.headers);
    if (declared !== undefined && declared > maxBytes) return c.json(tooLarge().body(), 413);
    return next();
  };
}
