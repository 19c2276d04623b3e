/**
 * Reading git objects from a repository on a StoreFs: loose files (`objects/xx/yyyy…`) and packfiles
 * (pack v2 with its idx v2, gitformat-pack), with the deltas git's own packs hold (OFS_DELTA and
 * REF_DELTA) resolved. Web-standard only (the codec supplies inflate), so either runtime bundles it.
 *
 * Finding an object costs the same however many packs a repository has: the packs the multi-pack-index
 * lists (lib/git/midx.ts; the store keeps one for every pack of SMALL_PACK_BYTES or more) are searched
 * through it, once, and only the few small packs it does not list through their own .idx. No index is held
 * whole: per repository, what is kept is the list of its packs and the fan-out of each index searched
 * (1 KiB each); ids and offsets are read a page at a time through a cache (lib/git/id-table.ts). Both are
 * bounded by `cacheBytes`, whatever the repositories' sizes.
 *
 * A record is read by its byte range alone (StoreFs.readRange), never the whole pack. Where it ends is not
 * in any index: with the codec's own inflate, which stops at the end of the record's zlib stream, a window
 * as long as the record can be at most is read (its header gives the inflated size; deflate adds at most
 * about an eighth to it); the web-standard inflate refuses bytes after the stream, so there the record's
 * exact end is taken from its pack's offsets in order (4 bytes an object, read once per pack and kept
 * within the budget). readMany reads many objects in pack order, the records of a pack a run at a time.
 * Inflated objects are not kept here (the store caches what it decodes).
 */
import type { StoreFs } from './fs.ts';
import { CorruptObjectError, ObjectMissingError } from '../core/errors.ts';
import { hexToBytes, inflate, toHex, webCodec, type ObjectCodec } from './objects.ts';
import { LruCache } from './lru.ts';
import { idxTable, openIdx, readAt, StaleIndex, TablePages, type IdTable, type PageMemo } from './id-table.ts';
import { MIDX_FILE, openMidx } from './midx.ts';
import { TimeSlice } from '../util/time-slice.ts';

export type RawType = 'blob' | 'tree' | 'commit' | 'tag';

export interface RawObject {
  type: RawType;
  /** What git hashes after the `<type> <size>\0` header. */
  content: Uint8Array;
}

/** An object as readRecords gives it: its pack record's bytes as stored (a whole object), or the object itself. */
export type PackedObject = { record: Uint8Array } | RawObject;


/** The largest object read (bytes, inflated): pages and their trees are far below it; a bomb is not. */
export const MAX_OBJECT_BYTES = 256 * 1024 * 1024;
/** The longest delta chain followed (git's pack.depth is 50 by default; it accepts up to 4095). */
export const MAX_DELTA_DEPTH = 4095;

const TYPES: Record<number, RawType> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };
/** Listings made at most for one read while merges delete what was listed. */
const LIST_ATTEMPTS = 8;
const OFS_DELTA = 6;
const REF_DELTA = 7;
/** Bytes read first for one record: its header, and the whole of a small one. */
const FIRST_WINDOW = 4096;
/**
 * The longest window read for one record (a page of the largest push body fits); a record that may be
 * longer is read to its exact end, so that a damaged header claiming a huge size costs no more than that.
 */
const MAX_WINDOW = 16 * 1024 * 1024;
/** readMany: bytes of a pack read at once at most, … */
const RUN_BYTES = 1024 * 1024;
/** … the widest gap between two wanted records within one read, … */
const RUN_GAP = 64 * 1024;
/** … and what is read past the last record's start (a record longer than this is read on its own). */
const RUN_TAIL = 16 * 1024;
const decoder = new TextDecoder();

/**
 * Bytes a zlib stream of `size` inflated bytes takes at most: zlib's deflateBound for any settings (stored
 * blocks are the worst case), with room for the zlib header and checksum.
 */
export const deflatedBound = (size: number) => size + Math.ceil(size / 8) + Math.ceil(size / 64) + 64;

/** One pack of a repository. */
interface Pack {
  name: string;
  /** Path of the .pack file. */
  path: string;
  /** Bytes of the .pack file (its records end 20 bytes before). */
  bytes: number;
  /** Its place in the listing (orders readMany's reads). */
  ordinal: number;
}

/** What is known of a repository's packs. */
interface RepoPacks {
  /** The packs the multi-pack-index does not list, each with its own .idx (newest written first). */
  singles: Array<{ pack: Pack; table: IdTable }>;
  /** The multi-pack-index and its packs by number, or null (none, or not usable: it names a missing pack). */
  midx: { table: IdTable; packs: Pack[] } | null;
  /** How many packs in all (ordinals are below it). */
  count: number;
}

/** Where an object's record is. */
interface Location {
  pack: Pack;
  offset: number;
}

/** What a repository's pack list holds in memory, estimated: the packs, each fan-out held. */
const repoBytes = (r: RepoPacks) => 128 + (r.singles.length + (r.midx ? 1 : 0)) * 1280 + r.count * 200;

function oidBytes(oid: string): Uint8Array {
  if (!/^[0-9a-f]{40}$/.test(oid)) throw new ObjectMissingError(oid);
  return hexToBytes(oid);
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

/** A record's header: its type, inflated size, delta base, and where its zlib stream starts. */
interface RecordHead {
  type: number;
  size: number;
  /** OFS_DELTA: the base's offset in the same pack; REF_DELTA: the base's id. */
  base?: number | string;
  /** Bytes of the header (the stream starts there). */
  at: number;
}

/** The header of the record at `offset` whose first bytes are `bytes`. */
function recordHead(bytes: Uint8Array, offset: number, oid: string): RecordHead {
  let at = 0;
  if (bytes.length === 0) throw new CorruptObjectError(oid, 'record header');
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
  return { type, size, base, at };
}

/**
 * `data` in a buffer of its own size: an inflate may hand back a view into a larger chunk (zlib's are 16 KiB
 * unless told otherwise), which would otherwise stay alive with every small object kept (a pull holds every
 * page; the store's caches count only the object's own bytes).
 */
const ownBuffer = (data: Uint8Array) => (data.buffer.byteLength > data.byteLength + 1024 ? data.slice() : data);

export interface ObjectReaderOptions {
  fs: StoreFs;
  /**
   * The codec's inflate (Node: zlib's, which stops at the end of a stream, so records are read in windows);
   * the web-standard DecompressionStream when absent (records then read to their exact ends).
   */
  codec?: ObjectCodec;
  /**
   * Bytes kept of what the packs' indexes say, over all repositories: index pages 5/8, pack lists and
   * fan-outs 1/4 (without its own, every read of a repository lists its packs again), records' ends
   * (web-standard inflate only) 1/8.
   */
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
  /** Whether the codec's inflate ignores bytes after the stream (records read in windows). */
  private readonly windows: boolean;
  /** Each repository's packs as last listed. */
  private readonly repos: LruCache<RepoPacks>;
  private readonly pages: TablePages;
  /** Each pack's record offsets in order (exact ends), by pack name. */
  private readonly ends: LruCache<Float64Array>;

  constructor(opts: ObjectReaderOptions) {
    this.fs = opts.fs;
    this.codec = opts.codec ?? opts.fs.codec ?? webCodec;
    this.windows = this.codec.inflate !== undefined;
    const bytes = Math.max(0, opts.cacheBytes);
    this.repos = new LruCache(Math.floor(bytes / 4), repoBytes);
    this.ends = new LruCache(Math.floor(bytes / 8), (e) => e.byteLength + 96);
    this.pages = new TablePages(this.fs, bytes - Math.floor(bytes / 4) - Math.floor(bytes / 8));
  }

  /** Bytes held now: pack lists, index pages, records' ends. */
  get cachedBytes(): number {
    return this.repos.bytes + this.pages.bytes + this.ends.bytes;
  }

  /**
   * The object `oid` of the repository at `gitdir`. Throws ObjectMissingError when no pack or loose file
   * holds it, CorruptObjectError when the one that does cannot be decoded.
   */
  read(gitdir: string, oid: string): Promise<RawObject> {
    return this.find(gitdir, oid, 0);
  }

  /**
   * The objects `oids` (in that order; an id may repeat), read as `read` reads one but in pack order: their
   * places are looked up in id order (each index page read once), then each pack's records are read a run
   * at a time (RUN_BYTES at most, no gap over RUN_GAP); a delta or a record longer than the run from its
   * place. What no pack holds (loose objects, packs merged meanwhile) is read one by one. Throws as `read`
   * does.
   */
  async readMany(gitdir: string, oids: readonly string[]): Promise<RawObject[]> {
    const found = new Map<string, RawObject>();
    let rest = [...new Set(oids)].sort();
    for (const oid of rest) if (!/^[0-9a-f]{40}$/.test(oid)) throw new ObjectMissingError(oid);
    if (this.fs.packs && rest.length > 0) rest = await this.readPacked(gitdir, rest, found);
    for (const oid of rest) found.set(oid, await this.find(gitdir, oid, 0));
    return oids.map((oid) => found.get(oid)!);
  }

  /**
   * The objects `oids` as readMany reads them, but each stored whole in a pack as its record's bytes as they
   * are (views of the bytes read: copy what is kept) (the type and size header, then the deflated data: what a pack sent to git holds, with no
   * inflating and deflating again); a delta, a loose object or a record longer than its run's read as the
   * object itself.
   */
  async readRecords(gitdir: string, oids: readonly string[]): Promise<PackedObject[]> {
    const found = new Map<string, PackedObject>();
    let rest = [...new Set(oids)].sort();
    for (const oid of rest) if (!/^[0-9a-f]{40}$/.test(oid)) throw new ObjectMissingError(oid);
    if (this.fs.packs && rest.length > 0) rest = await this.readPacked(gitdir, rest, found, true);
    for (const oid of rest) found.set(oid, await this.find(gitdir, oid, 0));
    return oids.map((oid) => found.get(oid)!);
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
    if (!repo || repo.singles.some((s) => s.pack.name === name) || repo.midx?.packs.some((p) => p.name === name)) return;
    const path = `${gitdir}/objects/pack/pack-${name}`;
    const table = idxTable(`pack:${name}`, `${path}.idx`, idx);
    if (!table) return;
    const pack: Pack = { name, path: `${path}.pack`, bytes: packBytes, ordinal: repo.count };
    // Newest first: recent objects are read most.
    this.repos.set(gitdir, { ...repo, singles: [{ pack, table }, ...repo.singles], count: repo.count + 1 });
  }

  /** Forgets what is known of the repository's packs (after packs were deleted, or the MIDX rewritten). */
  forget(gitdir: string): void {
    this.repos.delete(gitdir);
  }

  /**
   * The repository's packs as listed now: the multi-pack-index, if it lists only packs that are there, and
   * the head of each pack's .idx it does not list. Listed again while an .idx vanishes before it is read.
   */
  private async list(gitdir: string): Promise<RepoPacks> {
    const dir = `${gitdir}/objects/pack`;
    let repo: RepoPacks = { singles: [], midx: null, count: 0 };
    for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
      const listed = (await this.fs.packs?.list(dir)) ?? [];
      const packs = new Map<string, Pack>(
        listed.map(({ name, bytes }, ordinal) => [name, { name, path: `${dir}/pack-${name}.pack`, bytes, ordinal }]),
      );
      repo = { singles: [], midx: null, count: packs.size };
      const midx = packs.size > 0 ? await openMidx(this.fs, `${dir}/${MIDX_FILE}`) : null;
      if (midx && midx.head.packs.every((name) => packs.has(name))) {
        repo.midx = { table: midx.table, packs: midx.head.packs.map((name) => packs.get(name)!) };
      }
      const listedByMidx = new Set(repo.midx ? midx!.head.packs : []);
      let vanished = false;
      for (const pack of packs.values()) {
        if (listedByMidx.has(pack.name)) continue;
        const table = await openIdx(this.fs, `pack:${pack.name}`, `${dir}/pack-${pack.name}.idx`);
        if (table) repo.singles.push({ pack, table });
        else if (!(await this.fs.exists(`${dir}/pack-${pack.name}.idx`))) vanished = true;
      }
      if (!vanished) break;
    }
    this.repos.set(gitdir, repo);
    return repo;
  }

  /** Where `oid` is in the repository's packs, or null. */
  private async locate(repo: RepoPacks, oid: Uint8Array, hex: string): Promise<Location | null> {
    for (const s of repo.singles) {
      const row = await this.pages.find(s.table, oid);
      if (row >= 0) return { pack: s.pack, offset: (await this.pages.entry(s.table, row)).offset };
    }
    if (repo.midx) {
      const row = await this.pages.find(repo.midx.table, oid);
      if (row >= 0) {
        const e = await this.pages.entry(repo.midx.table, row);
        const pack = repo.midx.packs[e.pack];
        if (!pack) throw new CorruptObjectError(hex, `the multi-pack-index names pack number ${e.pack} of ${repo.midx.packs.length}`);
        return { pack, offset: e.offset };
      }
    }
    return null;
  }

  /** locate from cached pages alone: undefined when it would have to read one. */
  private locateNow(repo: RepoPacks, oid: Uint8Array, memo: PageMemo): Location | null | undefined {
    for (const s of repo.singles) {
      const row = this.pages.findNow(s.table, oid, memo);
      if (row === undefined) return undefined;
      if (row >= 0) {
        const e = this.pages.entryNow(s.table, row, memo);
        return e && { pack: s.pack, offset: e.offset };
      }
    }
    if (repo.midx) {
      const row = this.pages.findNow(repo.midx.table, oid, memo);
      if (row === undefined) return undefined;
      if (row >= 0) {
        const e = this.pages.entryNow(repo.midx.table, row, memo);
        const pack = e && repo.midx.packs[e.pack];
        return pack ? { pack, offset: e.offset } : undefined;
      }
    }
    return null;
  }

  /** The object from `repo`'s packs, null when none holds it; lists them again while one it used went away. */
  private async fromPacks(gitdir: string, repo: RepoPacks, oid: Uint8Array, hex: string, depth: number): Promise<RawObject | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const at = await this.locate(repo, oid, hex);
        return at && (await this.fromPack(gitdir, at.pack, at.offset, hex, depth));
      } catch (e) {
        if (!(e instanceof StaleIndex)) throw e;
        // Listed again and again, an index still reads short: it is damaged, not replaced.
        if (attempt + 1 >= LIST_ATTEMPTS) throw new CorruptObjectError(hex, e.message);
        repo = await this.list(gitdir);
      }
    }
  }

  /**
   * readMany's pack-order part: the places of `oids` (sorted), then each pack's records in offset order, a
   * run of them per read. Fills `found`; returns the ids left for one-by-one reads.
   */
  private async readPacked(gitdir: string, oids: string[], found: Map<string, PackedObject>, records = false): Promise<string[]> {
    let repo = this.repos.get(gitdir) ?? (await this.list(gitdir));
    const left: string[] = [];
    let at: Array<Location & { oid: string }> = [];
    for (let attempt = 0; ; attempt++) {
      try {
        at = [];
        left.length = 0;
        const bin = new Uint8Array(20);
        const memo: PageMemo = new Map();
        const slice = new TimeSlice();
        for (const oid of oids) {
          if (slice.due) await slice.next();
          hexToBytes(oid, bin);
          // In id order, the pages one lookup reads serve the next ones: most need no read at all.
          let loc = this.locateNow(repo, bin, memo);
          if (loc === undefined) loc = await this.locate(repo, bin, oid);
          if (loc) at.push({ pack: loc.pack, offset: loc.offset, oid });
          else left.push(oid);
        }
        break;
      } catch (e) {
        if (!(e instanceof StaleIndex)) throw e;
        // Read one by one, each then says what is wrong.
        if (attempt + 1 >= LIST_ATTEMPTS) return oids;
        repo = await this.list(gitdir);
      }
    }
    at.sort((a, b) => a.pack.ordinal - b.pack.ordinal || a.offset - b.offset);
    const slice = new TimeSlice();
    for (let i = 0; i < at.length; ) {
      const { pack, offset: start } = at[i]!;
      let j = i + 1;
      while (j < at.length && at[j]!.pack === pack && at[j]!.offset - at[j - 1]!.offset <= RUN_GAP && at[j]!.offset - start < RUN_BYTES) j++;
      const last = pack.bytes - 20;
      const run = at.slice(i, j);
      i = j;
      const end = Math.min(last, run[run.length - 1]!.offset + RUN_TAIL);
      const bytes = start >= 12 && end > start ? await readAt(this.fs, pack.path, start, end - start) : null;
      for (const r of run) {
        // Inflating thousands of objects is work on this thread: other requests get turns between slices.
        if (slice.due) await slice.next();
        // What the run cannot give (a delta, a long record) is read from its place, already known.
        const got =
          (bytes && (await (records ? this.recordFromRun(pack, bytes, start, r.offset, r.oid) : this.fromRun(pack, bytes, start, r.offset, r.oid)))) ||
          (await this.fromKnown(gitdir, r));
        if (got) found.set(r.oid, got);
        else left.push(r.oid);
      }
    }
    return left;
  }

  /**
   * The record of a whole object starting at `offset`, copied from `bytes` (the pack's bytes from `start`) to
   * its exact end, or null: a delta, a record running past them, a place the pack and its index disagree on.
   */
  private async recordFromRun(p: Pack, bytes: Uint8Array, start: number, offset: number, oid: string): Promise<{ record: Uint8Array } | null> {
    try {
      const rel = offset - start;
      if (offset < 12 || rel >= bytes.byteLength) return null;
      const head = recordHead(bytes.subarray(rel, rel + 32), offset, oid);
      if (!TYPES[head.type] || head.type === 4) return null;
      const end = await this.recordEnd(p, offset);
      if (end <= offset + head.at || end - start > bytes.byteLength) return null;
      // A view of the run's bytes: the caller copies it on (a pack sent to git), and holds the run no longer.
      return { record: bytes.subarray(rel, end - start) };
    } catch {
      return null;
    }
  }

  /** The object at `at` as `read` gives it, or null when its pack is gone (then it is looked up again). */
  private async fromKnown(gitdir: string, at: Location & { oid: string }): Promise<RawObject | null> {
    try {
      return await this.fromPack(gitdir, at.pack, at.offset, at.oid, 0);
    } catch (e) {
      if (e instanceof StaleIndex) return null;
      throw e;
    }
  }

  /**
   * The whole object whose record starts at `offset`, from `bytes` (the pack's bytes from `start`), or null
   * when it cannot be had from them alone: a delta, a record running past them, anything that does not
   * decode (read one by one, which says why).
   */
  private async fromRun(p: Pack, bytes: Uint8Array, start: number, offset: number, oid: string): Promise<RawObject | null> {
    try {
      const rel = offset - start;
      if (offset < 12 || rel >= bytes.byteLength) return null;
      const head = recordHead(bytes.subarray(rel, rel + 32), offset, oid);
      const type = TYPES[head.type];
      if (!type) return null;
      const end = this.windows ? Math.min(offset + head.at + deflatedBound(head.size), p.bytes - 20) : await this.recordEnd(p, offset);
      if (end - start > bytes.byteLength) return null;
      const data = await inflate(this.codec, bytes.subarray(rel + head.at, end - start), head.size);
      return data.byteLength === head.size ? { type, content: ownBuffer(data) } : null;
    } catch {
      return null;
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

  /** The pack's bytes [from, to); StaleIndex when the pack is gone. */
  private async packRange(p: Pack, from: number, to: number): Promise<Uint8Array> {
    const bytes = await readAt(this.fs, p.path, from, to - from);
    if (!bytes) throw new StaleIndex(`${p.path} is gone`);
    return bytes;
  }

  /**
   * One record of a pack: its header decoded and its data inflated. In windows (see the file's head): the
   * first FIRST_WINDOW bytes, then up to the longest the record can be; a record that does not decode from
   * its window is read again to its exact end (a stream longer than deflatedBound, or damage: then it is
   * corrupt either way).
   */
  private async record(p: Pack, offset: number, oid: string): Promise<Step> {
    const last = p.bytes - 20;
    if (offset < 12 || offset >= last) throw new CorruptObjectError(oid, 'pack and idx disagree');
    if (this.windows) {
      let bytes = await this.packRange(p, offset, Math.min(last, offset + FIRST_WINDOW));
      const head = recordHead(bytes.subarray(0, 32), offset, oid);
      const end = Math.min(last, offset + head.at + deflatedBound(head.size));
      if (end - offset <= MAX_WINDOW) {
        if (end - offset > bytes.byteLength) bytes = await this.packRange(p, offset, end);
        try {
          const data = await inflate(this.codec, bytes.subarray(head.at, end - offset), head.size);
          if (data.byteLength === head.size) return { type: head.type, data: ownBuffer(data), base: head.base };
        } catch {
          // Read again to its exact end below.
        }
      }
    }
    const end = await this.recordEnd(p, offset);
    if (end <= offset || end > last) throw new CorruptObjectError(oid, 'pack and idx disagree');
    const bytes = await this.packRange(p, offset, end);
    if (bytes.byteLength !== end - offset) throw new CorruptObjectError(oid, 'pack truncated');
    const head = recordHead(bytes, offset, oid);
    const data = await this.inflate(oid, bytes.subarray(head.at), head.size);
    if (data.byteLength !== head.size) throw new CorruptObjectError(oid, `${data.byteLength} bytes inflated, ${head.size} declared`);
    return { type: head.type, data: ownBuffer(data), base: head.base };
  }

  /** Where the record at `offset` of `p` ends: the next record's offset, or the pack's checksum. */
  private async recordEnd(p: Pack, offset: number): Promise<number> {
    let ends = this.ends.get(p.name);
    if (!ends) {
      const path = p.path.replace(/\.pack$/, '.idx');
      const t = await openIdx(this.fs, `pack:${p.name}`, path);
      if (!t) throw new StaleIndex(`${path} is gone`);
      const raw = await readAt(this.fs, path, t.offsets, t.n * 4);
      if (!raw || raw.byteLength !== t.n * 4) throw new StaleIndex(`${path} is gone`);
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      ends = new Float64Array(t.n);
      for (let i = 0; i < t.n; i++) {
        const off = view.getUint32(i * 4);
        ends[i] = off & 0x80000000 ? (await this.pages.entry(t, i)).offset : off;
      }
      ends.sort();
      this.ends.set(p.name, ends);
    }
    let lo = 0;
    let hi = ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ends[mid]! <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo < ends.length ? ends[lo]! : p.bytes - 20;
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
    return { type: m[1] as RawType, content: ownBuffer(content) };
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

/**
 * A name of ASCII letters, digits, `-`, `_` and `.`, not starting with `.` or `g`/`G`: none of these is one
 * of unsafeName's disguises (each starts with `.` or `git~`, or holds a separator or a non-ASCII character),
 * and its bytes are its characters. Most names of a tree are such, and reading them so skips the decoder and
 * unsafeName's regular expressions (a clone parses every tree of the repository).
 */
function plainName(content: Uint8Array, start: number, end: number): string | null {
  const first = content[start];
  if (end - start > 64 || first === 0x2e || first === 0x67 || first === 0x47) return null;
  for (let i = start; i < end; i++) {
    const b = content[i]!;
    const ok = (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || b === 0x2d || b === 0x5f || b === 0x2e;
    if (!ok) return null;
  }
  return String.fromCharCode.apply(null, content.subarray(start, end) as unknown as number[]);
}

/** A tree entry's mode: the common ones without the decoder. */
function modeOf(content: Uint8Array, at: number, space: number): string {
  if (space - at === 6 && content[at] === 0x31 && content[at + 1] === 0x30 && content[at + 2] === 0x30 && content[at + 3] === 0x36 && content[at + 4] === 0x34 && content[at + 5] === 0x34) return '100644';
  if (space - at === 5 && content[at] === 0x34 && content[at + 1] === 0x30 && content[at + 2] === 0x30 && content[at + 3] === 0x30 && content[at + 4] === 0x30) return '040000';
  const mode = decoder.decode(content.subarray(at, space));
  return mode === '40000' ? '040000' : mode;
}

/** A tree object's entries, in stored order. Throws RangeError on a malformed or unsafe entry. */
export function parseTree(content: Uint8Array): TreeRow[] {
  const out: TreeRow[] = [];
  let at = 0;
  while (at < content.length) {
    const space = content.indexOf(0x20, at);
    const nul = space < 0 ? -1 : content.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > content.length) throw new RangeError(`tree entry at byte ${at} is malformed`);
    const mode = modeOf(content, at, space);
    const type = MODE_TYPES[mode];
    if (!type) throw new RangeError(`tree entry mode ${mode}`);
    let path = nul > space + 1 ? plainName(content, space + 1, nul) : null;
    if (path === null) {
      path = decoder.decode(content.subarray(space + 1, nul));
      if (unsafeName(path)) throw new RangeError(`unsafe tree entry name ${JSON.stringify(path)}`);
    }
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
