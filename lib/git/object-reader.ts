/**
 * Reading git objects from a repository on a StoreFs: loose files (`objects/xx/yyyy…`) and packfiles
 * (pack v2 with its idx v2, gitformat-pack), with the deltas git's own packs hold (OFS_DELTA and
 * REF_DELTA) resolved. Web-standard only (the codec supplies inflate), so either runtime bundles it.
 *
 * What it keeps in memory is the idx of each pack (about 28 bytes an object) and, once a pack is read, its
 * records' offsets in order (8 bytes an object), for the repositories read most recently within a byte
 * budget. An object is read from its pack by its byte range alone (StoreFs.readRange), never the whole
 * pack; inflated objects are not kept here (the store caches what it decodes).
 */
import type { StoreFs } from './fs.ts';
import { hexToBytes, inflate, toHex, webCodec, type ObjectCodec } from './objects.ts';
import { LruCache } from './lru.ts';
import { IDX_HEAD, idxOffset, viewIdx, type IdxView } from './pack.ts';

export type RawType = 'blob' | 'tree' | 'commit' | 'tag';

export interface RawObject {
  type: RawType;
  /** What git hashes after the `<type> <size>\0` header. */
  content: Uint8Array;
}

/** The object is in no pack and no loose file of the repository. */
export class ObjectMissingError extends Error {
  constructor(readonly oid: string) {
    super(`object ${oid} not found`);
    this.name = 'ObjectMissingError';
  }
}

/** The object's file or record does not decode as git writes them. */
export class CorruptObjectError extends Error {
  constructor(
    readonly oid: string,
    why: string,
  ) {
    super(`object ${oid} is corrupt: ${why}`);
    this.name = 'CorruptObjectError';
  }
}

/** The largest object read (bytes, inflated): pages and their trees are far below it; a bomb is not. */
export const MAX_OBJECT_BYTES = 256 * 1024 * 1024;
/** The longest delta chain followed (git's pack.depth is 50 by default; it accepts up to 4095). */
export const MAX_DELTA_DEPTH = 4095;

const TYPES: Record<number, RawType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
/** Listings made at most for one read while merges delete what was listed. */
const LIST_ATTEMPTS = 8;
const OFS_DELTA = 6;
const REF_DELTA = 7;
const decoder = new TextDecoder();

/** One pack as its idx describes it. */
interface Pack extends IdxView {
  name: string;
  /** Path of the .pack file. */
  path: string;
  /** Bytes of the .pack file (its records end 20 bytes before). */
  packBytes: number;
  /** Every record's offset, ascending (a record ends where the next begins); made on the first read. */
  ends: Float64Array | null;
}

/** The pack a record was to be read from is gone (a merge deleted it): list the packs again. */
class PackGone extends Error {}

/** What a repository's packs hold in memory: each idx, and the offsets in order made on its first read. */
const packBytesOf = (packs: Pack[]) => 64 + packs.reduce((n, p) => n + 96 + p.idx.byteLength + p.n * 8, 0);

function oidBytes(oid: string): Uint8Array {
  if (!/^[0-9a-f]{40}$/.test(oid)) throw new ObjectMissingError(oid);
  return hexToBytes(oid);
}

/** The pack named `name`, at `path`, as its idx describes it; null when the idx is not one. */
function openPack(name: string, path: string, idx: Uint8Array, packBytes: number): Pack | null {
  const x = viewIdx(idx);
  return x && { ...x, name, path, packBytes, ends: null };
}

/** Where `oid` is in the pack (a byte offset), or -1. */
function findIn(p: Pack, oid: Uint8Array): number {
  const first = oid[0]!;
  let lo = first === 0 ? 0 : p.view.getUint32(8 + (first - 1) * 4);
  let hi = Math.min(p.view.getUint32(8 + first * 4), p.n);
  const idx = p.idx;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = IDX_HEAD + mid * 20;
    let cmp = 0;
    for (let k = 0; k < 20 && cmp === 0; k++) cmp = idx[at + k]! - oid[k]!;
    if (cmp === 0) return idxOffset(p, mid);
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** Where the record at `offset` ends: the next record's offset, or the pack's checksum. */
function recordEnd(p: Pack, offset: number): number {
  if (!p.ends) {
    const ends = new Float64Array(p.n);
    for (let i = 0; i < p.n; i++) ends[i] = idxOffset(p, i);
    ends.sort();
    p.ends = ends;
  }
  const ends = p.ends;
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ends[mid]! <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < ends.length ? ends[lo]! : p.packBytes - 20;
}

/** Reads a little-endian base-128 number (a delta's sizes) at `at`. */
function varint(d: Uint8Array, at: number): [number, number] {
  let n = 0;
  let shift = 1;
  let b: number;
  do {
    if (at >= d.length) throw new RangeError('delta truncated');
    b = d[at++]!;
    n += (b & 0x7f) * shift;
    shift *= 128;
  } while (b & 0x80 && shift < 2 ** 53);
  return [n, at];
}

/** `base` with the delta applied (gitformat-pack "Deltified representation"). */
export function applyDelta(base: Uint8Array, delta: Uint8Array): Uint8Array {
  let [srcSize, at] = varint(delta, 0);
  if (srcSize !== base.byteLength) throw new RangeError(`delta expects a base of ${srcSize} bytes, got ${base.byteLength}`);
  let dstSize;
  [dstSize, at] = varint(delta, at);
  if (dstSize > MAX_OBJECT_BYTES) throw new RangeError(`delta result of ${dstSize} bytes`);
  const out = new Uint8Array(dstSize);
  let w = 0;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      let off = 0;
      let size = 0;
      for (let k = 0; k < 4; k++) if (op & (1 << k)) off += delta[at++]! * 2 ** (8 * k);
      for (let k = 0; k < 3; k++) if (op & (0x10 << k)) size += delta[at++]! * 2 ** (8 * k);
      if (size === 0) size = 0x10000;
      if (at > delta.length || off + size > base.byteLength || w + size > dstSize) throw new RangeError('delta copies out of bounds');
      out.set(base.subarray(off, off + size), w);
      w += size;
    } else if (op !== 0) {
      if (at + op > delta.length || w + op > dstSize) throw new RangeError('delta inserts out of bounds');
      out.set(delta.subarray(at, at + op), w);
      at += op;
      w += op;
    } else {
      throw new RangeError('delta opcode 0');
    }
  }
  if (w !== dstSize) throw new RangeError(`delta made ${w} of ${dstSize} bytes`);
  return out;
}

export interface ObjectReaderOptions {
  fs: StoreFs;
  /** The codec's inflate (Node: zlib's); the web-standard DecompressionStream when absent. */
  codec?: ObjectCodec;
  /** Bytes of pack indexes kept, over all repositories. An idx larger than this is read again on each lookup. */
  cacheBytes: number;
}

/** One step of a delta chain: the record's type and its inflated data. */
interface Step {
  type: number;
  data: Uint8Array;
  /** OFS_DELTA: the base's offset in the same pack; REF_DELTA: the base's id. */
  base?: number | string;
}

export class ObjectReader {
  private readonly fs: StoreFs;
  private readonly codec: ObjectCodec;
  /** Each repository's packs as last listed (newest written first). */
  private readonly repos: LruCache<Pack[]>;

  constructor(opts: ObjectReaderOptions) {
    this.fs = opts.fs;
    this.codec = opts.codec ?? opts.fs.codec ?? webCodec;
    this.repos = new LruCache(Math.max(0, opts.cacheBytes), packBytesOf);
  }

  /** Bytes of pack indexes held now. */
  get cachedBytes(): number {
    return this.repos.bytes;
  }

  /**
   * The object `oid` of the repository at `gitdir`. Throws ObjectMissingError when no pack or loose file
   * holds it, CorruptObjectError when the one that does cannot be decoded.
   */
  read(gitdir: string, oid: string): Promise<RawObject> {
    return this.find(gitdir, oid, 0);
  }

  /** read, as the base of a delta `depth` steps down a chain. */
  private async find(gitdir: string, oid: string, depth: number): Promise<RawObject> {
    const bin = oidBytes(oid);
    const cached = this.repos.get(gitdir);
    if (cached) {
      const hit = await this.fromPacks(gitdir, cached, bin, oid, depth);
      if (hit) return hit;
    }
    const loose = await this.loose(gitdir, oid);
    if (loose) return loose;
    if (!this.fs.packs) throw new ObjectMissingError(oid);
    // Not where it was last seen: packs may have been written or merged since. A merge writes the merged
    // pack (or loose objects) before it deletes the packs it merged, so a listing made after the object
    // was seen missing finds it, unless that listing raced yet another merge (then it is made again).
    for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
      const hit = await this.fromPacks(gitdir, await this.list(gitdir), bin, oid, depth);
      if (hit) return hit;
      const late = await this.loose(gitdir, oid);
      if (late) return late;
    }
    throw new ObjectMissingError(oid);
  }

  /** Makes a pack the store has just written known without listing the directory again. */
  added(gitdir: string, name: string, idx: Uint8Array, packBytes: number): void {
    const repo = this.repos.get(gitdir);
    if (!repo || repo.some((p) => p.name === name)) return;
    const pack = openPack(name, `${gitdir}/objects/pack/pack-${name}.pack`, idx, packBytes);
    if (!pack) return;
    // Newest first: recent objects are read most.
    this.repos.set(gitdir, [pack, ...repo]);
  }

  /** Forgets what is known of the repository's packs (after packs were deleted). */
  forget(gitdir: string): void {
    this.repos.delete(gitdir);
  }

  /** The repository's packs as listed now; listed again while a listed idx vanishes before it is read. */
  private async list(gitdir: string): Promise<Pack[]> {
    const dir = `${gitdir}/objects/pack`;
    let packs: Pack[] = [];
    for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
      const listed = (await this.fs.packs?.list(dir)) ?? [];
      packs = [];
      let vanished = false;
      for (const { name, bytes } of listed) {
        const idx = await this.fs.readFile(`${dir}/pack-${name}.idx`);
        if (!idx) vanished = true;
        const pack = idx && openPack(name, `${dir}/pack-${name}.pack`, idx, bytes);
        if (pack) packs.push(pack);
      }
      if (!vanished) break;
    }
    this.repos.set(gitdir, packs);
    return packs;
  }

  /** The object from `packs`, null when none holds it; lists them again while a pack it was in went away. */
  private async fromPacks(gitdir: string, packs: Pack[], oid: Uint8Array, hex: string, depth: number): Promise<RawObject | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        for (const p of packs) {
          const offset = findIn(p, oid);
          if (offset >= 0) return await this.fromPack(gitdir, p, offset, hex, depth);
        }
        return null;
      } catch (e) {
        if (!(e instanceof PackGone) || attempt + 1 >= LIST_ATTEMPTS) throw e;
        packs = await this.list(gitdir);
      }
    }
  }

  /** The object whose record starts at `offset` of `p`, its delta chain resolved. */
  private async fromPack(gitdir: string, p: Pack, offset: number, oid: string, depth: number): Promise<RawObject> {
    const chain: Step[] = [];
    let at = offset;
    for (;;) {
      if (chain.length + depth > MAX_DELTA_DEPTH) throw new CorruptObjectError(oid, `delta chain longer than ${MAX_DELTA_DEPTH}`);
      const step = await this.record(p, at, oid);
      chain.push(step);
      if (step.type !== OFS_DELTA) break;
      at = step.base as number;
    }
    let last = chain.pop()!;
    let type: RawType;
    let content: Uint8Array;
    if (last.type === REF_DELTA) {
      const base = await this.find(gitdir, last.base as string, depth + chain.length + 1);
      type = base.type;
      content = this.patch(oid, base.content, last.data);
    } else {
      const t = TYPES[last.type];
      if (!t) throw new CorruptObjectError(oid, `record type ${last.type}`);
      type = t;
      content = last.data;
    }
    while ((last = chain.pop()!)) content = this.patch(oid, content, last.data);
    return { type, content };
  }

  private patch(oid: string, base: Uint8Array, delta: Uint8Array): Uint8Array {
    try {
      return applyDelta(base, delta);
    } catch (e) {
      throw new CorruptObjectError(oid, (e as Error).message);
    }
  }

  /** One record of a pack: its header decoded and its data inflated. */
  private async record(p: Pack, offset: number, oid: string): Promise<Step> {
    const end = recordEnd(p, offset);
    if (offset < 12 || end <= offset || end > p.packBytes - 20) throw new CorruptObjectError(oid, 'pack and idx disagree');
    const bytes = this.fs.readRange
      ? await this.fs.readRange(p.path, offset, end - offset)
      : (await this.fs.readFile(p.path))?.subarray(offset, end) ?? null;
    if (!bytes) throw new PackGone();
    if (bytes.byteLength !== end - offset) throw new CorruptObjectError(oid, 'pack truncated');
    let at = 0;
    let b = bytes[at++]!;
    const type = (b >> 4) & 7;
    let size = b & 15;
    let shift = 16;
    while (b & 0x80) {
      if (at >= bytes.length || shift > 2 ** 35) throw new CorruptObjectError(oid, 'record header');
      b = bytes[at++]!;
      size += (b & 0x7f) * shift;
      shift *= 128;
    }
    let base: number | string | undefined;
    if (type === OFS_DELTA) {
      if (at >= bytes.length) throw new CorruptObjectError(oid, 'record header');
      b = bytes[at++]!;
      let back = b & 0x7f;
      while (b & 0x80) {
        if (at >= bytes.length || back > 2 ** 45) throw new CorruptObjectError(oid, 'record header');
        b = bytes[at++]!;
        back = (back + 1) * 128 + (b & 0x7f);
      }
      base = offset - back;
      if (base < 12) throw new CorruptObjectError(oid, 'delta base before the pack');
    } else if (type === REF_DELTA) {
      if (at + 20 > bytes.length) throw new CorruptObjectError(oid, 'record header');
      base = toHex(bytes.subarray(at, at + 20));
      at += 20;
    }
    if (size > MAX_OBJECT_BYTES) throw new CorruptObjectError(oid, `${size} bytes`);
    const data = await this.inflate(oid, bytes.subarray(at), size);
    if (data.byteLength !== size) throw new CorruptObjectError(oid, `${data.byteLength} bytes inflated, ${size} declared`);
    return { type, data, base };
  }

  private async inflate(oid: string, data: Uint8Array, max: number): Promise<Uint8Array> {
    try {
      return await inflate(this.codec, data, max);
    } catch (e) {
      throw new CorruptObjectError(oid, (e as Error).message);
    }
  }

  /** The loose object, or null when there is no such file. */
  private async loose(gitdir: string, oid: string): Promise<RawObject | null> {
    const file = await this.fs.readFile(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`);
    if (!file) return null;
    const raw = await this.inflate(oid, file, MAX_OBJECT_BYTES + 64);
    const nul = raw.indexOf(0);
    const head = nul > 0 && nul < 32 ? decoder.decode(raw.subarray(0, nul)) : '';
    const m = /^(blob|tree|commit|tag) (0|[1-9][0-9]*)$/.exec(head);
    if (!m) throw new CorruptObjectError(oid, 'loose object header');
    const content = raw.subarray(nul + 1);
    if (content.byteLength !== Number(m[2])) throw new CorruptObjectError(oid, `${content.byteLength} bytes, ${m[2]} declared`);
    return { type: m[1] as RawType, content };
  }
}

/** One entry of a tree object, as isomorphic-git reads it (a directory's mode written `040000`). */
export interface TreeRow {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

const MODE_TYPES: Record<string, TreeRow['type']> = {
  '040000': 'tree',
  '100644': 'blob',
  '100755': 'blob',
  '120000': 'blob',
  '160000': 'commit',
};

/** Names git refuses in a tree (verify_path): separators, `.`, `..` and `.git` in its NTFS/HFS disguises. */
function unsafeName(name: string): boolean {
  const hfs = name.replace(/[\u200C-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g, '');
  const ntfs = (hfs.split(':')[0] ?? '').toLowerCase().replace(/[. ]+$/, '');
  return name.includes('/') || name.includes('\\') || name === '' || hfs === '.' || hfs === '..' || ntfs === '.git' || /^\.?git~[1-9]$/.test(ntfs);
}

/** A tree object's entries, in stored order. Throws RangeError on a malformed or unsafe entry. */
export function parseTree(content: Uint8Array): TreeRow[] {
  const out: TreeRow[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(0x20, at);
    const nul = space < 0 ? -1 : content.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > content.length) throw new RangeError(`tree entry at byte ${at} is malformed`);
    let mode = decoder.decode(content.subarray(at, space));
    if (mode === '40000') mode = '040000';
    const type = MODE_TYPES[mode];
    if (!type) throw new RangeError(`tree entry mode ${mode}`);
    const path = decoder.decode(content.subarray(space + 1, nul));
    if (unsafeName(path)) throw new RangeError(`unsafe tree entry name ${JSON.stringify(path)}`);
    out.push({ mode, path, oid: toHex(content.subarray(nul + 1, nul + 21)), type });
    at = nul + 21;
  }
  return out;
}

export interface ParsedCommit {
  tree: string;
  parents: string[];
  author: { name: string; email: string; timestamp: number };
  /** Everything after the headers' blank line. */
  message: string;
}

/**
 * A commit object's fields, read as git reads them: `tree` first, then the `parent` lines that follow it
 * directly; of any later header the first occurrence counts (continuation lines belong to the one before).
 */
export function parseCommit(content: Uint8Array): ParsedCommit {
  const text = decoder.decode(content);
  const blank = text.indexOf('\n\n');
  const headers: string[] = [];
  for (const line of (blank < 0 ? text : text.slice(0, blank)).split('\n')) {
    if (line.startsWith(' ') && headers.length > 0) headers[headers.length - 1] += `\n${line.slice(1)}`;
    else headers.push(line);
  }
  const key = (h: string) => h.slice(0, h.indexOf(' '));
  const value = (h: string) => h.slice(h.indexOf(' ') + 1);
  if (headers.length === 0 || key(headers[0]!) !== 'tree') throw new RangeError('commit does not start with its tree');
  const tree = value(headers[0]!);
  const parents: string[] = [];
  let i = 1;
  while (i < headers.length && key(headers[i]!) === 'parent') parents.push(value(headers[i++]!));
  let author: string | undefined;
  for (; i < headers.length && author === undefined; i++) if (key(headers[i]!) === 'author') author = value(headers[i]!);
  const m = author === undefined ? null : /^(.*) <(.*)> (.*) (.*)$/.exec(author);
  if (!m) throw new RangeError('commit has no author');
  return { tree, parents, author: { name: m[1]!, email: m[2]!, timestamp: Number(m[3]) }, message: blank < 0 ? '' : text.slice(blank + 2) };
}
