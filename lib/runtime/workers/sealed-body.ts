import { concatBytes } from '../../util/bytes.ts';

/**
 * A streamed body's end, made visible between the repository's Durable Object and the Worker. An error in the
 * stream of a Durable Object's response does not reach the Worker as one: the Worker's read of the body just
 * ends, as if the answer were whole (a repository deleted while its export streamed was answered 200 with an
 * empty body). So the object seals the body (`sealBody`): after its last byte, and only when its stream ended
 * normally, a trailer of TRAILER_BYTES says so and how many bytes came before it. The Worker opens it
 * (`openSealedBody`): the bytes are passed on as they come, the trailer held back; a body that ends without
 * its trailer, or with one that counts other bytes, errors the Worker's stream, so that the client's
 * transfer breaks instead of ending cleanly short.
 */

/** `kr-sealed-end` and a zero byte, then the payload's byte count (8 bytes, big-endian). */
const MAGIC = new TextEncoder().encode('kr-sealed-end\0');
export const TRAILER_BYTES = MAGIC.byteLength + 8;

/** Thrown by an opened body that ended without its trailer (its producer failed, or the storage went away). */
export class BodyCutError extends Error {
  constructor(what: string) {
    super(`the repository's streamed answer ended short (${what})`);
    this.name = 'BodyCutError';
  }
}

function trailer(bytes: number): Uint8Array {
  const out = new Uint8Array(TRAILER_BYTES);
  out.set(MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(MAGIC.byteLength, Math.floor(bytes / 2 ** 32));
  view.setUint32(MAGIC.byteLength + 4, bytes >>> 0);
  return out;
}

/** Whether `tail` is the trailer of a payload of `bytes` bytes. */
function sealedAt(tail: Uint8Array, bytes: number): boolean {
  if (tail.byteLength !== TRAILER_BYTES) return false;
  const want = trailer(bytes);
  for (let i = 0; i < TRAILER_BYTES; i++) if (tail[i] !== want[i]) return false;
  return true;
}

/**
 * `source` followed by its trailer once it ends normally; when it fails, this stream fails with it and no
 * trailer is sent. Made as it is read; cancelling it cancels `source`. `ended` is called once, when the
 * stream ends whichever way (read to its end, failed, or cancelled).
 */
export function sealBody(source: ReadableStream<Uint8Array>, ended?: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let bytes = 0;
  let over = false;
  const end = () => {
    if (over) return;
    over = true;
    ended?.();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (e) {
          end();
          throw e;
        }
        if (next.done) {
          controller.enqueue(trailer(bytes));
          controller.close();
          end();
          return;
        }
        bytes += next.value.byteLength;
        controller.enqueue(next.value);
      },
      cancel(reason) {
        end();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The payload of a sealed body: its bytes as they come, less the trailer; errors with BodyCutError when the
 * body ends without a trailer that counts them. Made as it is read; cancelling it cancels `source`.
 */
export function openSealedBody(source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  /** The last bytes seen: the trailer, if the body ends here. */
  let held: Uint8Array = new Uint8Array(0);
  let passed = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            if (!sealedAt(held, passed)) throw new BodyCutError(`${passed + held.byteLength} bytes, no end mark`);
            controller.close();
            return;
          }
          if (value.byteLength === 0) continue;
          let out: Uint8Array;
          let sent = false;
          if (value.byteLength >= TRAILER_BYTES) {
            // Everything held before this chunk is payload.
            if (held.byteLength > 0) {
              passed += held.byteLength;
              controller.enqueue(held);
              sent = true;
            }
            out = value.subarray(0, value.byteLength - TRAILER_BYTES);
            held = value.slice(value.byteLength - TRAILER_BYTES);
          } else {
            const all = concatBytes([held, value]);
            const keep = Math.min(TRAILER_BYTES, all.byteLength);
            out = all.subarray(0, all.byteLength - keep);
            held = all.slice(all.byteLength - keep);
          }
          if (out.byteLength > 0) {
            passed += out.byteLength;
            controller.enqueue(out);
            sent = true;
          }
          // A pull that enqueues nothing is not called again: read on until something goes out.
          if (sent) return;
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
