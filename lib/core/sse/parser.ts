/**
 * An incremental parser of the `text/event-stream` format, read as EventSource reads it (blocks ended by a
 * blank line, `field: value` lines, `:` comments, CRLF, LF or CR line ends, chunks cut anywhere), with a cap
 * on a line and on an event's data: the text comes from the network, so an event over the cap is skipped
 * (and reported as such), never held. No imports: `kr watch`, `kr mcp` (./sse-client.ts) and the dashboard
 * (dashboard/src/live.ts) share it.
 */

/** Characters of one line of the stream, and of one event's data, that a client takes. */
export const MAX_LINE_CHARS = 1_048_576;
export const MAX_EVENT_CHARS = 1_048_576;

/** One event as the stream carries it. */
export interface SseMessage {
  /** `message` when the block names no event. */
  event: string;
  /** The block's `id:`, when it had a usable one. */
  id?: string;
  data: string;
  /** The block went over a cap: its data was dropped. */
  oversized?: boolean;
}

/** An event id fit to go back in a `Last-Event-ID` header: printable ASCII, at most 128 characters. */
const usableId = (id: string): boolean => /^[\x21-\x7e]{1,128}$/.test(id);

/** Incremental `text/event-stream` parser: text in, complete events out. */
export class SseParser {
  /** Comment lines seen (`: ping`). */
  comments = 0;
  private buf = '';
  /** Inside a line over the cap: its characters are dropped up to its end. */
  private skippingLine = false;
  /** The previous chunk ended with CR: a LF starting the next one belongs to it. */
  private afterCr = false;
  private event = '';
  private id: string | undefined;
  private data: string[] = [];
  private dataChars = 0;
  private hasData = false;
  private oversized = false;

  constructor(
    private readonly lineChars = MAX_LINE_CHARS,
    private readonly eventChars = MAX_EVENT_CHARS,
  ) {}

  /** Decoded text of the stream, in order; returns the events it completed. */
  push(text: string): SseMessage[] {
    const out: SseMessage[] = [];
    let s = text;
    if (this.afterCr && s.startsWith('\n')) s = s.slice(1);
    this.afterCr = false;
    let from = 0;
    for (;;) {
      const m = /\r\n|\r|\n/g;
      m.lastIndex = from;
      const hit = m.exec(s);
      if (!hit) break;
      // A CR at the very end may be the first half of a CRLF: the next chunk says.
      if (hit[0] === '\r' && hit.index === s.length - 1) this.afterCr = true;
      const piece = s.slice(from, hit.index);
      if (this.skippingLine) this.skippingLine = false;
      else this.line(this.buf + piece, out);
      this.buf = '';
      from = hit.index + hit[0].length;
    }
    const rest = s.slice(from);
    if (this.skippingLine) return out;
    if (this.buf.length + rest.length > this.lineChars) {
      // A line longer than any event we take: drop it as it comes, and the event it belongs to.
      this.buf = '';
      this.skippingLine = true;
      this.oversized = true;
    } else this.buf += rest;
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(':')) {
      this.comments++;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'id') {
      if (usableId(value)) this.id = value;
    } else if (field === 'data') {
      this.hasData = true;
      this.dataChars += value.length + 1;
      if (this.dataChars > this.eventChars) {
        this.oversized = true;
        this.data = [];
      } else if (!this.oversized) this.data.push(value);
    }
    // `retry:` and unknown fields are ignored: reconnection follows its own backoff.
  }

  private dispatch(out: SseMessage[]): void {
    if (this.hasData || this.oversized) {
      const msg: SseMessage = { event: this.event === '' ? 'message' : this.event, data: this.oversized ? '' : this.data.join('\n') };
      if (this.id !== undefined) msg.id = this.id;
      if (this.oversized) msg.oversized = true;
      out.push(msg);
    }
    this.event = '';
    this.id = undefined;
    this.data = [];
    this.dataChars = 0;
    this.hasData = false;
    this.oversized = false;
  }
}
