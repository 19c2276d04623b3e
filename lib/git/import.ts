/**
 * Importing a git bundle (gitformat-bundle v2 and v3, as `git bundle create` and our export make them): the
 * body, already stored as it arrived (a `Spool`: a temporary file on Node, rows of the repository's Durable
 * Object on Workers), is read back by byte range and checked completely before anything is kept.
 *
 * - The header: its version, capabilities (v3: only `@object-format=sha1`; a `@filter` bundle lacks objects),
 *   no prerequisites, its refs; the branch to import (`?branch=`, else `HEAD`, else the only branch, else `main`).
 * - The pack (gitformat-pack v2/v3) is indexed as git's index-pack does: every record is walked and inflated
 *   (ObjectInflater: the runtime's zlib, which says how many bytes a record's stream took), its bytes CRC'd and
 *   hashed into the pack's checksum, which must match the trailer. Deltas (OFS_DELTA and REF_DELTA) are resolved
 *   against their bases in the same pack (a thin pack's outside base is refused), and every object is hashed:
 *   its id is what its content hashes to, so an object damaged inside a pack whose checksum was made to fit
 *   simply no longer has the id the trees and commits name, and the walk finds that id missing.
 * - Every object is checked for the form `git fsck --strict` wants (trees: known modes, sorted, no
 *   duplicates; commits and tags: their headers), and the history of the branch against the push's rules:
 *   every path of every commit's tree (lib/core/page/path.ts, and no two names of a tree equal ignoring case), no
 *   symlink or submodule, no file over the size a push allows.
 *
 * Memory holds, per object, its id, offset, CRC, type and size (about 60 bytes), plus a byte-bounded cache of
 * inflated objects for delta chains: never the pack. Long loops yield (TimeSlice). Web-standard only.
 */
import { HttpError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { foldPathCase, pagePathProblem } from '../core/page/path.ts';
import { TimeSlice } from '../util/time-slice.ts';
import { LruCache } from './lru.ts';
import { applyDelta, MAX_DELTA_DEPTH } from './object-reader.ts';
import { crc32 } from './pack.ts';
import { hexToBytes, sha1, sha1Stream, toHex, type ObjectCodec } from './objects.ts';

/** The body of an import, stored as it arrived, read back by byte range. */
export interface Spool {
  /** Bytes stored. */
  readonly size: number;
  /** `length` bytes from `position` (fewer at the end). */
  read(position: number, length: number): Promise<Uint8Array>;
}

/**
 * zlib inflate of the stream `data` starts with, and how many bytes of `data` that stream took (the bytes
 * after it are the next record's). Throws on a damaged stream or past `maxBytes` of output.
 */
export type ObjectInflater = (data: Uint8Array, maxBytes: number) => Promise<{ data: Uint8Array; consumed: number }> | { data: Uint8Array; consumed: number };

export interface BundleHeader {
  version: 2 | 3;
  prerequisites: string[];
  refs: Array<{ sha: string; name: string }>;
  /** Bytes of the header: the pack starts there. */
  length: number;
}

const decoder = new TextDecoder('utf-8', { fatal: false });
const encoder = new TextEncoder();
/** The longest header read (a bundle of many refs is still far below it). */
const MAX_HEADER_BYTES = 1024 * 1024;
const SHA = /^[0-9a-f]{40}$/;

/** A bundle refused: 400 `invalid bundle: <why>`. */
export const invalidBundle = (why: string) => refuse(R.invalid_bundle, why);

/** The bundle's header (gitformat-bundle), read from the spool's start. */
export async function readBundleHeader(spool: Spool): Promise<BundleHeader> {
  const head = await spool.read(0, Math.min(spool.size, MAX_HEADER_BYTES));
  const first = decoder.decode(head.subarray(0, 16));
  let version: 2 | 3;
  if (first === '# v2 git bundle\n') version = 2;
  else if (first === '# v3 git bundle\n') version = 3;
  else throw invalidBundle('not a git bundle (v2 or v3)');
  let at = 16;
  const prerequisites: string[] = [];
  const refs: Array<{ sha: string; name: string }> = [];
  for (;;) {
    const nl = head.indexOf(0x0a, at);
    if (nl < 0) throw invalidBundle(head.byteLength >= MAX_HEADER_BYTES ? 'header too long' : 'header not terminated');
    const line = decoder.decode(head.subarray(at, nl));
    at = nl + 1;
    if (line === '') break;
    if (line.startsWith('@')) {
      if (version !== 3) throw invalidBundle(`capability in a v2 bundle: ${line.slice(0, 80)}`);
      if (line === '@object-format=sha1') continue;
      if (line.startsWith('@object-format=')) throw invalidBundle(`unsupported object format ${line.slice(15, 80)}`);
      if (line.startsWith('@filter')) throw invalidBundle('filtered (partial) bundles are not supported');
      throw invalidBundle(`unknown capability ${line.slice(0, 80)}`);
    }
    if (line.startsWith('-')) {
      const sha = line.slice(1, 41);
      if (!SHA.test(sha)) throw invalidBundle('malformed prerequisite line');
      prerequisites.push(sha);
      continue;
    }
    const sp = line.indexOf(' ');
    const sha = line.slice(0, sp);
    const name = line.slice(sp + 1);
    if (sp !== 40 || !SHA.test(sha) || name === '' || /[\u0000-\u001f\u007f ]/.test(name)) throw invalidBundle('malformed ref line');
    refs.push({ sha, name });
  }
  if (refs.length === 0) throw invalidBundle('no refs');
  return { version, prerequisites, refs, length: at };
}

/**
 * The commit to import: `?branch=<name>` (as `refs/heads/<name>`, or a full ref name), else the bundle's `HEAD`,
 * else its only branch, else `refs/heads/main`.
 */
export function chooseTip(header: BundleHeader, branch: string | undefined): string {
  const find = (name: string) => header.refs.find((r) => r.name === name)?.sha;
  if (branch !== undefined && branch !== '') {
    const sha = find(branch.startsWith('refs/') ? branch : `refs/heads/${branch}`) ?? find(branch);
    if (!sha) throw refuse(R.bundle_no_branch, branch);
    return sha;
  }
  const head = find('HEAD');
  if (head) return head;
  const branches = header.refs.filter((r) => r.name.startsWith('refs/heads/'));
  if (branches.length === 1) return branches[0]!.sha;
  const main = find('refs/heads/main');
  if (main) return main;
  throw refuse(R.bundle_no_head);
}

const OFS_DELTA = 6;
const REF_DELTA = 7;
const TYPE_NAMES = ['', 'commit', 'tree', 'blob', 'tag'] as const;
export type ImportType = 'commit' | 'tree' | 'blob' | 'tag';
/** What is read at once while walking the pack's records. */
const READ_BYTES = 1024 * 1024;
/** The inflated objects kept for delta chains (bytes). */
const CACHE_BYTES = 16 * 1024 * 1024;
/** The largest object accepted (inflated): trees and commits are far below; a blob is held to `maxFileBytes`. */
const MAX_OBJECT_BYTES = 64 * 1024 * 1024;
/** zlib's stream of `n` bytes takes at most this many (deflateBound, with its header and checksum). */
const deflatedBound = (n: number) => n + Math.ceil(n / 8) + Math.ceil(n / 64) + 64;

export interface ImportLimits {
  /** The largest file (blob) a commit may hold: what one push may carry. */
  maxFileBytes: number;
}

/** The indexed pack of a bundle: every object's id, place and type, and its content on demand. */
export class IndexedPack {
  /** Where the pack starts in the spool, and its end (after the 20-byte trailer). */
  readonly start: number;
  readonly end: number;
  /** The pack's checksum (hex): its trailer, and its name as git names packs. */
  checksum = '';
  readonly count: number;
  /** Per record, in pack order: offset in the spool, bytes of its header, bytes in all, CRC-32, final type, size. */
  readonly offsets: Float64Array;
  readonly heads: Uint8Array;
  readonly lengths: Float64Array;
  readonly crcs: Uint32Array;
  readonly types: Uint8Array;
  readonly sizes: Float64Array;
  /** 20 bytes an object, in pack order. */
  readonly ids: Uint8Array;
  /** Record numbers in id order (set once every id is known). */
  sorted: Uint32Array = new Uint32Array(0);
  /** Delta records: the base's record number (OFS_DELTA) or id (REF_DELTA). */
  private readonly bases = new Map<number, number | string>();
  private readonly cache = new LruCache<{ type: number; data: Uint8Array }>(CACHE_BYTES, (o) => o.data.byteLength + 64);

  constructor(
    private readonly spool: Spool,
    private readonly inflater: ObjectInflater,
    private readonly codec: ObjectCodec,
    start: number,
    count: number,
  ) {
    this.start = start;
    this.end = spool.size;
    this.count = count;
    this.offsets = new Float64Array(count);
    this.heads = new Uint8Array(count);
    this.lengths = new Float64Array(count);
    this.crcs = new Uint32Array(count);
    this.types = new Uint8Array(count);
    this.sizes = new Float64Array(count);
    this.ids = new Uint8Array(count * 20);
  }

  /** The id of record `i` (hex). */
  oid(i: number): string {
    return toHex(this.ids.subarray(i * 20, i * 20 + 20));
  }

  /** The record holding `oid`, or -1. */
  find(oid: string): number {
    if (!SHA.test(oid)) return -1;
    const want = hexToBytes(oid);
    let lo = 0;
    let hi = this.sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareId(this.ids, this.sorted[mid]! * 20, want);
      if (c === 0) return this.sorted[mid]!;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Record `i`'s type and whole content (its delta chain applied). */
  async object(i: number): Promise<{ type: ImportType; data: Uint8Array }> {
    const o = await this.resolve(i);
    return { type: TYPE_NAMES[o.type] as ImportType, data: o.data };
  }

  /** The inflated stream of record `i` (a whole object's content, or a delta). */
  async inflated(i: number): Promise<Uint8Array> {
    const raw = await this.spool.read(this.offsets[i]! + this.heads[i]!, this.lengths[i]! - this.heads[i]!);
    return (await this.inflater(raw, MAX_OBJECT_BYTES)).data;
  }

  /** The base record of delta `i`, or -1 when its REF_DELTA base is not known (yet). */
  baseOf(i: number): number {
    const b = this.bases.get(i);
    if (b === undefined) return -1;
    return typeof b === 'number' ? b : this.find(b);
  }

  /** Sets delta `i`'s base. */
  setBase(i: number, base: number | string): void {
    this.bases.set(i, base);
  }

  async resolve(i: number): Promise<{ type: number; data: Uint8Array }> {
    const chain: number[] = [];
    let j = i;
    let hit = this.cache.get(String(j));
    while (!hit && this.bases.has(j)) {
      chain.push(j);
      if (chain.length > MAX_DELTA_DEPTH) throw invalidBundle('delta chain too long');
      j = this.baseOf(j);
      if (j < 0) throw invalidBundle(`delta base ${String(this.bases.get(chain[chain.length - 1]!))} is not in the pack`);
      hit = this.cache.get(String(j));
    }
    let cur = hit ?? { type: this.types[j]!, data: await this.inflated(j) };
    if (!hit) this.cache.set(String(j), cur);
    for (let k = chain.length - 1; k >= 0; k--) {
      let data: Uint8Array;
      try {
        data = applyDelta(cur.data, await this.inflated(chain[k]!));
      } catch (e) {
        if (e instanceof HttpError) throw e;
        throw invalidBundle(`delta at offset ${this.offsets[chain[k]!]! - this.start} does not apply`);
      }
      cur = { type: cur.type, data };
      this.cache.set(String(chain[k]!), cur);
    }
    return cur;
  }
}

function compareId(ids: Uint8Array, at: number, want: Uint8Array): number {
  for (let k = 0; k < 20; k++) {
    const d = ids[at + k]! - want[k]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** Reads the spool forwards through a window of READ_BYTES or more. */
class Cursor {
  private buf: Uint8Array = new Uint8Array(0);
  private bufStart = 0;
  constructor(private readonly spool: Spool) {}
  /** At least `min` bytes from `position` (fewer only at the spool's end), as a view. */
  async at(position: number, min: number): Promise<Uint8Array> {
    const rel = position - this.bufStart;
    if (rel >= 0 && rel + min <= this.buf.byteLength) return this.buf.subarray(rel);
    if (rel >= 0 && position + (this.buf.byteLength - rel) >= this.spool.size) return this.buf.subarray(rel);
    this.buf = await this.spool.read(position, Math.max(READ_BYTES, min));
    this.bufStart = position;
    return this.buf;
  }
}

/** A record's header: type, size, the delta base (offset back or id), and its length. */
function recordHeader(b: Uint8Array, offset: number): { type: number; size: number; back?: number; ref?: string; length: number } | null {
  let at = 0;
  if (b.length === 0) return null;
  let c = b[at++]!;
  const type = (c >> 4) & 7;
  let size = c & 15;
  let shift = 16;
  while (c & 0x80) {
    if (at >= b.length || shift > 2 ** 35) return null;
    c = b[at++]!;
    size += (c & 0x7f) * shift;
    shift *= 128;
  }
  if (type === OFS_DELTA) {
    if (at >= b.length) return null;
    c = b[at++]!;
    let back = c & 0x7f;
    while (c & 0x80) {
      if (at >= b.length || back > 2 ** 40) return null;
      c = b[at++]!;
      back = (back + 1) * 128 + (c & 0x7f);
    }
    if (back <= 0 || back > offset) return null;
    return { type, size, back, length: at };
  }
  if (type === REF_DELTA) {
    if (at + 20 > b.length) return null;
    return { type, size, ref: toHex(b.subarray(at, at + 20)), length: at + 20 };
  }
  return { type, size, length: at };
}

/**
 * Indexes the pack that starts at `start` in the spool: see the file comment. Every object's id is its
 * content's hash; every tree, commit and tag is checked for form (checkForm).
 */
export async function indexPack(spool: Spool, start: number, inflater: ObjectInflater, codec: ObjectCodec): Promise<IndexedPack> {
  const slice = new TimeSlice();
  const cursor = new Cursor(spool);
  const head = await spool.read(start, 12);
  if (head.byteLength < 12 || decoder.decode(head.subarray(0, 4)) !== 'PACK') throw invalidBundle('no pack after the header');
  const view = new DataView(head.buffer, head.byteOffset, 12);
  const version = view.getUint32(4);
  if (version !== 2 && version !== 3) throw invalidBundle(`pack version ${version}`);
  const count = view.getUint32(8);
  // The smallest record is a byte of header and an 8-byte zlib stream: a count beyond what the bytes could
  // hold is damage, not a reason to allocate.
  if (count * 9 > spool.size - start - 32 || count === 0) throw invalidBundle(count === 0 ? 'empty pack' : 'pack truncated');
  const pack = new IndexedPack(spool, inflater, codec, start, count);
  const sum = sha1Stream(codec);
  sum.update(head);
  let pos = start + 12;
  const deltas: number[] = [];
  for (let i = 0; i < count; i++) {
    if (slice.due) await slice.next();
    const at = pos - start;
    let window = await cursor.at(pos, 64);
    const h = recordHeader(window.subarray(0, 64), at);
    if (!h) throw invalidBundle(`record ${i} at offset ${at} is malformed`);
    if (h.type === 0 || h.type === 5) throw invalidBundle(`record ${i} at offset ${at} has type ${h.type}`);
    if (h.size > MAX_OBJECT_BYTES) throw invalidBundle(`record ${i} at offset ${at} is ${h.size} bytes (at most ${MAX_OBJECT_BYTES})`);
    window = await cursor.at(pos, h.length + deflatedBound(h.size));
    let out;
    try {
      out = await inflater(window.subarray(h.length), h.size);
    } catch {
      throw invalidBundle(`record ${i} at offset ${at} does not inflate`);
    }
    if (out.data.byteLength !== h.size) throw invalidBundle(`record ${i} at offset ${at} inflates to ${out.data.byteLength} bytes, not ${h.size}`);
    const length = h.length + out.consumed;
    if (pos + length > spool.size - 20) throw invalidBundle('pack truncated');
    const raw = window.subarray(0, length);
    sum.update(raw);
    pack.offsets[i] = pos;
    pack.heads[i] = h.length;
    pack.lengths[i] = length;
    pack.crcs[i] = crc32(raw);
    if (h.type === OFS_DELTA || h.type === REF_DELTA) {
      if (h.type === OFS_DELTA) {
        const base = findOffset(pack.offsets, i, pos - h.back!);
        if (base < 0) throw invalidBundle(`record ${i} at offset ${at}: delta base offset is not a record`);
        pack.setBase(i, base);
      } else pack.setBase(i, h.ref!);
      deltas.push(i);
    } else {
      pack.types[i] = h.type;
      pack.sizes[i] = h.size;
      pack.ids.set(await objectId(codec, h.type, out.data), i * 20);
      checkForm(TYPE_NAMES[h.type] as ImportType, out.data, () => toHex(pack.ids.subarray(i * 20, i * 20 + 20)));
    }
    pos += length;
  }
  const trailer = await spool.read(pos, 21);
  if (trailer.byteLength < 20) throw invalidBundle('pack truncated');
  if (trailer.byteLength > 20) throw invalidBundle('bytes after the pack');
  const digest = sum.digest();
  for (let k = 0; k < 20; k++) if (digest[k] !== trailer[k]) throw invalidBundle('pack checksum does not match');
  pack.checksum = toHex(trailer);

  // Deltas: an OFS_DELTA's base is known now; a REF_DELTA's once the object it names has its id. Rounds until
  // none is left; a round that resolves nothing means a base outside the pack (a thin pack).
  sortIds(pack, deltas);
  let pending = deltas;
  while (pending.length > 0) {
    const next: number[] = [];
    for (const i of pending) {
      if (slice.due) await slice.next();
      if (!chainKnown(pack, i)) {
        next.push(i);
        continue;
      }
      const o = await pack.resolve(i);
      pack.types[i] = o.type;
      pack.sizes[i] = o.data.byteLength;
      pack.ids.set(await objectId(codec, o.type, o.data), i * 20);
      checkForm(TYPE_NAMES[o.type] as ImportType, o.data, () => pack.oid(i));
    }
    if (next.length === pending.length) {
      throw invalidBundle('a delta\'s base is not in the pack (a thin pack, or a bundle with prerequisites)');
    }
    pending = next;
    sortIds(pack, pending);
  }
  return pack;
}

/** Whether every base down delta `i`'s chain is known. */
function chainKnown(pack: IndexedPack, i: number): boolean {
  for (let j = i, depth = 0; depth <= MAX_DELTA_DEPTH; depth++) {
    const b = pack.baseOf(j);
    if (b < 0) return false;
    if (pack.types[b] !== 0) return true;
    j = b;
  }
  throw invalidBundle('delta chain too long');
}

/** Sorts the records whose ids are known (all but `unknown`) into `pack.sorted`; refuses an id twice. */
function sortIds(pack: IndexedPack, unknown: readonly number[]): void {
  const skip = new Set(unknown);
  const order: number[] = [];
  for (let i = 0; i < pack.count; i++) if (!skip.has(i)) order.push(i);
  const ids = pack.ids;
  order.sort((a, b) => {
    for (let k = 0; k < 20; k++) {
      const d = ids[a * 20 + k]! - ids[b * 20 + k]!;
      if (d !== 0) return d;
    }
    return 0;
  });
  for (let k = 1; k < order.length; k++) {
    if (compareId(ids, order[k]! * 20, ids.subarray(order[k - 1]! * 20, order[k - 1]! * 20 + 20)) === 0) {
      throw invalidBundle(`object ${pack.oid(order[k]!)} is twice in the pack`);
    }
  }
  pack.sorted = Uint32Array.from(order);
}

/** The record among the first `n` whose offset is `offset`, or -1 (offsets are increasing). */
function findOffset(offsets: Float64Array, n: number, offset: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = offsets[mid]!;
    if (v === offset) return mid;
    if (v < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

async function objectId(codec: ObjectCodec, type: number, data: Uint8Array): Promise<Uint8Array> {
  const header = encoder.encode(`${TYPE_NAMES[type]} ${data.byteLength}\0`);
  if (codec.sha1Stream) {
    const h = codec.sha1Stream();
    h.update(header);
    h.update(data);
    return h.digest();
  }
  const whole = new Uint8Array(header.byteLength + data.byteLength);
  whole.set(header);
  whole.set(data, header.byteLength);
  return sha1(codec, whole);
}

/** One entry of a tree, as stored. */
export interface RawTreeEntry {
  mode: string;
  name: string;
  oid: string;
}

const TREE_MODES = new Set(['40000', '100644', '100755', '120000', '160000']);
const IDENT = /^[^<>\n]* <[^<>\n]*> [0-9]+ [+-][0-9]{4}$/;

/** A tree's entries; throws `invalid bundle` for anything `git fsck --strict` would refuse in its form. */
export function parseRawTree(data: Uint8Array, oid: () => string): RawTreeEntry[] {
  const out: RawTreeEntry[] = [];
  let at = 0;
  let prev: Uint8Array | null = null;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const nul = space < 0 ? -1 : data.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > data.length) throw invalidBundle(`tree ${oid()} is malformed`);
    const mode = decoder.decode(data.subarray(at, space));
    if (!TREE_MODES.has(mode)) throw invalidBundle(`tree ${oid()} has an entry of mode ${mode.slice(0, 10)}`);
    const nameBytes = data.subarray(space + 1, nul);
    const name = decoder.decode(nameBytes);
    if (nameBytes.length === 0 || nameBytes.includes(0x2f) || name === '.' || name === '..') {
      throw invalidBundle(`tree ${oid()} has an entry named ${JSON.stringify(name)}`);
    }
    // git's order: by name bytes, a directory's name compared as if it ended in `/`.
    const key = mode === '40000' ? concat(nameBytes, 0x2f) : nameBytes;
    if (prev && compareBytes(prev, key) >= 0) throw invalidBundle(`tree ${oid()} is not sorted or has a duplicate entry`);
    prev = key;
    out.push({ mode, name, oid: toHex(data.subarray(nul + 1, nul + 21)) });
    at = nul + 21;
  }
  return out;
}

function concat(a: Uint8Array, byte: number): Uint8Array {
  const out = new Uint8Array(a.length + 1);
  out.set(a);
  out[a.length] = byte;
  return out;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

export interface RawCommit {
  tree: string;
  parents: string[];
}

/** A commit's tree and parents; throws `invalid bundle` for a header git fsck would refuse. */
export function parseRawCommit(data: Uint8Array, oid: () => string): RawCommit {
  const blank = findBlank(data);
  const lines = decoder.decode(data.subarray(0, blank < 0 ? data.length : blank)).split('\n');
  const bad = (what: string) => invalidBundle(`commit ${oid()}: ${what}`);
  let i = 0;
  const tree = /^tree ([0-9a-f]{40})$/.exec(lines[i++] ?? '');
  if (!tree) throw bad('no tree line');
  const parents: string[] = [];
  for (let m; (m = /^parent ([0-9a-f]{40})$/.exec(lines[i] ?? '')); i++) parents.push(m[1]!);
  const author = /^author (.*)$/.exec(lines[i++] ?? '');
  if (!author || !IDENT.test(author[1]!)) throw bad('bad author line');
  const committer = /^committer (.*)$/.exec(lines[i++] ?? '');
  if (!committer || !IDENT.test(committer[1]!)) throw bad('bad committer line');
  return { tree: tree[1]!, parents };
}

function findBlank(data: Uint8Array): number {
  for (let i = 0; i + 1 < data.length; i++) if (data[i] === 0x0a && data[i + 1] === 0x0a) return i;
  return -1;
}

/** Checks an object's form (trees, commits, tags); blobs are any bytes. */
function checkForm(type: ImportType, data: Uint8Array, oid: () => string): void {
  if (type === 'tree') parseRawTree(data, oid);
  else if (type === 'commit') parseRawCommit(data, oid);
  else if (type === 'tag') {
    const text = decoder.decode(data.subarray(0, Math.min(data.length, 512)));
    if (!/^object [0-9a-f]{40}\ntype (commit|tree|blob|tag)\ntag [^\n]+\n/.test(text)) throw invalidBundle(`tag ${oid()} is malformed`);
  }
}

/** What the branch's history holds. */
export interface ImportPlan {
  head: string;
  /** Commits reachable from the head. */
  commits: number;
  /** Files in the head's tree. */
  pages: number;
}

/**
 * Walks every commit reachable from `tip` and every tree they hold, with the push's rules: see the file
 * comment. Each (tree, place) pair is checked once, so a long history of small changes costs about what its
 * changes hold. Trees and commits outside the branch are checked for form only (indexPack) and, for their
 * names, here afterwards: `git fsck --strict` reads every object kept.
 */
export async function checkHistory(pack: IndexedPack, tip: string, limits: ImportLimits): Promise<ImportPlan> {
  const slice = new TimeSlice();
  const kind = (oid: string, want: ImportType, what: () => string): number => {
    const i = pack.find(oid);
    if (i < 0) throw invalidBundle(`object ${oid} (${what()}) is missing, or does not match its content`);
    if (TYPE_NAMES[pack.types[i]!] !== want) throw invalidBundle(`object ${oid} (${what()}) is a ${TYPE_NAMES[pack.types[i]!]}, not a ${want}`);
    return i;
  };
  kind(tip, 'commit', () => 'the branch');
  const seenCommits = new Set<number>();
  const seenTrees = new Set<string>();
  const treesVisited = new Set<number>();
  const stack = [tip];
  while (stack.length > 0) {
    const sha = stack.pop()!;
    const i = kind(sha, 'commit', () => 'a parent');
    if (seenCommits.has(i)) continue;
    seenCommits.add(i);
    if (slice.due) await slice.next();
    const c = parseRawCommit((await pack.object(i)).data, () => sha);
    kind(c.tree, 'tree', () => `the tree of ${sha}`);
    await checkTree(pack, c.tree, '', sha, limits, seenTrees, treesVisited, slice, kind);
    for (const p of c.parents) {
      kind(p, 'commit', () => `a parent of ${sha}`);
      stack.push(p);
    }
  }
  // Trees no commit of the branch holds (other refs of the bundle): their names as git would check them.
  for (let i = 0; i < pack.count; i++) {
    if (pack.types[i] !== 2 || treesVisited.has(i)) continue;
    if (slice.due) await slice.next();
    for (const e of parseRawTree((await pack.object(i)).data, () => pack.oid(i))) {
      if (pagePathProblem(e.name) !== null) throw invalidBundle(`tree ${pack.oid(i)} has an entry named ${JSON.stringify(e.name)}`);
    }
  }
  const headTree = parseRawCommit((await pack.object(pack.find(tip))).data, () => tip).tree;
  return { head: tip, commits: seenCommits.size, pages: await countFiles(pack, headTree, slice) };
}

async function checkTree(
  pack: IndexedPack,
  oid: string,
  prefix: string,
  commit: string,
  limits: ImportLimits,
  seen: Set<string>,
  visited: Set<number>,
  slice: TimeSlice,
  kind: (oid: string, want: ImportType, what: () => string) => number,
): Promise<void> {
  const key = `${prefix}\0${oid}`;
  if (seen.has(key)) return;
  seen.add(key);
  if (slice.due) await slice.next();
  const i = pack.find(oid);
  visited.add(i);
  const folds = new Map<string, string>();
  for (const e of parseRawTree((await pack.object(i)).data, () => oid)) {
    const path = `${prefix}${e.name}`;
    if (e.mode === '120000') throw refuse(R.import_symlink, commit, path);
    if (e.mode === '160000') throw refuse(R.import_submodule, commit, path);
    if (pagePathProblem(path) !== null) throw refuse(R.import_invalid_path, commit, path);
    const fold = foldPathCase(e.name);
    const twin = folds.get(fold);
    if (twin !== undefined) throw refuse(R.import_invalid_path, commit, `${path} (differs only in letter case from ${prefix}${twin})`);
    folds.set(fold, e.name);
    if (e.mode === '40000') {
      kind(e.oid, 'tree', () => path);
      await checkTree(pack, e.oid, `${path}/`, commit, limits, seen, visited, slice, kind);
    } else {
      const b = kind(e.oid, 'blob', () => path);
      if (pack.sizes[b]! > limits.maxFileBytes) {
        throw refuse(R.import_file_too_large, commit, path, pack.sizes[b]!, limits.maxFileBytes);
      }
    }
  }
}

async function countFiles(pack: IndexedPack, tree: string, slice: TimeSlice): Promise<number> {
  let n = 0;
  const stack = [tree];
  while (stack.length > 0) {
    if (slice.due) await slice.next();
    const t = stack.pop()!;
    for (const e of parseRawTree((await pack.object(pack.find(t))).data, () => t)) {
      if (e.mode === '40000') stack.push(e.oid);
      else n++;
    }
  }
  return n;
}

/**
 * The idx v2 of the indexed pack (gitformat-pack): fan-out, sorted ids, CRC-32s, offsets in the pack (the
 * 64-bit table for any past 2 GiB), the pack's checksum, the idx's own.
 */
export async function buildIdx(pack: IndexedPack, codec: ObjectCodec): Promise<Uint8Array> {
  const n = pack.count;
  const large: number[] = [];
  for (let i = 0; i < n; i++) if (pack.offsets[i]! - pack.start >= 0x80000000) large.push(i);
  const body = 8 + 256 * 4 + n * 28 + large.length * 8 + 20;
  const idx = new Uint8Array(body + 20);
  const v = new DataView(idx.buffer);
  idx.set([0xff, 0x74, 0x4f, 0x63], 0);
  v.setUint32(4, 2);
  const sorted = pack.sorted;
  for (let b = 0, j = 0; b < 256; b++) {
    while (j < n && pack.ids[sorted[j]! * 20]! <= b) j++;
    v.setUint32(8 + b * 4, j);
  }
  const ids = 8 + 1024;
  const crcs = ids + n * 20;
  const offs = crcs + n * 4;
  const big = offs + n * 4;
  let nextLarge = 0;
  for (let k = 0; k < n; k++) {
    const i = sorted[k]!;
    idx.set(pack.ids.subarray(i * 20, i * 20 + 20), ids + k * 20);
    v.setUint32(crcs + k * 4, pack.crcs[i]!);
    const off = pack.offsets[i]! - pack.start;
    if (off < 0x80000000) v.setUint32(offs + k * 4, off);
    else {
      v.setUint32(offs + k * 4, (0x80000000 | nextLarge) >>> 0);
      v.setUint32(big + nextLarge * 8, Math.floor(off / 2 ** 32));
      v.setUint32(big + nextLarge * 8 + 4, off >>> 0);
      nextLarge++;
    }
  }
  idx.set(hexToBytes(pack.checksum), body - 20);
  idx.set(await sha1(codec, idx.subarray(0, body)), body);
  return idx;
}

/** Checks a whole bundle in the spool: header, pack, history. The branch's plan and the indexed pack. */
export async function checkBundle(
  spool: Spool,
  opts: { branch?: string; inflater: ObjectInflater; codec: ObjectCodec; limits: ImportLimits },
): Promise<{ plan: ImportPlan; pack: IndexedPack }> {
  const header = await readBundleHeader(spool);
  if (header.prerequisites.length > 0) throw refuse(R.bundle_prerequisites);
  const tip = chooseTip(header, opts.branch);
  const pack = await indexPack(spool, header.length, opts.inflater, opts.codec);
  const plan = await checkHistory(pack, tip, opts.limits);
  return { plan, pack };
}
