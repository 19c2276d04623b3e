/**
 * The sealed bodies between a repository's Durable Object and the Worker (lib/runtime/workers/sealed-body.ts):
 * whatever the chunking, an opened body is exactly the payload; a body that ends without its end mark, or
 * with one that counts other bytes, fails instead of ending cleanly; cancelling the opened body cancels the
 * source.
 */
import { describe, expect, it } from 'vitest';
import { BodyCutError, openSealedBody, sealBody, TRAILER_BYTES } from '../lib/runtime/workers/sealed-body.ts';

const streamOf = (chunks: Uint8Array[], fail?: Error) =>
  new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift();
      if (next) controller.enqueue(next);
      else if (fail) controller.error(fail);
      else controller.close();
    },
  });

async function readAll(s: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: number[] = [];
  const reader = s.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return new Uint8Array(parts);
    parts.push(...value);
  }
}

/** `bytes` cut into pieces of the sizes in `sizes`, in turn. */
function rechunk(bytes: Uint8Array, sizes: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0, k = 0; at < bytes.byteLength; k++) {
    const n = sizes[k % sizes.length]!;
    out.push(bytes.slice(at, at + n));
    at += n;
  }
  return out;
}

const payload = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 251);

describe('sealed bodies', () => {
  it('an opened body is exactly the payload, however the sealed bytes are chunked', async () => {
    const sealed = await readAll(sealBody(streamOf(rechunk(payload, [300]))));
    expect(sealed.byteLength).toBe(payload.byteLength + TRAILER_BYTES);
    for (const sizes of [[1], [3, 17], [TRAILER_BYTES], [TRAILER_BYTES - 1, 2], [999], [sealed.byteLength], [5, 200, 1]]) {
      expect(await readAll(openSealedBody(streamOf(rechunk(sealed, sizes))))).toEqual(payload);
    }
    // An empty payload too.
    const empty = await readAll(sealBody(streamOf([])));
    expect(await readAll(openSealedBody(streamOf([empty])))).toEqual(new Uint8Array(0));
  });

  it('a source that fails is sealed into a failing body: no end mark goes out', async () => {
    const reader = sealBody(streamOf(rechunk(payload, [400]), new Error('object missing'))).getReader();
    let got = 0;
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          got += value.byteLength;
        }
      })(),
    ).rejects.toThrow('object missing');
    expect(got).toBe(payload.byteLength);
  });

  it('a body cut short, or with an end mark that counts other bytes, fails when opened', async () => {
    const sealed = await readAll(sealBody(streamOf([payload])));
    // Ended without the mark (the object's stream failed and the Worker saw a clean end), at any point.
    for (const cut of [0, 1, 500, payload.byteLength, sealed.byteLength - 1]) {
      await expect(readAll(openSealedBody(streamOf(rechunk(sealed.slice(0, cut), [64]))))).rejects.toBeInstanceOf(BodyCutError);
    }
    // A mark after a payload with bytes missing from its middle.
    const holed = new Uint8Array([...sealed.slice(0, 100), ...sealed.slice(200)]);
    await expect(readAll(openSealedBody(streamOf([holed])))).rejects.toBeInstanceOf(BodyCutError);
  });

  it('cancelling an opened body cancels its source', async () => {
    let cancelled: unknown = null;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new Uint8Array(64));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    const reader = openSealedBody(sealBody(source)).getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel('gone');
    expect(cancelled).toBe('gone');
  });
});
