/**
 * Git object encoding for writes: the loose-object form (`<type> <size>\0<content>`, SHA-1, zlib
 * deflate) and the tree and commit formats. Hashing and deflating are a platform seam (`ObjectCodec`):
 * on Node the synchronous `node:crypto`/`node:zlib` pair is about ten times faster per object than the
 * async web APIs, and a push writes several objects. Reading is lib/git/object-reader.ts.
 */
import { concatBytes } from '../wire.ts';

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
  /** zlib deflate of `data`; the web-standard one when absent. */
  deflate?(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
  /**
   * zlib inflate of `data` (one zlib stream, nothing after it); throws when the output would exceed
   * `maxBytes`. The web-standard one when absent.
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

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** SHA-1 of `data` with the codec's hash, or the web-standard one. */
export async function sha1(codec: ObjectCodec, data: Uint8Array): Promise<Uint8Array> {
  if (codec.sha1) return codec.sha1(data);
  return new Uint8Array(await crypto.subtle.digest('SHA-1', data as Uint8Array<ArrayBuffer>));
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

function hexToBytes(hex: string, out: Uint8Array, at: number): void {
  for (let i = 0; i < 20; i++) out[at + i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
}

/** `items` in git's tree order (as they are stored, and as git and isomorphic-git read them back). */
export function inTreeOrder<T extends { type: string }>(items: T[], nameOf: (item: T) => string): T[] {
  return items
    .map((it) => {
      const name = encoder.encode(nameOf(it));
      return { it, key: it.type === 'tree' ? new Uint8Array([...name, 0x2f]) : name };
    })
    .sort(compareEntries)
    .map((x) => x.it);
}

/** The binary content of a tree object (without the object header). */
export function serializeTree(items: TreeItem[]): Uint8Array {
  const rows = inTreeOrder(items, (it) => it.name).map((it) => {
    const isTree = it.type === 'tree';
    const name = encoder.encode(it.name);
    const mode = isTree ? '40000' : it.mode.replace(/^0+/, '');
    const head = encoder.encode(`${mode} `);
    const row = new Uint8Array(head.length + name.length + 1 + 20);
    row.set(head, 0);
    row.set(name, head.length);
    row[head.length + name.length] = 0;
    hexToBytes(it.oid, row, head.length + name.length + 1);
    return row;
  });
  const size = rows.reduce((n, r) => n + r.length, 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const r of rows) {
    out.set(r, at);
    at += r.length;
  }
  return out;
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
