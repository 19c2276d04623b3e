/**
 * Reading Server-Sent Events in tests: a small parser of the `text/event-stream` format over a fetch
 * Response's body (the way a browser's EventSource reads it: blocks separated by a blank line, `field: value`
 * lines, `:` comments), so tests see exactly what a client would.
 */

export interface SseEvent {
  /** `message` when the block names no event. */
  event: string;
  /** The `id:` line, when there is one. */
  id?: string;
  data: string;
}

export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private done = false;
  /** Comment lines seen so far (`: ping` → `ping`); empty ones (the Workers build's probes) are not kept. */
  readonly comments: string[] = [];

  constructor(readonly response: Response) {
    if (!response.body) throw new Error('no body to read events from');
    this.reader = response.body.getReader();
  }

  /** The next event, or null once the stream has ended. Comments are recorded, not returned. */
  async next(): Promise<SseEvent | null> {
    for (;;) {
      const block = this.takeBlock();
      if (block !== null) {
        const e = this.parse(block);
        if (e) return e;
        continue;
      }
      if (this.done) return null;
      const { value, done } = await this.reader.read();
      if (done) {
        this.done = true;
        this.buffer += this.decoder.decode();
        if (this.buffer.trim() !== '') this.buffer += '\n\n';
      } else this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  /** The next event, its data parsed as JSON. */
  async nextJson(): Promise<{ event: string; id?: string; data: any } | null> {
    const e = await this.next();
    return e && { event: e.event, ...(e.id !== undefined ? { id: e.id } : {}), data: JSON.parse(e.data) };
  }

  /** Every event until the stream ends. */
  async rest(): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (let e = await this.next(); e; e = await this.next()) out.push(e);
    return out;
  }

  /** Waits until `n` comments have been seen in all (reading on; events met meanwhile are returned). */
  async untilComments(n: number): Promise<SseEvent[]> {
    const seen: SseEvent[] = [];
    while (this.comments.length < n) {
      const block = this.takeBlock();
      if (block !== null) {
        const e = this.parse(block);
        if (e) seen.push(e);
        continue;
      }
      if (this.done) throw new Error(`stream ended after ${this.comments.length} comments`);
      const { value, done } = await this.reader.read();
      if (done) this.done = true;
      else this.buffer += this.decoder.decode(value, { stream: true });
    }
    return seen;
  }

  /** Whether the stream has ended (as far as read). */
  get ended(): boolean {
    return this.done && this.buffer.trim() === '';
  }

  async close(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }

  private takeBlock(): string | null {
    const m = /\r\n\r\n|\n\n|\r\r/.exec(this.buffer);
    if (!m) return null;
    const block = this.buffer.slice(0, m.index);
    this.buffer = this.buffer.slice(m.index + m[0].length);
    return block;
  }

  private parse(block: string): SseEvent | null {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    let any = false;
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith(':')) {
        const comment = line.slice(1).trim();
        if (comment !== '') this.comments.push(comment);
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      any = true;
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (!any) return null;
    return { event, ...(id !== undefined ? { id } : {}), data: data.join('\n') };
  }
}

/** Opens an event stream: the reader, once the response's head has arrived (status checked by the caller). */
export async function openEvents(
  url: string,
  opts: { token: string; after?: string; lastEventId?: string; signal?: AbortSignal } = { token: '' },
): Promise<{ status: number; reader: SseReader | null; response: Response }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token}` };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const target = opts.after !== undefined ? `${url}?after=${encodeURIComponent(opts.after)}` : url;
  const response = await fetch(target, { headers, signal: opts.signal });
  const ok = response.status === 200 && (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  return { status: response.status, reader: ok ? new SseReader(response) : null, response };
}
