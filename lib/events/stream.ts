import type { StoredEvent } from './event-log.ts';

/**
 * One open event stream (`GET /v1/repos/:id/events`): the Server-Sent Events text of a repository's events,
 * as a web ReadableStream the runtime writes to the client (Node: @hono/node-server; Workers: the
 * repository's Durable Object's response).
 *
 * Nothing is pushed at the client faster than it reads: the stream's controller holds no queue of its own
 * (high-water mark 0), and text goes out only when the runtime asks for the next chunk (on Node it asks
 * again only once the socket has taken the last one). Events offered meanwhile wait in this stream's own
 * buffer; what it holds and what the runtime has not taken yet together are bounded by `bufferBytes`. A
 * reader that lets it fill is cut at once: the buffer is replaced by an `event: reset`, the stream leaves
 * the hub, and unless the runtime is waiting for text right then (the reset goes out, the stream ends), its
 * connection is cut — so a slow reader never holds memory, a slot, the push that offered the event, nor any
 * other stream. A stream that resumes (`after`) first replays the retained events from the log, a page at a
 * time as the client reads, and goes live once it has caught up with what the hub has announced.
 *
 * An idle stream costs little: the live events it holds are the hub's bytes, encoded once per event and
 * shared by every stream they are offered to (never copied per stream), and it has no timer of its own (the
 * hub's one timer pings, re-checks and cuts).
 */

/** Bytes an event stream may hold for a client that does not read (the events it fell behind by). */
export const STREAM_BUFFER_BYTES = 512 * 1024;
/** Events read from the log per step of a replay. */
const REPLAY_PAGE = 32;

const encoder = new TextEncoder();

/** One Server-Sent Event; `data` is one line of JSON. */
export function sseEvent(event: string, data: string, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`;
}

export const PING = ': ping\n\n';
const PING_BYTES = encoder.encode(PING);
/**
 * An empty comment line: what a probe writes (Workers) to learn whether the client is still there. A comment
 * line is ignored wherever it comes (it does not end an event), so a reader never sees it.
 */
export const PROBE = ':\n';
const PROBE_BYTES = encoder.encode(PROBE);

/** The reason of the `reset` a stream that fell behind ends with. */
export const FELL_BEHIND = 'stream fell behind; pull and reconnect';

/** An event as the hub offers it to live streams: its id and its text, encoded once for all of them. */
export interface EncodedEvent {
  id: number;
  bytes: Uint8Array;
}

/** The bytes of a stored event's Server-Sent Event. */
export function encodeEvent(e: StoredEvent): EncodedEvent {
  return { id: e.id, bytes: encoder.encode(sseEvent(e.kind, e.data, e.id)) };
}

/** What a stream asks of the hub that holds it. */
export interface StreamHost {
  /** The newest event id announced (published) for the stream's repository. */
  published(): number;
  /** Retained events after `after` and up to `upto`, oldest first. */
  page(after: number, upto: number, limit: number): Promise<StoredEvent[]>;
  /** The stream no longer takes events (ended, dropped or cancelled): it leaves the hub. Called once. */
  left(stream: EventStream): void;
  /** The stream ended with a last notice its client has not read yet: cut it if it does not soon. */
  ending(stream: EventStream): void;
  /** A failure while replaying (the stream is ended). */
  failed(e: unknown): void;
}

/** Who holds a stream: for the per-identity cap and the re-checks on ping. */
export interface StreamGrant {
  /** `legacy`, or `user:<id>`: the identity the cap of streams counts against. */
  holder: string;
  /** The user, for ending their streams when they are removed from the repository or disabled. */
  userId: string | null;
  /** The personal access token the stream was opened with, for ending its streams when it is revoked. */
  patId: string | null;
  /** The bearer token, re-checked on each ping (none for the legacy key, which never loses access). */
  token: string | null;
}

export class EventStream {
  readonly body: ReadableStream<Uint8Array>;
  /** The id of the last event put in this stream. */
  cursor: number;
  /** Live (takes what the hub offers) or still replaying from the log. */
  live: boolean;
  /** Text waiting for the client: shared chunks (the hub's encoded events, the ping), never copied here. */
  private queue: Uint8Array[] = [];
  private queued = 0;
  /** Bytes handed to the runtime since it last asked for more (it has not taken them all yet). */
  private inFlight = 0;
  /** open → ending (a last notice queued: reset or revoked) → closed. */
  private state: 'open' | 'ending' | 'closed' = 'open';
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Set while the client waits for text (a pull is pending). */
  private wake: (() => void) | null = null;
  private gone = false;
  private readonly bufferBytes: number;
  /** Cuts the connection under the stream (the runtime's, when it has a way); called at most once. */
  private readonly onCut: (() => void) | undefined;
  /** When an ending stream is cut if its client has not read its last notice (the hub's clock, ms). */
  deadline = 0;

  constructor(
    private readonly host: StreamHost,
    readonly grant: StreamGrant,
    opts: {
      cursor: number;
      live: boolean;
      /** Text to send first (an `event: reset`). */
      first?: string;
      bufferBytes?: number;
      /** Cuts the client's connection at once (Node: destroys the socket); without it the stream fails. */
      onCut?: () => void;
    },
  ) {
    this.bufferBytes = opts.bufferBytes ?? STREAM_BUFFER_BYTES;
    this.onCut = opts.onCut;
    this.cursor = opts.cursor;
    this.live = opts.live;
    if (opts.first) this.push(encoder.encode(opts.first));
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.controller = c;
        },
        pull: (c) => this.pull(c),
        cancel: () => this.finish(),
      },
      { highWaterMark: 0 },
    );
  }

  /** Whether the client is waiting for text (it has read everything so far). */
  get reading(): boolean {
    return this.wake !== null;
  }

  /** Whether the stream has ended and its client has not been sent its last notice yet. */
  get ending(): boolean {
    return this.state === 'ending';
  }

  /** Events the hub announces: those after the cursor are queued; a full buffer cuts the stream. */
  offer(events: readonly EncodedEvent[]): void {
    if (this.state !== 'open' || !this.live) return;
    for (const e of events) {
      if (e.id <= this.cursor) continue;
      this.push(e.bytes);
      this.cursor = e.id;
    }
    this.settle();
  }

  /**
   * Two bytes to an idle stream whose client has read everything (Workers: a client that went away is seen
   * only when something is written to it; this is how its slot is freed within a second, not a ping later).
   */
  probe(): void {
    if (this.state !== 'open' || !this.reading || this.queue.length > 0) return;
    this.push(PROBE_BYTES);
    this.poke();
  }

  /** A keep-alive comment. */
  ping(): void {
    if (this.state !== 'open') return;
    this.push(PING_BYTES);
    this.settle();
  }

  /**
   * Ends the stream after a last notice (`revoked`). It leaves the hub at once; a client that does not read
   * the notice soon (the hub's deadline) has its connection cut.
   */
  end(event: 'revoked' | 'reset', reason: string): void {
    if (this.state !== 'open') return;
    this.push(encoder.encode(sseEvent(event, JSON.stringify({ reason }))));
    this.state = 'ending';
    this.leave();
    this.poke();
    if (this.state === 'ending') this.host.ending(this);
  }

  /**
   * Ends the stream now (the server is stopping, or an ending stream's client did not read its notice in
   * time): a client that has read everything gets the end of the stream; one that is behind has its
   * connection cut, so that no write waits on it.
   */
  close(): void {
    if (this.state === 'closed') return;
    if (this.reading && this.queue.length === 0) {
      this.state = 'ending';
      this.poke();
    } else this.cut();
  }

  /** Past the buffer: the stream is cut at once with `reset` (what it had not sent is dropped). */
  private settle(): void {
    if (this.queued + this.inFlight <= this.bufferBytes) {
      this.poke();
      return;
    }
    this.queue = [];
    this.queued = 0;
    this.push(encoder.encode(sseEvent('reset', JSON.stringify({ reason: FELL_BEHIND }))));
    this.state = 'ending';
    this.leave();
    // A client waiting for text gets the reset and the end of the stream; one that has not taken what it
    // was sent before cannot get it anyway: its connection goes now, not a timeout later.
    if (this.reading && this.inFlight === 0) this.poke();
    else this.cut();
  }

  private push(bytes: Uint8Array): void {
    this.queue.push(bytes);
    this.queued += bytes.byteLength;
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async pull(c: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    // Asked for more: the runtime has taken everything handed to it before.
    this.inFlight = 0;
    for (;;) {
      if (this.state === 'closed') return;
      if (this.queue.length > 0) {
        // Each chunk as it is (shared with other streams): enqueued one after the other, no copy.
        for (const chunk of this.queue) c.enqueue(chunk);
        this.inFlight = this.queued;
        this.queue = [];
        this.queued = 0;
        if (this.state === 'ending') this.closeNow(c);
        return;
      }
      if (this.state === 'ending') {
        this.closeNow(c);
        return;
      }
      if (!this.live) {
        try {
          await this.replay();
        } catch (e) {
          this.host.failed(e);
          this.cut();
          return;
        }
        continue;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** One page of the log after the cursor; live once nothing is left up to what the hub has announced. */
  private async replay(): Promise<void> {
    const upto = this.host.published();
    const events = await this.host.page(this.cursor, upto, REPLAY_PAGE);
    if (this.state !== 'open') return;
    for (const e of events) {
      this.push(encodeEvent(e).bytes);
      this.cursor = e.id;
    }
    if (events.length < REPLAY_PAGE) {
      // Everything up to `upto` is read (events pruned meanwhile are gone for good).
      this.cursor = Math.max(this.cursor, upto);
      // Synchronously with the check: the hub offers what it announces after this to live streams only.
      if (this.cursor >= this.host.published()) this.live = true;
    }
  }

  private closeNow(c: ReadableStreamDefaultController<Uint8Array>): void {
    try {
      c.close();
    } catch {
      // already closed or errored
    }
    this.finish();
  }

  /**
   * Cuts the connection: where the runtime gave a way (Node), the socket goes at once and the runtime
   * cancels the stream; otherwise the stream fails, and the runtime drops the connection.
   */
  cut(): void {
    if (this.state === 'closed') return;
    if (this.onCut) {
      this.finish();
      this.onCut();
      return;
    }
    try {
      this.controller?.error(new Error('event stream dropped'));
    } catch {
      // already closed
    }
    this.finish();
  }

  private finish(): void {
    this.state = 'closed';
    this.queue = [];
    this.queued = 0;
    this.poke();
    this.leave();
  }

  private leave(): void {
    if (this.gone) return;
    this.gone = true;
    this.host.left(this);
  }
}
