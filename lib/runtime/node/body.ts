import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { BodySource } from '../../framework/http/body-limit.ts';

/**
 * The Node runtime's request bodies (lib/framework/http/body-limit.ts `BodySourceOf`): the socket's IncomingMessage
 * read directly, chunk by chunk, instead of through the web stream @hono/node-server would make of it
 * (and the second Request the guard would wrap that in). Undefined when the request did not come over a
 * socket (in-process `app.request()`): the guard then reads the Request's own stream.
 */
export function nodeBodySource(c: Context): BodySource | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming ? new IncomingBody(incoming) : undefined;
}

/** Bytes of a body queued ahead of its reader before the socket is paused. */
const QUEUE_BYTES = 1024 * 1024;

/**
 * Chunks as they arrive ('data'), handed out in order by `next`. The body breaks off when the stream errs
 * or closes before its end (client gone, bad framing). `cancel` stops listening: what is still to come is
 * left to the adapter, which drains or closes it after the response.
 */
class IncomingBody implements BodySource {
  readonly #incoming: IncomingMessage;
  readonly #queue: Uint8Array[] = [];
  /** Bytes in the queue: past QUEUE_BYTES the socket is paused until the reader catches up. */
  #queued = 0;
  #done = false;
  #failure: Error | undefined;
  #waiter: { resolve: (v: Uint8Array | null) => void; reject: (e: Error) => void } | undefined;
  readonly #onData = (chunk: Buffer | string) => {
    this.#push(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);
  };
  readonly #onEnd = () => this.#finish();
  readonly #onError = (e: Error) => this.#fail(e);
  readonly #onClose = () => {
    if (this.#incoming.readableEnded) this.#finish();
    else this.#fail(new Error('request body broke off'));
  };

  constructor(incoming: IncomingMessage) {
    this.#incoming = incoming;
    if (incoming.readableEnded) {
      this.#done = true;
      return;
    }
    if (incoming.errored || incoming.destroyed) {
      this.#failure = incoming.errored ?? new Error('request body broke off');
      return;
    }
    incoming.on('data', this.#onData);
    incoming.on('end', this.#onEnd);
    incoming.on('error', this.#onError);
    incoming.on('close', this.#onClose);
  }

  next(): Promise<Uint8Array | null> {
    const chunk = this.#queue.shift();
    if (chunk) {
      this.#queued -= chunk.byteLength;
      if (this.#queued <= QUEUE_BYTES / 2 && this.#incoming.isPaused() && !this.#done) this.#incoming.resume();
      return Promise.resolve(chunk);
    }
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#done) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  cancel(): void {
    this.#detach();
    this.#queue.length = 0;
    this.#queued = 0;
    // The adapter drains or closes what is left: a socket paused here must flow again for that.
    if (this.#incoming.isPaused()) this.#incoming.resume();
  }

  #push(chunk: Uint8Array): void {
    const w = this.#waiter;
    if (w) {
      this.#waiter = undefined;
      w.resolve(chunk);
    } else {
      this.#queue.push(chunk);
      this.#queued += chunk.byteLength;
      // A reader slower than the socket (an import writing each chunk to disk): the socket waits, so what is
      // held stays about QUEUE_BYTES whatever the body's size.
      if (this.#queued > QUEUE_BYTES) this.#incoming.pause();
    }
  }

  #finish(): void {
    this.#done = true;
    this.#detach();
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.resolve(null);
  }

  #fail(e: Error): void {
    if (this.#done) return;
    this.#failure ??= e;
    this.#detach();
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.reject(this.#failure);
  }

  #detach(): void {
    const incoming = this.#incoming;
    incoming.off('data', this.#onData);
    incoming.off('end', this.#onEnd);
    incoming.off('error', this.#onError);
    incoming.off('close', this.#onClose);
  }
}
