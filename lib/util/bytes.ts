/** Byte helpers, web-standard (no Buffer): base64, UTF-8 decoding, concatenation, owned copies. */

const CHUNK = 0x8000;

/** Standard base64 of bytes, web-standard (no Buffer). */
export function toBase64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    out += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return btoa(out);
}

export function fromBase64(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const decoder = new TextDecoder();
/** Page bytes as text (pages are UTF-8; invalid sequences become U+FFFD rather than failing). */
export const utf8 = (bytes: Uint8Array): string => decoder.decode(bytes);

/** The byte arrays one after another, in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  let size = 0;
  for (const p of parts) size += p.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * The bytes in an array that holds them alone: `bytes` itself when it spans its whole buffer, else a copy. For
 * what a cache keeps: a view keeps its whole buffer alive, and small node Buffers are views into a shared 8 KiB
 * pool (a page's content from a push, a read's output), so a cache of 1 KiB pages counted by their own size
 * held several times that (measured in W10: 2 MB of cached blobs kept 9 MB of buffers).
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}
