/**
 * Packfiles (gitformat-pack: pack v2 with its idx v2), written by hand: a group of pushes stores its
 * objects as one pack + idx — two files made durable with one round of flushes — instead of one loose file
 * per object. Each object is stored whole (deflated, no deltas). Web-standard only (the codec supplies
 * SHA-1 and deflate), so either runtime could bundle it.
 *
 * pack: `PACK`, version 2, object count, the records (lib/git/objects.ts packRecord), the SHA-1 of all
 * of that. idx: magic `\377tOc`, version 2, a 256-entry fan-out table (how many ids start with a byte
 * ≤ i), the sorted 20-byte ids, one CRC-32 per record, one 32-bit offset per record, the pack's checksum,
 * the SHA-1 of everything before it. The pack is named after its checksum (`pack-<sha>.pack`), as git does.
 */
import { hexToBytes, sha1, toHex, type ObjectCodec } from './objects.ts';

/** One object's record in a pack (header and deflated content), with its id; `crc` computed when absent. */
export interface PackEntry {
  oid: string;
  record: Uint8Array;
  crc?: number;
}

export interface BuiltPack {
  /** The pack's checksum (hex): its files are `pack-<name>.pack` and `pack-<name>.idx`. */
  name: string;
  pack: Uint8Array;
  idx: Uint8Array;
}

/**
 * What one pack may hold: offsets in an idx v2 are 32-bit below 2 GiB (larger ones need its 64-bit
 * table, which this writer does not make), so packs are kept under 1 GiB each.
 */
export const MAX_PACK_BYTES = 1024 * 1024 * 1024;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (zlib's, as the idx records it) of `data`. */
export function crc32(data: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const u32 = (view: DataView, at: number, v: number) => view.setUint32(at, v >>> 0, false);

/**
 * Splits `entries` into runs that each fit one pack (MAX_PACK_BYTES, or `max`); an entry never splits.
 * Duplicate ids are kept once.
 */
export function splitEntries(entries: PackEntry[], max = MAX_PACK_BYTES): PackEntry[][] {
  const out: PackEntry[][] = [];
  const seen = new Set<string>();
  let cur: PackEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (seen.has(e.oid)) continue;
    seen.add(e.oid);
    if (e.record.byteLength + 32 > max) throw new RangeError(`object ${e.oid} too large for a pack (${e.record.byteLength} bytes)`);
    if (cur.length > 0 && bytes + e.record.byteLength > max) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += e.record.byteLength;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** One pack and its idx holding `entries` (distinct ids, at least one, under MAX_PACK_BYTES together). */
export async function buildPack(codec: ObjectCodec, entries: PackEntry[]): Promise<BuiltPack> {
  if (entries.length === 0) throw new RangeError('a pack holds at least one object');
  let size = 12;
  for (const e of entries) size += e.record.byteLength;
  if (size + 20 >= 2 ** 31) throw new RangeError(`pack too large for 32-bit offsets (${size} bytes)`);
  const pack = new Uint8Array(size + 20);
  const view = new DataView(pack.buffer, pack.byteOffset, pack.byteLength);
  pack.set([0x50, 0x41, 0x43, 0x4b], 0); // PACK
  u32(view, 4, 2);
  u32(view, 8, entries.length);
  const rows: Array<{ oid: Uint8Array; hex: string; offset: number; crc: number }> = [];
  let at = 12;
  for (const e of entries) {
    pack.set(e.record, at);
    rows.push({ oid: hexToBytes(e.oid), hex: e.oid, offset: at, crc: e.crc ?? crc32(e.record) });
    at += e.record.byteLength;
  }
  const packSum = await sha1(codec, pack.subarray(0, size));
  pack.set(packSum, size);
  rows.sort((a, b) => (a.hex < b.hex ? -1 : a.hex > b.hex ? 1 : 0));
  for (let i = 1; i < rows.length; i++) {
    if (rows[i]!.hex === rows[i - 1]!.hex) throw new RangeError(`object ${rows[i]!.hex} twice in one pack`);
  }
  const n = rows.length;
  const idxBody = 8 + 256 * 4 + n * 20 + n * 4 + n * 4 + 20;
  const idx = new Uint8Array(idxBody + 20);
  const iv = new DataView(idx.buffer, idx.byteOffset, idx.byteLength);
  idx.set([0xff, 0x74, 0x4f, 0x63], 0);
  u32(iv, 4, 2);
  for (let b = 0, j = 0; b < 256; b++) {
    while (j < n && rows[j]!.oid[0]! <= b) j++;
    u32(iv, 8 + b * 4, j);
  }
  const oids = 8 + 256 * 4;
  const crcs = oids + n * 20;
  const offs = crcs + n * 4;
  rows.forEach((r, i) => {
    idx.set(r.oid, oids + i * 20);
    u32(iv, crcs + i * 4, r.crc);
    u32(iv, offs + i * 4, r.offset);
  });
  idx.set(packSum, offs + n * 4);
  idx.set(await sha1(codec, idx.subarray(0, idxBody)), idxBody);
  return { name: toHex(packSum), pack, idx };
}

/** Every pack (under MAX_PACK_BYTES each) needed to hold `entries`. */
export async function buildPacks(codec: ObjectCodec, entries: PackEntry[]): Promise<BuiltPack[]> {
  const out: BuiltPack[] = [];
  for (const run of splitEntries(entries)) out.push(await buildPack(codec, run));
  return out;
}

/** Bytes of an idx v2 before its sorted ids: magic, version, the 256-entry fan-out table. */
export const IDX_HEAD = 8 + 256 * 4;

/** An idx v2 file checked for shape: its bytes, a view of them, and how many objects it lists. */
export interface IdxView {
  idx: Uint8Array;
  view: DataView;
  n: number;
}

/** `idx` as an idx v2 (its magic, version and a length that holds its `n` entries), or null. */
export function viewIdx(idx: Uint8Array): IdxView | null {
  if (idx.byteLength < IDX_HEAD + 40) return null;
  const view = new DataView(idx.buffer, idx.byteOffset, idx.byteLength);
  if (view.getUint32(0) !== 0xff744f63 || view.getUint32(4) !== 2) return null;
  const n = view.getUint32(8 + 255 * 4);
  if (idx.byteLength < IDX_HEAD + n * 28 + 40) return null;
  return { idx, view, n };
}

/**
 * The offset in its pack of the idx's `i`-th object. The high bit of its 32-bit entry names an entry of
 * the 64-bit table (packs over 2 GiB), read as a JS number (exact below 2^53).
 */
export function idxOffset(x: IdxView, i: number): number {
  const off = x.view.getUint32(IDX_HEAD + x.n * 24 + i * 4);
  if (!(off & 0x80000000)) return off;
  const large = IDX_HEAD + x.n * 28 + (off & 0x7fffffff) * 8;
  return x.view.getUint32(large) * 2 ** 32 + x.view.getUint32(large + 4);
}

/** What an idx v2 lists: each object's id, CRC-32 and offset in its pack (ids in sorted order). */
export function readIdx(idx: Uint8Array): Array<{ oid: string; crc: number; offset: number }> {
  const x = viewIdx(idx);
  if (!x) throw new RangeError('not an idx v2 file, or truncated');
  const out: Array<{ oid: string; crc: number; offset: number }> = [];
  for (let i = 0; i < x.n; i++) {
    const at = IDX_HEAD + i * 20;
    out.push({ oid: toHex(idx.subarray(at, at + 20)), crc: x.view.getUint32(IDX_HEAD + x.n * 20 + i * 4), offset: idxOffset(x, i) });
  }
  return out;
}

/**
 * The records of `pack` (as listed by its `idx`) that can be copied into another pack as they are: every
 * whole object (commit, tree, blob, tag). Deltas (which point at other records) are listed in `deltas`,
 * for the caller to re-encode from the object's content.
 */
export function copyableRecords(pack: Uint8Array, idx: Uint8Array): { entries: PackEntry[]; deltas: string[] } {
  const rows = readIdx(idx).sort((a, b) => a.offset - b.offset);
  const end = pack.byteLength - 20;
  const entries: PackEntry[] = [];
  const deltas: string[] = [];
  rows.forEach((r, i) => {
    const next = i + 1 < rows.length ? rows[i + 1]!.offset : end;
    if (r.offset < 12 || next > end || next <= r.offset) throw new RangeError('pack and idx disagree');
    const type = (pack[r.offset]! >> 4) & 7;
    if (type >= 1 && type <= 4) entries.push({ oid: r.oid, record: pack.subarray(r.offset, next), crc: r.crc });
    else deltas.push(r.oid);
  });
  return { entries, deltas };
}
