/**
 * Git object encoding for writes: the loose-object form (`<type> <size>\0<content>`, SHA-1, zlib
 * deflate) and the tree and commit formats. Hashing and deflating are a platform seam (`ObjectCodec`):
 * on Node the synchronous `node:crypto`/`node:zlib` pair is about ten times faster per object than the
 * async web APIs, and a push writes several objects. Reading is lib/git/object-reader.ts.
 */
import { concatBytes } from '../util/bytes.ts';
import { Sha1, type Hasher } from './sha1.ts';

export type ObjectType = 'blob' | 'tree' | 'commit';

export interface EncodedObject {
  oid: string;
  /**
   * Loose form: the zlib-deflated loose object, ready to be written to `objects/xx/yyyy…`. Pack form: the
   * object's whole record in a packfile (type-and-size header, then the deflated content).
   */
  deflated: Uint8Array;
}

export interface ObjectCodec {
  /** SHA-1 hex of `data` and its zlib deflate. */
  hashAndDeflate(data: Uint8Array): EncodedObject | Promise<EncodedObject>;
  /** SHA-1 of `data` (20 bytes); the web-standard one when absent. */
  sha1?(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
  /**
   * An incremental SHA-1 (a pack streamed as it is made is hashed a piece at a time); the plain-JavaScript
   * one (lib/git/sha1.ts) when absent.
   */
  sha1Stream?(): Hasher;
  /** zlib deflate of `data`; the web-standard one when absent. */
  deflate?(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
  /**
   * zlib inflate of the stream `data` starts with; throws when the output would exceed `maxBytes`. Bytes
   * after the stream's end are ignored (as zlib's inflate does): a pack's records are read in windows that
   * may run past them (lib/git/object-reader.ts). The web-standard one when absent, which refuses such
   * bytes: `data` is then read to the stream's exact end.
   */
  inflate?(data: Uint8Array, maxBytes: number): Uint8Array | Promise<Uint8Array>;
}

/** How staged objects are encoded: loose files, or records of a packfile (lib/git/pack.ts). */
export type ObjectForm = 'loose' | 'pack';

/** A packfile's type numbers (gitformat-pack). */
export const PACK_TYPE = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;

const encoder = new TextEncoder();

/** `<type> <size>\0<content>`: what git hashes and stores. */
export function wrapObject(type: ObjectType, content: Uint8Array): Uint8Array {
  const header = encoder.encode(`${type} ${content.byteLength}\0`);
  const out = new Uint8Array(header.byteLength + content.byteLength);
  out.set(header, 0);
  out.set(content, header.byteLength);
  return out;
}

export async function encodeObject(
  codec: ObjectCodec,
  type: ObjectType,
  content: Uint8Array,
  form: ObjectForm = 'loose',
): Promise<EncodedObject> {
  if (form === 'loose') return codec.hashAndDeflate(wrapObject(type, content));
  const [digest, deflated] = await Promise.all([sha1(codec, wrapObject(type, content)), deflate(codec, content)]);
  return { oid: toHex(digest), deflated: packRecord(PACK_TYPE[type], content.byteLength, deflated) };
}

/** A packfile record: the type and size header (size in little-endian 7-bit groups after its low 4 bits), then `deflated`. */
export function packRecord(type: number, size: number, deflated: Uint8Array): Uint8Array {
  const head: number[] = [];
  let byte = (type << 4) | (size & 15);
  // Division, not shifts: sizes may exceed 2^31.
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    head.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  head.push(byte);
  const out = new Uint8Array(head.length + deflated.byteLength);
  out.set(head, 0);
  out.set(deflated, head.length);
  return out;
}

/** Each byte's two lower-case hex digits. */
const HEX_PAIRS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
/** Each ASCII code's value as a hex digit, -1 where it is none. */
const HEX_VALUES = (() => {
  const t = new Int8Array(128).fill(-1);
  for (let d = 0; d < 16; d++) {
    t['0123456789abcdef'.charCodeAt(d)] = d;
    t['0123456789ABCDEF'.charCodeAt(d)] = d;
  }
  return t;
})();

/** Bytes as lower-case hex (a table lookup per byte: object ids are made and compared by the thousand). */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX_PAIRS[bytes[i]!];
  return s;
}

/**
 * Writes the bytes `hex` spells into `out` from `at` (a new array of hex.length / 2 bytes without `out`).
 * RangeError for an odd length or a character that is not a hex digit.
 */
export function hexToBytes(hex: string, out: Uint8Array = new Uint8Array(hex.length >> 1), at = 0): Uint8Array {
  if (hex.length % 2 !== 0) throw new RangeError(`odd-length hex: ${JSON.stringify(hex)}`);
  for (let i = 0, j = 0; j < hex.length; i++, j += 2) {
    const hi = HEX_VALUES[hex.charCodeAt(j)] ?? -1;
    const lo = HEX_VALUES[hex.charCodeAt(j + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new RangeError(`not hex: ${JSON.stringify(hex)}`);
    out[at + i] = (hi << 4) | lo;
  }
  return out;
}

/** SHA-1 of `data` with the codec's hash, or the web-standard one. */
export async function sha1(codec: ObjectCodec, data: Uint8Array): Promise<Uint8Array> {
  if (codec.sha1) return codec.sha1(data);
  return new Uint8Array(await crypto.subtle.digest('SHA-1', data as Uint8Array<ArrayBuffer>));
}

/** An incremental SHA-1: the codec's, or the plain-JavaScript one. */
export function sha1Stream(codec: ObjectCodec): Hasher {
  return codec.sha1Stream ? codec.sha1Stream() : new Sha1();
}

/** zlib deflate of `data` with the codec's, or the web-standard one. */
export async function deflate(codec: ObjectCodec, data: Uint8Array): Promise<Uint8Array> {
  if (codec.deflate) return codec.deflate(data);
  const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('deflate'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** zlib inflate of `data` with the codec's, or the web-standard one; throws past `maxBytes` of output. */
export async function inflate(codec: ObjectCodec, data: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  if (codec.inflate) return codec.inflate(data, maxBytes);
  const reader = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('deflate')).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new RangeError(`inflates to more than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}

export interface TreeItem {
  /** `100644` for files, `40000` (or `040000`) for directories. */
  mode: string;
  name: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

/** git's tree order: by name bytes, a directory compared as if its name ended in `/`. */
function compareEntries(a: { key: Uint8Array }, b: { key: Uint8Array }): number {
  const x = a.key;
  const y = b.key;
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/**
 * Each item with its name's bytes and its sort key, in git's tree order (as trees are stored, and as git and
 * isomorphic-git read them back).
 */
function sortedRows<T extends TreeItem>(items: T[]): Array<{ it: T; name: Uint8Array; key: Uint8Array }> {
  return items
    .map((it) => {
      const name = encoder.encode(it.name);
      let key = name;
      if (it.type === 'tree') {
        key = new Uint8Array(name.length + 1);
        key.set(name);
        key[name.length] = 0x2f;
      }
      return { it, name, key };
    })
    .sort(compareEntries);
}

/** A tree entry's mode with the space after it, as bytes (`40000 ` for a directory: git drops the 0). */
const modeHead = (it: TreeItem): Uint8Array => encoder.encode(`${it.type === 'tree' ? '40000' : it.mode.replace(/^0+/, '')} `);

/** The binary content of a tree object (without the object header). */
export function serializeTree(items: TreeItem[]): Uint8Array {
  return serializeTreeSorted(items).content;
}

/** A tree object's content (without the object header), and `items` in the order it stores them. */
export function serializeTreeSorted<T extends TreeItem>(items: T[]): { content: Uint8Array; sorted: T[] } {
  const rows = sortedRows(items);
  const heads = rows.map((r) => modeHead(r.it));
  let size = 0;
  rows.forEach((r, i) => {
    if (r.it.oid.length !== 40) throw new RangeError(`tree entry ${JSON.stringify(r.it.name)}: object id ${JSON.stringify(r.it.oid)}`);
    size += heads[i]!.length + r.name.length + 1 + 20;
  });
  const out = new Uint8Array(size);
  let at = 0;
  rows.forEach((r, i) => {
    out.set(heads[i]!, at);
    at += heads[i]!.length;
    out.set(r.name, at);
    at += r.name.length;
    out[at++] = 0;
    hexToBytes(r.it.oid, out, at);
    at += 20;
  });
  return { content: out, sorted: rows.map((r) => r.it) };
}

export interface CommitFields {
  tree: string;
  parents: string[];
  author: { name: string; email: string };
  /** Unix seconds; author and committer time alike, UTC. */
  time: number;
  /** Ends with a newline. */
  message: string;
}

/** The content of a commit object (without the object header). */
export function serializeCommit(c: CommitFields): Uint8Array {
  const who = `${c.author.name} <${c.author.email}> ${c.time} +0000`;
  const lines = [`tree ${c.tree}`, ...c.parents.map((p) => `parent ${p}`), `author ${who}`, `committer ${who}`];
  return encoder.encode(`${lines.join('\n')}\n\n${c.message}`);
}

/** Web-standard codec (Workers, browsers): crypto.subtle SHA-1 and CompressionStream('deflate'). */
export const webCodec: ObjectCodec = {
  async hashAndDeflate(data) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-1', data as Uint8Array<ArrayBuffer>));
    let oid = '';
    for (const b of digest) oid += b.toString(16).padStart(2, '0');
    const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('deflate'));
    const deflated = new Uint8Array(await new Response(stream).arrayBuffer());
    return { oid, deflated };
  },
};
