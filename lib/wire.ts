import type { IndexedCommit } from './git/path-index.ts';
import { LABEL_MAX_CHARS, type Commit } from '../schema/wire/common.ts';
import { HttpError } from './errors.ts';

/** A PAT's or invite key's label: at most {@link LABEL_MAX_CHARS} characters (code points); absent = "". */
export function checkLabel(label: string | undefined): string {
  if (label === undefined) return '';
  let n = 0;
  for (const _ of label) if (++n > LABEL_MAX_CHARS) throw new HttpError(400, `label too long (max ${LABEL_MAX_CHARS})`);
  return label;
}

/** Unix seconds → RFC 3339 UTC with whole seconds (`2026-05-17T10:00:00Z`). */
export const rfc3339 = (unixSeconds: number): string =>
  new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

export const commitJson = (c: IndexedCommit): Commit => ({
  sha: c.sha,
  author: c.author,
  email: c.email,
  time: rfc3339(c.time),
  message: c.message,
});

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
