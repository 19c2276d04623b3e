import type { StoredEvent } from './log.ts';
import { concatBytes } from '../bytes.ts';

/**
 * One open event stream (`GET /v1/repos/:id/events`): the Server-Sent Events text of a repository's events,
 * as a web ReadableStream the runtime writes to the client (Node: @hono/node-server; Workers: the
 * repository's Durable Object's response).
 *
 * Nothing is pushed at the client faster than it reads: the stream's controller holds no queue of its own
 * (high-water mark 0), and text goes out only when the runtime asks for the next chunk. Events offered
 * meanwhile wait in this stream's own buffer, bounded by `bufferBytes`; a reader that lets it fill is
 * dropped — the buffer is replaced by an `event: reset` and the stream ends — so a slow reader never holds
 * memory or the push that offered the event, nor any other stream. A stream that resumes (`after`) first
 * replays the retained events from the log, a page at a time as the client reads, and goes live once it
 * has caught up with what the hub has announced.
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

/** What a stream asks of the hub that holds it. */
export interface StreamHost {
  /** The newest event id announced (published) for the stream's repository. */
  published(): number;
  /** Retained events after `after` and up to `upto`, oldest first. */
  page(after: number, upto: number, limit: number): Promise<StoredEvent[]>;
  /** The stream no longer takes events (ended, dropped or cancelled): it leaves the hub. Called once. */
  left(stream: EventStream): void;
  /** A failure while replaying (the stream is ended). */
  failed(e: unknown): void;
}

/** Who holds a stream: for the per-identity cap and the re-checks on ping. */
export interface StreamGrant {
  /** `legacy`, or `user:<id>`: the identity the cap of streams counts against. */
  holder: string;
  /** The user, for ending their streams when they are removed from the repository. */
  userId: string | null;
  /** The bearer token, re-checked on each ping (none for the legacy key, which never loses access). */
  token: string | null;
}

export class EventStream {
  readonly body: ReadableStream<Uint8Array>;
  /** The id of the last event put in this stream. */
  cursor: number;
  /** Live (takes what the hub offers) or still replaying from the log. */
  live: boolean;
  private queue: Uint8Array[] = [];
  private queued = 0;
  /** open → ending (a last notice queued: reset or revoked) → closed. */
  private state: 'open' | 'ending' | 'closed' = 'open';
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Set while the client waits for text (a pull is pending). */
  private wake: (() => void) | null = null;
  private dropTimer: ReturnType<typeof setTimeout> | null = null;
  private gone = false;
  private readonly bufferBytes: number;
  private readonly dropAfterMs: number;

  constructor(
    private readonly host: StreamHost,
    readonly grant: StreamGrant,
    opts: {
      cursor: number;
      live: boolean;
      /** Text to send first (an `event: reset`). */
      first?: string;
      bufferBytes?: number;
      /** How long an ending stream waits for its client to read the last notice before it is cut. */
      dropAfterMs: number;
    },
  ) {
    this.bufferBytes = opts.bufferBytes ?? STREAM_BUFFER_BYTES;
    this.dropAfterMs = opts.dropAfterMs;
    this.cursor = opts.cursor;
    this.live = opts.live;
    if (opts.first) this.push(opts.first);
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

  /** Events the hub announces: those after the cursor are queued; a full buffer drops the stream. */
  offer(events: readonly StoredEvent[]): void {
    if (this.state !== 'open' || !this.live) return;
    for (const e of events) {
      if (e.id <= this.cursor) continue;
      this.push(sseEvent(e.kind, e.data, e.id));
      this.cursor = e.id;
    }
    if (this.queued > this.bufferBytes) this.end('reset', 'stream fell behind; pull and reconnect', true);
    else this.poke();
  }

  /** A keep-alive comment. */
  ping(): void {
    if (this.state !== 'open') return;
    this.push(PING);
    if (this.queued > this.bufferBytes) this.end('reset', 'stream fell behind; pull and reconnect', true);
    else this.poke();
  }

  /**
   * Ends the stream after a last notice (`revoked`, or a `reset` when it fell behind: then what it had not
   * sent yet is dropped). It leaves the hub at once; a client that does not read the notice within
   * `dropAfterMs` has its connection cut.
   */
  end(event: 'revoked' | 'reset', reason: string, discard = false): void {
    if (this.state !== 'open') return;
    if (discard) {
      this.queue = [];
      this.queued = 0;
    }
    this.push(sseEvent(event, JSON.stringify({ reason })));
    this.state = 'ending';
    this.leave();
    this.dropTimer = setTimeout(() => this.cut(), this.dropAfterMs);
    (this.dropTimer as { unref?: () => void }).unref?.();
    this.poke();
  }

  /**
   * Ends the stream now (the server is stopping): a client that has read everything gets the end of the
   * stream; one that is behind has its connection cut, so that no write waits on it.
   */
  close(): void {
    if (this.state === 'closed') return;
    if (this.reading && this.queue.length === 0) {
      this.state = 'ending';
      this.poke();
    } else this.cut();
  }

  private push(text: string): void {
    const bytes = encoder.encode(text);
    this.queue.push(bytes);
    this.queued += bytes.byteLength;
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async pull(c: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    for (;;) {
      if (this.state === 'closed') return;
      if (this.queue.length > 0) {
        const chunk = this.queue.length === 1 ? this.queue[0]! : concatBytes(this.queue);
        this.queue = [];
        this.queued = 0;
        c.enqueue(chunk);
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
      this.push(sseEvent(e.kind, e.data, e.id));
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

  /** Cuts the connection: the runtime sees the stream fail and drops the socket. */
  private cut(): void {
    if (this.state === 'closed') return;
    try {
      this.controller?.error(new Error('event stream dropped'));
    } catch {
      // already closed
    }
    this.finish();
  }

  private finish(): void {
    if (this.dropTimer !== null) clearTimeout(this.dropTimer);
    this.dropTimer = null;
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
