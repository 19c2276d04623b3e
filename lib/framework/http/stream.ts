import type { Logger } from '../log.ts';
import { concatBytes } from '../../util/bytes.ts';

/**
 * Response bodies made as the client reads them, on both runtimes (web streams). A generator produces the
 * body's pieces (text or bytes); they are gathered into chunks of about CHUNK_BYTES, and the next chunk is
 * made only when the stream asks for it: a slow reader holds the work back, and what waits in memory is one
 * chunk and whatever the generator holds between two pieces. When the client goes away (the stream is
 * cancelled), the generator's signal is aborted: its loops stop at their next check, and its `finally`
 * blocks run.
 */

/** Bytes gathered into one chunk (a text piece counts its characters). */
export const CHUNK_BYTES = 64 * 1024;

/** How a streamed body ended, for the log: read to the end, cut short by the client, or failed. */
export interface StreamEnd {
  outcome: 'done' | 'cancelled' | 'failed';
  /** Bytes handed to the client (enqueued) by then. */
  bytes: number;
  error?: unknown;
  /** What the producer reports of its own progress (objects, pages) when it ended. */
  detail?: Record<string, number>;
}

/** What a streamed body reports when it ends. */
export type StreamWatch = (end: StreamEnd) => void;

/** Thrown inside a generator whose stream was cancelled (see `checkCancelled`). */
export class StreamCancelled extends Error {
  constructor() {
    super('stream cancelled by its reader');
    this.name = 'StreamCancelled';
  }
}

/** Throws StreamCancelled once `signal` is aborted: a generator's loops call it as they go. */
export function checkCancelled(signal: AbortSignal): void {
  if (signal.aborted) throw new StreamCancelled();
}

export function pieceStream(
  make: (signal: AbortSignal) => AsyncGenerator<string | Uint8Array, void, void>,
  opts: { onEnd?: StreamWatch; detail?: () => Record<string, number> } = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const abort = new AbortController();
  const pieces = make(abort.signal);
  let sent = 0;
  let ended = false;
  const end = (outcome: StreamEnd['outcome'], error?: unknown) => {
    if (ended) return;
    ended = true;
    if (!opts.onEnd) return;
    const report: StreamEnd = { outcome, bytes: sent };
    if (error !== undefined) report.error = error;
    if (opts.detail) report.detail = opts.detail();
    opts.onEnd(report);
  };
  // The chunk being gathered: byte pieces, and text not yet encoded (it follows them).
  let parts: Uint8Array[] = [];
  let text = '';
  let size = 0;
  const take = (): Uint8Array | null => {
    if (text !== '') parts.push(encoder.encode(text));
    text = '';
    size = 0;
    const out = parts.length === 1 ? parts[0]! : parts.length === 0 ? null : concatBytes(parts);
    parts = [];
    return out;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const next = await pieces.next();
            if (abort.signal.aborted) return;
            if (next.done) {
              const last = take();
              if (last) {
                sent += last.byteLength;
                controller.enqueue(last);
              }
              controller.close();
              end('done');
              return;
            }
            const piece = next.value;
            if (typeof piece === 'string') {
              text += piece;
              size += piece.length;
            } else {
              if (text !== '') {
                parts.push(encoder.encode(text));
                text = '';
              }
              parts.push(piece);
              size += piece.byteLength;
            }
            if (size >= CHUNK_BYTES) {
              const chunk = take()!;
              sent += chunk.byteLength;
              controller.enqueue(chunk);
              return;
            }
          }
        } catch (e) {
          // Cancelled meanwhile: the generator stopped because it was told to.
          if (abort.signal.aborted) return;
          end('failed', e);
          controller.error(e);
        }
      },
      cancel() {
        abort.abort();
        end('cancelled');
        // Runs the generator's `finally` blocks once the piece it is making (if any) is done.
        void pieces.return(undefined).catch(() => undefined);
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * A StreamWatch that logs a streamed answer that did not end normally (its status line was logged when the
 * stream started): `stream_cancelled` (info: the client went away, and the work stopped with it) or
 * `stream_failed` (error: the answer is cut short, and the client sees a broken transfer), with `fields`
 * (the request id, the repository, what was streamed), the bytes sent and the producer's progress.
 */
export function logStreamEnd(log: Logger, fields: Record<string, unknown>): StreamWatch {
  return (end) => {
    if (end.outcome === 'done') return;
    const line = { ...fields, bytes: end.bytes, ...end.detail };
    if (end.outcome === 'cancelled') log.info('stream_cancelled', line);
    else log.error('stream_failed', { ...line, error: end.error instanceof Error ? `${end.error.name}: ${end.error.message}` : String(end.error) });
  };
}
