/**
 * The client side of a repository's live events (docs/api.md "Live events"), shared by `kr watch`, `kr mcp` and any
 * web client: web-standard code (fetch, streams, TextDecoder), no Node module.
 *
 *  - {@link SseParser} (./sse-parser.ts, also the dashboard's) reads the `text/event-stream` format.
 *  - {@link followEvents} keeps one stream open: it is given the opening request (EventSource cannot send an
 *    `Authorization` header, so the caller's fetch does), resumes with `Last-Event-ID` after a drop or a server
 *    restart, reconnects with a bounded, jittered backoff, drops a connection silent for longer than three
 *    server pings, and ends on `event: revoked`. Events are handed over one at a time, each awaited: an event
 *    counts as seen (its id is the next `Last-Event-ID`) only once its handler has returned, so a handler that
 *    fails with a passing error (the server went away during a pull) has the event replayed after reconnecting.
 */
import { MemberEventData, PushEventData, StreamNotice } from '../../../schema/wire/events.ts';
import { SseParser, type SseMessage } from './parser.ts';

export { MAX_EVENT_CHARS, MAX_LINE_CHARS, SseParser, type SseMessage } from './parser.ts';

/** No byte (not even a `: ping`) for this long: the connection is taken for dead (the server pings every 15 s at most). */
export const IDLE_MS = 45_000;
/** Reconnection delays: doubling from the first to the last, each a random point of its upper half. */
export const BACKOFF_FIRST_MS = 500;
export const BACKOFF_MAX_MS = 30_000;

/** What a follower hands its handler. A `reset` means events may have been missed: pull everything. */
export type LiveEvent =
  | { type: 'push'; id: string | null; data: PushEventData }
  | { type: 'member'; id: string | null; data: MemberEventData }
  | { type: 'reset'; reason: string };

/** Why following ended (other than by an error). */
export type FollowEnd = { kind: 'stopped' } | { kind: 'revoked'; reason: string };

/** What happens to the connection, for the caller to tell its user. */
export type FollowNotice =
  | { kind: 'connected'; first: boolean; resumed: boolean }
  | { kind: 'disconnected'; why: string; retryInMs: number }
  | { kind: 'ignored'; why: string };

export interface FollowOptions {
  /** Opens the stream (GET /v1/repos/:id/events with the caller's credentials), `Last-Event-ID` when not null. */
  open(lastEventId: string | null, signal: AbortSignal): Promise<Response>;
  /** The error for an answer that is not an event stream (a refusal: 401, 403, 429, ...). */
  refusal(res: Response): Promise<Error>;
  /**
   * Whether an error (opening the stream, or thrown by a handler) is passing: then the follower reconnects after
   * a delay; otherwise it is thrown to the caller. `connectedBefore`: a stream was open earlier.
   */
  retryable(e: unknown, connectedBefore: boolean): boolean;
  /**
   * Each time a stream is open, before its events are read: `resumed` when it resumes after an event id (the
   * server replays what was missed); otherwise events between the last connection and this one are not
   * replayed, and a client that needs them pulls here.
   */
  onConnected?(c: { first: boolean; resumed: boolean }): Promise<void> | void;
  onEvent(e: LiveEvent): Promise<void> | void;
  onNotice?(n: FollowNotice): void;
  /** Aborting it stops following: the promise resolves with `stopped` once the handler in progress returned. */
  signal?: AbortSignal;
  /** Resume after this id on the first connection. */
  lastEventId?: string | null;
  idleMs?: number;
  backoffFirstMs?: number;
  backoffMaxMs?: number;
  /** [0, 1): the jitter's source. */
  random?: () => number;
  lineChars?: number;
  eventChars?: number;
}

const isEventStream = (res: Response): boolean => res.status === 200 && (res.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream') && res.body !== null;

/** The delay before reconnection attempt `n` (0-based): doubling, capped, a random point of its upper half. */
export function backoffDelay(n: number, firstMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, firstMs * 2 ** Math.min(n, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

/** The connection of an open stream failed while its events were read (dropped, cut, timed out): always passing. */
export class StreamDropped extends Error {
  override readonly name = 'StreamDropped';
}

class Revoked {
  constructor(readonly reason: string) {}
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Follows a repository's event stream until `signal` aborts (`stopped`), the server ends it with
 * `event: revoked` (`revoked`, with the server's reason), or an error that is not {@link FollowOptions.retryable}
 * (thrown). See the module comment.
 */
export async function followEvents(opts: FollowOptions): Promise<FollowEnd> {
  const stop = opts.signal ?? new AbortController().signal;
  const idleMs = opts.idleMs ?? IDLE_MS;
  const random = opts.random ?? Math.random;
  let lastEventId = opts.lastEventId ?? null;
  let first = true;
  let connectedBefore = false;
  let attempt = 0;

  /** Reads one open stream to its end; returns the revocation when the server revoked it. */
  const read = async (res: Response, conn: AbortController): Promise<Revoked | null> => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser(opts.lineChars, opts.eventChars);
    let idle: ReturnType<typeof setTimeout> | null = null;
    const arm = () => {
      if (idle !== null) clearTimeout(idle);
      idle = setTimeout(() => conn.abort(new Error(`no word from the server for ${Math.round(idleMs / 1000)} s`)), idleMs);
    };
    const disarm = () => {
      if (idle !== null) clearTimeout(idle);
      idle = null;
    };
    try {
      arm();
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (e) {
          // The idle timer's reason when it cut the connection, else the transport's own.
          throw new StreamDropped(messageOf(conn.signal.aborted && conn.signal.reason instanceof Error ? conn.signal.reason : e));
        }
        const { value, done } = chunk;
        if (done) return null;
        // Something arrived: the connection works, so the next drop starts the backoff afresh.
        attempt = 0;
        const events = parser.push(decoder.decode(value, { stream: true }));
        // The time a handler takes (a pull) is not silence from the server.
        disarm();
        for (const m of events) {
          const revoked = await handle(m);
          if (revoked) return revoked;
          if (stop.aborted) return null;
        }
        arm();
      }
    } finally {
      disarm();
      reader.cancel().catch(() => undefined);
    }
  };

  const handle = async (m: SseMessage): Promise<Revoked | null> => {
    const id = m.id ?? null;
    const json = (): unknown => {
      try {
        return JSON.parse(m.data);
      } catch {
        return undefined;
      }
    };
    if (m.event === 'revoked') return new Revoked(StreamNotice.safeParse(json()).data?.reason ?? 'access ended');
    if (m.event === 'reset') {
      await opts.onEvent({ type: 'reset', reason: StreamNotice.safeParse(json()).data?.reason ?? 'reset' });
    } else if (m.event === 'push') {
      // A push we cannot read still changed the repository: the client pulls everything instead.
      const data = m.oversized ? null : PushEventData.safeParse(json()).data;
      if (data) await opts.onEvent({ type: 'push', id, data });
      else {
        opts.onNotice?.({ kind: 'ignored', why: m.oversized ? 'a push event over the size a client takes' : 'a push event that does not parse' });
        await opts.onEvent({ type: 'reset', reason: m.oversized ? 'a push event too large to read' : 'a push event that does not parse' });
      }
    } else if (m.event === 'member') {
      const data = m.oversized ? null : MemberEventData.safeParse(json()).data;
      if (data) await opts.onEvent({ type: 'member', id, data });
      else opts.onNotice?.({ kind: 'ignored', why: 'a member event that does not parse' });
    }
    if (id !== null) lastEventId = id;
    return null;
  };

  while (!stop.aborted) {
    const conn = new AbortController();
    const onStop = () => conn.abort(stop.reason);
    stop.addEventListener('abort', onStop);
    let why: string;
    try {
      const res = await opts.open(lastEventId, conn.signal);
      if (!isEventStream(res)) throw await opts.refusal(res);
      connectedBefore = true;
      const resumed = lastEventId !== null;
      opts.onNotice?.({ kind: 'connected', first, resumed });
      const wasFirst = first;
      first = false;
      await opts.onConnected?.({ first: wasFirst, resumed });
      if (stop.aborted) break;
      const revoked = await read(res, conn);
      if (revoked) return { kind: 'revoked', reason: revoked.reason };
      if (stop.aborted) break;
      why = 'the server ended the stream';
    } catch (e) {
      if (stop.aborted) break;
      if (!(e instanceof StreamDropped) && !opts.retryable(e, connectedBefore)) throw e;
      why = messageOf(e);
    } finally {
      stop.removeEventListener('abort', onStop);
      conn.abort();
    }
    const delay = backoffDelay(attempt++, opts.backoffFirstMs ?? BACKOFF_FIRST_MS, opts.backoffMaxMs ?? BACKOFF_MAX_MS, random);
    opts.onNotice?.({ kind: 'disconnected', why, retryInMs: delay });
    await sleep(delay, stop);
  }
  return { kind: 'stopped' };
}
