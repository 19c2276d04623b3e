/**
 * The multi-pack-index (gitformat-pack "multi-pack-index (MIDX) files"), written by hand: one sorted table of
 * the objects of several packs, so that finding an object is one binary search however many packs there are.
 * It lives at `objects/pack/multi-pack-index` beside the packs' own .idx files (which stay), in git's format
 * (version 1, SHA-1), so git reads it too: `git multi-pack-index verify` checks it, and packs it does not list
 * are read through their own .idx, by git as by lib/git/object-reader.ts. Web-standard only (the codec
 * supplies SHA-1).
 *
 * Layout: a 12-byte header (`MIDX`, version 1, hash version 1, the chunk count, 0 base files, the pack
 * count), the chunk table ((chunks + 1) × 12 bytes: a 4-byte id and the chunk's 64-bit offset; id 0 marks
 * where the last chunk ends), the chunks, then the SHA-1 of everything before it. Chunks: PNAM (the packs'
 * .idx names, sorted, NUL-terminated, padded to a multiple of 4 bytes; a pack's number is its place in
 * this list), OIDF (fan-out: 256 counts of the ids whose first byte is ≤ i), OIDL (the sorted ids, 20 bytes
 * each), OOFF (per id: the pack's number and the 32-bit offset of its record there), and LOFF (64-bit
 * offsets) only when some offset passes 4 GiB: the offsets from 2 GiB on are then stored there, as git does.
 */
import { sha1, webCodec, type ObjectCodec } from './objects.ts';
import { IDX_HEAD, idxOffset, viewIdx } from './pack.ts';
import { equalBytes, readAt, type IdTable } from './id-table.ts';
import type { StoreFs } from './fs.ts';

/** The file's name in `objects/pack`. */
export const MIDX_FILE = 'multi-pack-index';

const SIGNATURE = 0x4d494458; // MIDX
const PNAM = 0x504e414d;
const OIDF = 0x4f494446;
const OIDL = 0x4f49444c;
const OOFF = 0x4f4f4646;
const LOFF = 0x4c4f4646;
/** Bit of an OOFF offset that names a LOFF row instead (only where the LOFF chunk exists). */
export const MIDX_LARGE = 0x80000000;
const HEAD = 12;
/** Bytes of the header a reader fetches first: header, chunk table and PNAM fit for some 60 packs. */
export const MIDX_HEAD_GUESS = 4096;
/** The most a head may take (PNAM for some 20,000 packs): a damaged chunk table is not read past it. */
const MIDX_HEAD_MAX = 1024 * 1024;

/** The .idx file name a MIDX lists for the pack `name` (a 40-hex checksum). */
export const idxName = (name: string) => `pack-${name}.idx`;

/** One pack to list: its name and its idx v2 bytes. */
export interface MidxPack {
  name: string;
  idx: Uint8Array;
}

/** Compares the 20-byte ids at `a[i…]` and `b[j…]`. */
function compareIds(a: Uint8Array, i: number, b: Uint8Array, j: number): number {
  for (let k = 0; k < 20; k++) {
    const d = a[i + k]! - b[j + k]!;
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The MIDX listing every object of `packs` (idx v2 each; RangeError for one that is not). An object in
 * several packs is listed once, in the pack that comes first by name.
 */
export async function buildMidx(codec: ObjectCodec, packs: MidxPack[]): Promise<Uint8Array> {
  const sorted = [...packs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const views = sorted.map((p) => {
    const x = viewIdx(p.idx);
    if (!x || !/^[0-9a-f]{40}$/.test(p.name)) throw new RangeError(`pack ${p.name}: not an idx v2 file`);
    return x;
  });
  for (let i = 1; i < sorted.length; i++) if (sorted[i]!.name === sorted[i - 1]!.name) throw new RangeError(`pack ${sorted[i]!.name} twice`);
  // Per first byte, every pack's ids of that byte, sorted together; the first of equal ids is kept.
  const total = views.reduce((n, x) => n + x.n, 0);
  const pickPack = new Int32Array(total);
  const pickRow = new Int32Array(total);
  const fanout = new Uint32Array(256);
  let n = 0;
  const rows: Array<[number, number]> = [];
  for (let b = 0; b < 256; b++) {
    rows.length = 0;
    views.forEach((x, p) => {
      const lo = b === 0 ? 0 : x.view.getUint32(8 + (b - 1) * 4);
      const hi = x.view.getUint32(8 + b * 4);
      for (let i = lo; i < hi; i++) rows.push([p, i]);
    });
    rows.sort(([p, i], [q, j]) => compareIds(views[p]!.idx, IDX_HEAD + i * 20, views[q]!.idx, IDX_HEAD + j * 20) || p - q);
    for (let r = 0; r < rows.length; r++) {
      const [p, i] = rows[r]!;
      if (n > 0 && compareIds(views[pickPack[n - 1]!]!.idx, IDX_HEAD + pickRow[n - 1]! * 20, views[p]!.idx, IDX_HEAD + i * 20) === 0) continue;
      pickPack[n] = p;
      pickRow[n] = i;
      n++;
    }
    fanout[b] = n;
  }
  const offsets = new Float64Array(n);
  let needLarge = false;
  let large = 0;
  for (let k = 0; k < n; k++) {
    offsets[k] = idxOffset(views[pickPack[k]!]!, pickRow[k]!);
    if (offsets[k]! > 0x7fffffff) large++;
    if (offsets[k]! > 0xffffffff) needLarge = true;
  }

  const enc = new TextEncoder();
  const names = sorted.map((p) => enc.encode(`${idxName(p.name)}\0`));
  const pnamBytes = names.reduce((s, b) => s + b.byteLength, 0);
  const chunks: Array<{ id: number; bytes: number }> = [
    { id: PNAM, bytes: pnamBytes + ((4 - (pnamBytes % 4)) % 4) },
    { id: OIDF, bytes: 256 * 4 },
    { id: OIDL, bytes: n * 20 },
    { id: OOFF, bytes: n * 8 },
  ];
  if (needLarge) chunks.push({ id: LOFF, bytes: large * 8 });
  const table = (chunks.length + 1) * 12;
  const body = HEAD + table + chunks.reduce((s, c) => s + c.bytes, 0);
  const out = new Uint8Array(body + 20);
  const v = new DataView(out.buffer);
  v.setUint32(0, SIGNATURE);
  out[4] = 1; // version
  out[5] = 1; // SHA-1
  out[6] = chunks.length;
  out[7] = 0; // base MIDX files
  v.setUint32(8, sorted.length);
  let at = HEAD + table;
  const start = new Map<number, number>();
  chunks.forEach((c, i) => {
    v.setUint32(HEAD + i * 12, c.id);
    v.setBigUint64(HEAD + i * 12 + 4, BigInt(at));
    start.set(c.id, at);
    at += c.bytes;
  });
  v.setBigUint64(HEAD + chunks.length * 12 + 4, BigInt(at));
  let w = start.get(PNAM)!;
  for (const b of names) {
    out.set(b, w);
    w += b.byteLength;
  }
  const oidf = start.get(OIDF)!;
  for (let b = 0; b < 256; b++) v.setUint32(oidf + b * 4, fanout[b]!);
  const oidl = start.get(OIDL)!;
  const ooff = start.get(OOFF)!;
  const loff = start.get(LOFF) ?? 0;
  let nextLarge = 0;
  for (let k = 0; k < n; k++) {
    const x = views[pickPack[k]!]!;
    out.set(x.idx.subarray(IDX_HEAD + pickRow[k]! * 20, IDX_HEAD + pickRow[k]! * 20 + 20), oidl + k * 20);
    v.setUint32(ooff + k * 8, pickPack[k]!);
    const off = offsets[k]!;
    if (needLarge && off > 0x7fffffff) {
      v.setUint32(ooff + k * 8 + 4, MIDX_LARGE | nextLarge);
      v.setBigUint64(loff + nextLarge * 8, BigInt(off));
      nextLarge++;
    } else {
      v.setUint32(ooff + k * 8 + 4, off);
    }
  }
  out.set(await sha1(codec, out.subarray(0, body)), body);
  return out;
}

/** Where a MIDX's parts are, as its header and chunk table give them. */
export interface MidxHead {
  /** The listed packs' names (the checksums in their .idx names), by pack number. */
  packs: string[];
  /** How many ids it lists. */
  n: number;
  fanout: Uint32Array;
  /** Byte offsets of the OIDL and OOFF chunks, and of LOFF (-1 without one). */
  oidl: number;
  ooff: number;
  loff: number;
  /** Where its checksum (the last 20 bytes) starts. */
  trailer: number;
}

/** Bytes of the file's start needed to parse its head: the header and chunk table, PNAM, OIDF (null: not a MIDX). */
export function midxHeadBytes(start: Uint8Array): number | null {
  if (start.byteLength < HEAD) return null;
  const v = new DataView(start.buffer, start.byteOffset, start.byteLength);
  if (v.getUint32(0) !== SIGNATURE || start[4] !== 1 || start[5] !== 1) return null;
  const count = start[6]!;
  const table = HEAD + (count + 1) * 12;
  if (start.byteLength < table) return table;
  let end = table;
  for (let i = 0; i < count; i++) {
    const id = v.getUint32(HEAD + i * 12);
    if (id === PNAM || id === OIDF) end = Math.max(end, Number(v.getBigUint64(HEAD + (i + 1) * 12 + 4)));
  }
  return end;
}

/**
 * The head of a MIDX from its first bytes (at least midxHeadBytes of them), checked for shape: signature,
 * version, SHA-1, chunk offsets in order, the chunks' sizes agreeing with the id count, pack names of the
 * form `pack-<40 hex>.idx` in sorted order, a fan-out that never decreases. Null for anything else (the
 * reader then goes by the packs' own .idx files).
 */
export function parseMidxHead(bytes: Uint8Array): MidxHead | null {
  const need = midxHeadBytes(bytes);
  if (need === null || bytes.byteLength < need) return null;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes[6]!;
  const packCount = v.getUint32(8);
  const at = new Map<number, { start: number; end: number }>();
  let prev = HEAD + (count + 1) * 12;
  for (let i = 0; i < count; i++) {
    const id = v.getUint32(HEAD + i * 12);
    const start = Number(v.getBigUint64(HEAD + i * 12 + 4));
    const end = Number(v.getBigUint64(HEAD + (i + 1) * 12 + 4));
    if (id === 0 || start < prev || end < start || at.has(id)) return null;
    at.set(id, { start, end });
    prev = end;
  }
  if (v.getUint32(HEAD + count * 12) !== 0) return null;
  const pnam = at.get(PNAM);
  const oidf = at.get(OIDF);
  const oidl = at.get(OIDL);
  const ooff = at.get(OOFF);
  const loff = at.get(LOFF);
  if (!pnam || !oidf || !oidl || !ooff || oidf.end - oidf.start !== 1024) return null;
  const fanout = new Uint32Array(256);
  for (let b = 0; b < 256; b++) {
    fanout[b] = v.getUint32(oidf.start + b * 4);
    if (b > 0 && fanout[b]! < fanout[b - 1]!) return null;
  }
  const n = fanout[255]!;
  if (oidl.end - oidl.start !== n * 20 || ooff.end - ooff.start !== n * 8 || (loff && (loff.end - loff.start) % 8 !== 0)) return null;
  const text = new TextDecoder().decode(bytes.subarray(pnam.start, pnam.end));
  const names = text.split('\0').filter((s) => s !== '');
  if (names.length !== packCount) return null;
  const packs: string[] = [];
  for (const name of names) {
    const m = /^pack-([0-9a-f]{40})\.idx$/.exec(name);
    if (!m || (packs.length > 0 && m[1]! <= packs[packs.length - 1]!)) return null;
    packs.push(m[1]!);
  }
  return { packs, n, fanout, oidl: oidl.start, ooff: ooff.start, loff: loff ? loff.start : -1, trailer: prev };
}

/**
 * The multi-pack-index at `path` (null: missing, or not a MIDX in git's format): its head, and its table
 * keyed by its checksum. The head is read twice around the checksum, so that all three come from one file.
 */
export async function openMidx(fs: StoreFs, path: string): Promise<{ head: MidxHead; table: IdTable } | null> {
  const readHead = async (): Promise<Uint8Array | null> => {
    let bytes = await readAt(fs, path, 0, MIDX_HEAD_GUESS);
    if (!bytes) return null;
    const need = midxHeadBytes(bytes);
    if (need === null || need > MIDX_HEAD_MAX) return null;
    if (need > bytes.byteLength) bytes = await readAt(fs, path, 0, need);
    return bytes;
  };
  const first = await readHead();
  const head = first && parseMidxHead(first);
  if (!head) return null;
  const sum = await readAt(fs, path, head.trailer, 20);
  if (!sum || sum.byteLength !== 20) return null;
  const again = await readHead();
  if (!again || !equalBytes(first, again)) return null;
  const hex = [...sum].map((b) => b.toString(16).padStart(2, '0')).join('');
  return {
    head,
    table: {
      key: `midx:${hex}`,
      path,
      n: head.n,
      fanout: head.fanout,
      ids: head.oidl,
      offsets: head.ooff,
      stride: 8,
      large: head.loff,
      sum: { at: head.trailer, bytes: sum },
    },
  };
}

/**
 * Makes the multi-pack-index of the pack directory `dir` list exactly the packs `names` (each with its .idx
 * there): written anew when it lists any other set, or is missing or unreadable — durably, through a
 * temporary file in `tmpDir` renamed over the old one, so a reader finds the old file or the new, whole —
 * and removed when `names` is empty. Reads each listed .idx whole (28 bytes an object, as the MIDX itself).
 * True when it changed the file.
 */
export async function syncMidx(fs: StoreFs, dir: string, names: readonly string[], tmpDir: string): Promise<boolean> {
  const path = `${dir}/${MIDX_FILE}`;
  const want = [...new Set(names)].sort();
  const current = await openMidx(fs, path);
  if (current && current.head.packs.length === want.length && current.head.packs.every((n, i) => n === want[i])) return false;
  if (want.length === 0) {
    if (!(await fs.exists(path))) return false;
    await fs.unlink(path);
    return true;
  }
  const packs: MidxPack[] = [];
  for (const name of want) {
    const idx = await fs.readFile(`${dir}/pack-${name}.idx`);
    if (!idx) throw new RangeError(`pack ${name} has no .idx`);
    packs.push({ name, idx });
  }
  await fs.writeDurable([{ path, data: await buildMidx(fs.codec ?? webCodec, packs) }], tmpDir);
  return true;
}
