/**
 * A streaming parser of the Server-Sent Events text format (the HTML standard's "event stream
 * interpretation"), for a stream read with fetch: EventSource cannot send the Authorization header. Text goes
 * in as it arrives, in chunks cut anywhere; whole events come out. Lines end with CRLF, LF or CR; a line
 * starting with ":" is a comment (the server's pings); `data:` lines of one event are joined with "\n"; an
 * `id:` holding NUL is ignored; an event with no data is not dispatched (its id still counts).
 */

export interface SseMessage {
  /** `message` when the block names no event. */
  event: string;
  data: string;
  /** The last event id the stream has set so far (what a reconnection resumes after), if any. */
  lastId?: string;
}

/** The longest line kept while it has no end yet: a stream that never ends its line is cut off, not buffered. */
export const MAX_LINE_CHARS = 1 << 20;

export class SseParser {
  private buffer = '';
  /** A CR ended the last chunk: an LF starting the next one belongs to it. */
  private pendingCr = false;
  private event = '';
  private data: string[] = [];
  private lastId: string | undefined;
  /** Comments and blank-line-only blocks seen: a sign of life, however quiet the stream. */
  comments = 0;

  /** The events completed by `chunk`, in order. Throws when one line grows past MAX_LINE_CHARS. */
  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const out: SseMessage[] = [];
    let start = 0;
    for (;;) {
      const cr = this.buffer.indexOf('\r', start);
      const lf = this.buffer.indexOf('\n', start);
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (end === -1) break;
      this.line(this.buffer.slice(start, end), out);
      if (this.buffer[end] === '\r') {
        if (end + 1 === this.buffer.length) this.pendingCr = true;
        else if (this.buffer[end + 1] === '\n') {
          start = end + 2;
          continue;
        }
      }
      start = end + 1;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length > MAX_LINE_CHARS) throw new Error('event stream line too long');
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
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.lastId = value;
    // `retry` and unknown fields: ignored (the client keeps its own backoff).
  }

  private dispatch(out: SseMessage[]): void {
    const event = this.event || 'message';
    const data = this.data;
    this.event = '';
    this.data = [];
    if (data.length === 0) return;
    out.push({ event, data: data.join('\n'), ...(this.lastId !== undefined ? { lastId: this.lastId } : {}) });
  }
}
