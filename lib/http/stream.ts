/**
 * A response body made from text pieces as the client reads it: pieces are gathered into chunks of about
 * CHUNK_CHARS characters, encoded as UTF-8, and the next chunk is made only when the stream asks for it (so a
 * slow reader holds back the work, and at most one chunk waits in memory). Web streams: both runtimes.
 */
const CHUNK_CHARS = 64 * 1024;

export function textStream(pieces: Iterator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        let chunk = '';
        for (;;) {
          const next = pieces.next();
          if (next.done) {
            if (chunk !== '') controller.enqueue(encoder.encode(chunk));
            controller.close();
            return;
          }
          chunk += next.value;
          if (chunk.length >= CHUNK_CHARS) {
            controller.enqueue(encoder.encode(chunk));
            return;
          }
        }
      },
    },
    { highWaterMark: 1 },
  );
}
