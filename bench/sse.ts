/**
 * Server-Sent Events, read as W13's clients read `GET /v1/repos/:id/events`: chunks of text in, events out
 * (`id`, `event`, `data`, dispatched at each blank line; `:` lines are comments, such as `: ping`). The
 * WHATWG rules that matter here: CRLF, LF or CR end a line; one space after the colon is dropped; several
 * `data` lines join with `\n`; an event without `event:` is `message`.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export class SseParser {
  private buffer = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];

  /** Feeds a chunk; returns the events it completed, in order. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      if (this.data.length === 0 && this.event === '') return null;
      const ev: SseEvent = { event: this.event || 'message', data: this.data.join('\n'), ...(this.id !== undefined ? { id: this.id } : {}) };
      this.event = '';
      this.data = [];
      return ev;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    return null;
  }
}
