/**
 * Finding an object in a sorted id table — a pack's idx v2 or the multi-pack-index (lib/git/midx.ts) —
 * without holding the table: what stays in memory is its fan-out (1 KiB), and its ids and offsets are read
 * a page at a time (IDS_PER_PAGE ids, OFFSET_PAGE_BYTES of offsets) through a cache bounded in bytes and
 * shared by every table. A lookup reads the fan-out's range for the id's first byte by binary search: a
 * page or two of ids and one of offsets, however large the table; lookups in id order read each page once.
 *
 * An .idx never changes under its name (the name is its pack's checksum; a deleted pack's name comes back
 * only with the same bytes). The multi-pack-index is replaced whole under one name: its pages are cached
 * under its checksum, and each page read from the file is checked against that checksum (the file's last
 * 20 bytes, read after the page), so a page of a newer file is never taken for one of the file the lookup
 * started with. Anything missing or short throws StaleIndex: the caller lists the packs again.
 */
import type { StoreFs } from './fs.ts';
import { LruCache } from './lru.ts';
import { IDX_HEAD } from './pack.ts';

/** Ids per page of a table's id list (5 KiB). */
export const IDS_PER_PAGE = 256;
/** Bytes per page of a table's offsets. */
export const OFFSET_PAGE_BYTES = 4096;

/** A file the reader was using is gone or has changed: list the packs again. */
export class StaleIndex extends Error {}

/** `length` bytes of the file from `position` (fewer at its end), or null when it does not exist. */
export async function readAt(fs: StoreFs, path: string, position: number, length: number): Promise<Uint8Array | null> {
  if (fs.readRange) return fs.readRange(path, position, length);
  const all = await fs.readFile(path);
  return all && all.subarray(position, position + length);
}

/** One sorted id table as its head describes it. */
export interface IdTable {
  /** Names the table's content in the page cache. */
  key: string;
  path: string;
  /** How many ids it lists. */
  n: number;
  fanout: Uint32Array;
  /** Byte offsets of its sorted ids and of its offsets. */
  ids: number;
  offsets: number;
  /** Bytes per offset entry: 4 (idx v2: the offset) or 8 (MIDX: the pack's number, then the offset). */
  stride: 4 | 8;
  /**
   * Where its 64-bit offsets start, for an entry with the high bit set; -1 where the high bit is part of
   * the offset (a MIDX without a LOFF chunk).
   */
  large: number;
  /** MIDX: its checksum and where it is, which every page read from the file is checked against. */
  sum?: { at: number; bytes: Uint8Array };
}

/**
 * The page of ids and the page of offsets of each table a run of lookups in id order last used: the next
 * lookups mostly need the same ones, and find them here without going through the cache. Lives as long as
 * the run (ObjectReader.readMany).
 */
export type PageMemo = Map<IdTable, { ids?: { k: number; page: Uint8Array }; offsets?: { k: number; page: Uint8Array } }>;

/** Where a table puts an object: the pack's number (0 for an idx) and the record's offset in it. */
export interface TableEntry {
  pack: number;
  offset: number;
}

export const equalBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);

function fanoutOf(bytes: Uint8Array, at: number): Uint32Array | null {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fanout = new Uint32Array(256);
  for (let b = 0; b < 256; b++) {
    fanout[b] = v.getUint32(at + b * 4);
    if (b > 0 && fanout[b]! < fanout[b - 1]!) return null;
  }
  return fanout;
}

/** The table an idx v2 head (its first IDX_HEAD bytes) describes, or null when it is not one. */
function headTable(key: string, path: string, head: Uint8Array): IdTable | null {
  if (head.byteLength < IDX_HEAD) return null;
  const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (v.getUint32(0) !== 0xff744f63 || v.getUint32(4) !== 2) return null;
  const fanout = fanoutOf(head, 8);
  if (!fanout) return null;
  const n = fanout[255]!;
  return { key, path, n, fanout, ids: IDX_HEAD, offsets: IDX_HEAD + n * 24, stride: 4, large: IDX_HEAD + n * 28 };
}

/** The table of an idx v2 already in memory (a pack just written), or null when it is not one. */
export function idxTable(key: string, path: string, idx: Uint8Array): IdTable | null {
  const t = headTable(key, path, idx);
  return t && idx.byteLength >= IDX_HEAD + t.n * 28 + 40 ? t : null;
}

/**
 * The table of the idx v2 at `path` from its head (two reads: the fan-out, and the trailer where the ids'
 * count puts it, which shows the file is that long); null when it is missing or not an idx v2.
 */
export async function openIdx(fs: StoreFs, key: string, path: string): Promise<IdTable | null> {
  const head = await readAt(fs, path, 0, IDX_HEAD);
  const t = head && headTable(key, path, head);
  if (!t) return null;
  const tail = await readAt(fs, path, IDX_HEAD + t.n * 28, 40);
  return tail && tail.byteLength === 40 ? t : null;
}

/** The page cache and lookups over it. */
export class TablePages {
  private readonly pages: LruCache<Uint8Array>;

  constructor(
    private readonly fs: StoreFs,
    capacity: number,
  ) {
    this.pages = new LruCache(Math.max(0, capacity), (p) => p.byteLength + 96);
  }

  /** Bytes of pages held now. */
  get bytes(): number {
    return this.pages.bytes;
  }

  /**
   * The row of `oid` (20 bytes) in `t` (-1: not there) by binary search over the fan-out's range, with
   * `page(k)` giving the id pages; when a page is missing, -2 - its number.
   */
  private search(t: IdTable, oid: Uint8Array, page: (k: number) => Uint8Array | undefined): number {
    const first = oid[0]!;
    let lo = first === 0 ? 0 : t.fanout[first - 1]!;
    let hi = Math.min(t.fanout[first]!, t.n);
    // The page of the last probe: most probes of one lookup fall in the same page or two.
    let k = -1;
    let ids: Uint8Array | undefined;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const want = Math.floor(mid / IDS_PER_PAGE);
      if (want !== k || !ids) {
        k = want;
        ids = page(k);
        if (!ids) return -2 - k;
      }
      const at = (mid - k * IDS_PER_PAGE) * 20;
      let cmp = 0;
      for (let j = 0; j < 20 && cmp === 0; j++) cmp = ids[at + j]! - oid[j]!;
      if (cmp === 0) return mid;
      if (cmp < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  /** The cached page `k` of `t` (ids or offsets), looked for in `memo` first and kept there. */
  private cached(t: IdTable, kind: 'ids' | 'offsets', k: number, memo?: PageMemo): Uint8Array | undefined {
    const mine = memo?.get(t);
    const last = mine?.[kind];
    if (last?.k === k) return last.page;
    const page = this.pages.get(`${t.key}/${kind === 'ids' ? 'i' : 'o'}${k}`);
    if (page && memo) memo.set(t, { ...mine, [kind]: { k, page } });
    return page;
  }

  /** The row of `oid` in `t` (-1: not there) from cached pages alone; undefined when one is not cached. */
  findNow(t: IdTable, oid: Uint8Array, memo?: PageMemo): number | undefined {
    const row = this.search(t, oid, (k) => this.cached(t, 'ids', k, memo));
    return row < -1 ? undefined : row;
  }

  /** The row of `oid` (20 bytes) in `t`, or -1; reads the pages it needs that are not cached. */
  async find(t: IdTable, oid: Uint8Array): Promise<number> {
    // Pages read for this lookup are kept here too: it progresses whatever the cache keeps.
    const read = new Map<number, Uint8Array>();
    for (;;) {
      const row = this.search(t, oid, (k) => read.get(k) ?? this.pages.get(`${t.key}/i${k}`));
      if (row >= -1) return row;
      read.set(-2 - row, await this.idPage(t, -2 - row));
    }
  }

  /** Where row `row` of `t` puts its object, from cached pages alone; undefined when not cached. */
  entryNow(t: IdTable, row: number, memo?: PageMemo): TableEntry | undefined {
    const k = Math.floor(row / (OFFSET_PAGE_BYTES / t.stride));
    const page = this.cached(t, 'offsets', k, memo);
    if (!page) return undefined;
    const e = this.decode(t, page, k, row);
    return e.large < 0 ? e : undefined;
  }

  /** Where row `row` of `t` puts its object; reads the pages it needs that are not cached. */
  async entry(t: IdTable, row: number): Promise<TableEntry> {
    const k = Math.floor(row / (OFFSET_PAGE_BYTES / t.stride));
    const page = this.pages.get(`${t.key}/o${k}`) ?? (await this.offsetPage(t, k));
    const e = this.decode(t, page, k, row);
    if (e.large < 0) return { pack: e.pack, offset: e.offset };
    const large = await this.load(t, t.large + e.large * 8, 8);
    const v = new DataView(large.buffer, large.byteOffset, 8);
    return { pack: e.pack, offset: v.getUint32(0) * 2 ** 32 + v.getUint32(4) };
  }

  /** Row `row`'s entry in offsets page `k`: its pack and offset, or the row of the 64-bit table (else -1). */
  private decode(t: IdTable, page: Uint8Array, k: number, row: number): TableEntry & { large: number } {
    const v = new DataView(page.buffer, page.byteOffset, page.byteLength);
    const at = (row - k * (OFFSET_PAGE_BYTES / t.stride)) * t.stride;
    const pack = t.stride === 8 ? v.getUint32(at) : 0;
    const off = v.getUint32(at + t.stride - 4);
    // The high bit names a row of the 64-bit table where the table has one (a MIDX without LOFF has none).
    if (!(off & 0x80000000) || t.large < 0) return { pack, offset: off, large: -1 };
    return { pack, offset: -1, large: off & 0x7fffffff };
  }

  private async idPage(t: IdTable, k: number): Promise<Uint8Array> {
    const from = k * IDS_PER_PAGE;
    const page = await this.load(t, t.ids + from * 20, (Math.min(t.n, from + IDS_PER_PAGE) - from) * 20);
    this.pages.set(`${t.key}/i${k}`, page);
    return page;
  }

  private async offsetPage(t: IdTable, k: number): Promise<Uint8Array> {
    const per = OFFSET_PAGE_BYTES / t.stride;
    const from = k * per;
    const page = await this.load(t, t.offsets + from * t.stride, (Math.min(t.n, from + per) - from) * t.stride);
    this.pages.set(`${t.key}/o${k}`, page);
    return page;
  }

  /** `length` bytes of the table's file from `at`, all of them, from the file the table describes. */
  private async load(t: IdTable, at: number, length: number): Promise<Uint8Array> {
    const bytes = await readAt(this.fs, t.path, at, length);
    if (!bytes || bytes.byteLength !== length) throw new StaleIndex(`${t.path} changed`);
    if (t.sum) {
      const sum = await readAt(this.fs, t.path, t.sum.at, 20);
      if (!sum || !equalBytes(sum, t.sum.bytes)) throw new StaleIndex(`${t.path} changed`);
    }
    // A copy: the range may be a view into a larger buffer the cache must not keep alive.
    return bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  }
}
