import { PACK_TYPE, deflate, hexToBytes, packRecord, sha1Stream, toHex, webCodec } from './objects.ts';
import { BRANCH, type GitStore } from './store.ts';
import { checkCancelled, pieceStream, type StreamWatch } from '../framework/http/stream.ts';
import { TimeSlice } from '../util/time-slice.ts';
import { concatBytes } from '../util/bytes.ts';

/**
 * A repository as a git bundle (v2), streamed: the header names `HEAD` and `refs/heads/main`, then one
 * packfile holds every object reachable from the branch, each stored whole (no deltas) and deflated. `git
 * bundle verify` accepts it and `git clone <file>` restores every page and the whole history. Web-standard
 * only (the store's codec, or CompressionStream, and an incremental SHA-1), so both runtimes stream it from
 * whatever store backs the repository.
 *
 * A pack says how many objects it holds before the first one, so the export is made in two passes. The
 * first walks the branch (commits of its first-parent line, their trees, and the blobs) and keeps every
 * reachable id once, in the order found: 20 bytes an id and a 4-byte slot of a hash table (about 6 MiB at
 * 200,000 objects). The second reads them in that order, a batch at a time (GitStore.readObjects: each
 * batch in pack order), and hands out each object's record as it is deflated, with the running SHA-1 of the
 * pack bytes; the checksum ends it. The body is made as the client reads it (lib/framework/http/stream.ts): memory
 * holds the id list, one batch of objects and one chunk, whatever the repository's size, and when the client
 * goes away the walk or the reads stop.
 *
 * Pack format (gitformat-pack): `PACK`, version 2, object count, then per object a record (objects.ts
 * packRecord: the type and size header, then the zlib-deflated content); last, the SHA-1 of everything before it.
 */

const encoder = new TextEncoder();
/**
 * Objects read at once at most, … (a batch's objects are inflated on this thread in one go: 2,048 small ones
 * are tens of milliseconds, 16,384 were a few hundred.)
 */
export const READ_BATCH = 2_048;
/** … and the content bytes a batch aims at: the next batch is sized from the last one's objects. */
export const BATCH_BYTES = 2 * 1024 * 1024;
/**
 * The first batch (sized before any object was seen: a pack's index has no sizes); each next one is at most
 * twice the last, so that a run of big objects after small ones makes no batch much larger than BATCH_BYTES.
 */
const FIRST_BATCH = 16;

/** Object ids, each once, in the order added: 20 bytes an id, and open addressing over 4-byte slots. */
export class IdList {
  private ids = new Uint8Array(20 * 1024);
  /** Slot → 1 + the id's position, 0 when empty; at most half full. */
  private table = new Int32Array(2048);
  private readonly scratch = new Uint8Array(20);
  count = 0;

  /** Adds `oid` (40 hex digits); false when it was there already. */
  add(oid: string): boolean {
    const id = hexToBytes(oid, this.scratch);
    const mask = this.table.length - 1;
    for (let slot = this.hash(id, 0) & mask; ; slot = (slot + 1) & mask) {
      const at = this.table[slot]!;
      if (at === 0) break;
      if (this.equals(at - 1, id)) return false;
    }
    if ((this.count + 1) * 20 > this.ids.length) {
      const grown = new Uint8Array(this.ids.length * 2);
      grown.set(this.ids);
      this.ids = grown;
    }
    this.ids.set(id, this.count * 20);
    this.count++;
    if (this.count * 2 > this.table.length) this.rehash(this.table.length * 2);
    else this.place(this.count - 1);
    return true;
  }

  /** The id at `i`, as hex. */
  hex(i: number): string {
    return toHex(this.ids.subarray(i * 20, i * 20 + 20));
  }

  /** Bytes held. */
  get bytes(): number {
    return this.ids.byteLength + this.table.byteLength;
  }

  /** Ids are SHA-1s: their first four bytes are as good a hash as any. */
  private hash(bytes: Uint8Array, at: number): number {
    return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  }

  private equals(i: number, id: Uint8Array): boolean {
    const base = i * 20;
    for (let k = 0; k < 20; k++) if (this.ids[base + k] !== id[k]) return false;
    return true;
  }

  private place(i: number): void {
    const mask = this.table.length - 1;
    let slot = this.hash(this.ids, i * 20) & mask;
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = i + 1;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size);
    for (let i = 0; i < this.count; i++) this.place(i);
  }
}

/**
 * Every object reachable from `head`: its commits (the first-parent line first, as found, and the other
 * parents of merges an imported history holds), their trees and blobs.
 */
async function reachable(store: GitStore, id: string, head: string, signal: AbortSignal, slice: TimeSlice): Promise<IdList> {
  const ids = new IdList();
  const walkTree = async (tree: string): Promise<void> => {
    if (!ids.add(tree)) return;
    checkCancelled(signal);
    if (slice.due) await slice.next();
    for (const e of await store.readTree(id, tree)) {
      if (e.type === 'tree') await walkTree(e.oid);
      else if (e.type === 'blob') ids.add(e.oid);
    }
  };
  const stack = [head];
  while (stack.length > 0) {
    const sha = stack.pop()!;
    if (!ids.add(sha)) continue;
    const commit = await store.readCommit(id, sha);
    await walkTree(commit.tree);
    // The first parent is taken next (pushed last): a line without merges is walked exactly as before.
    for (const m of [...(commit.merges ?? [])].reverse()) stack.push(m);
    if (commit.parent) stack.push(commit.parent);
  }
  return ids;
}

/** What an export did, for its log line when it ends (objects listed by the walk, and records handed out). */
export interface BundleProgress {
  objects: number;
  sent: number;
}

/**
 * The repository's bundle as a stream made as it is read, or null when it has no commit yet (git has no
 * bundle of nothing). `onEnd` hears how the stream ended, with `progress` as it then stood.
 */
export async function bundleStream(
  store: GitStore,
  id: string,
  opts: { onEnd?: StreamWatch; progress?: BundleProgress } = {},
): Promise<ReadableStream<Uint8Array> | null> {
  const head = await store.head(id);
  if (!head) return null;
  const progress = opts.progress ?? { objects: 0, sent: 0 };
  return pieceStream((signal) => bundlePieces(store, id, head, signal, progress), {
    onEnd: opts.onEnd,
    detail: () => ({ objects: progress.objects, sent: progress.sent }),
  });
}

async function* bundlePieces(
  store: GitStore,
  id: string,
  head: string,
  signal: AbortSignal,
  progress: BundleProgress,
): AsyncGenerator<Uint8Array, void, void> {
  yield encoder.encode(`# v2 git bundle\n${head} HEAD\n${head} refs/heads/${BRANCH}\n\n`);
  const slice = new TimeSlice();
  const ids = await reachable(store, id, head, signal, slice);
  progress.objects = ids.count;
  const codec = store.fs.codec ?? webCodec;
  const hash = sha1Stream(codec);
  const packHead = new Uint8Array(12);
  packHead.set(encoder.encode('PACK'), 0);
  const view = new DataView(packHead.buffer);
  view.setUint32(4, 2);
  view.setUint32(8, ids.count);
  hash.update(packHead);
  yield packHead;
  let size = FIRST_BATCH;
  for (let i = 0; i < ids.count; ) {
    checkCancelled(signal);
    const n = Math.min(size, ids.count - i);
    const oids: string[] = new Array(n);
    for (let k = 0; k < n; k++) oids[k] = ids.hex(i + k);
    const objects = await store.readObjects(id, oids);
    let bytes = 0;
    for (let k = 0; k < n; k++) {
      const { type, content } = objects[k]!;
      // Handed over, the batch holds it no longer.
      objects[k] = undefined!;
      bytes += content.byteLength;
      const record = packRecord(PACK_TYPE[type], content.byteLength, await deflate(codec, content));
      hash.update(record);
      progress.sent++;
      yield record;
      checkCancelled(signal);
      if (slice.due) await slice.next();
    }
    i += n;
    size = nextBatch(size, bytes);
  }
  yield hash.digest();
}

/**
 * The next batch's size: as many objects as `aim` bytes hold at the last batch's mean size, within `most`
 * and `grow` times the last batch.
 */
export function nextBatch(size: number, bytes: number, most = READ_BATCH, aim = BATCH_BYTES, grow = 2): number {
  const fits = bytes <= 0 ? most : Math.floor((size * aim) / bytes);
  return Math.max(1, Math.min(most, grow * size, fits));
}

/** The whole bundle as bytes (tests and tools; the export route streams it), or null while the repository has no commit. */
export async function buildBundle(store: GitStore, id: string): Promise<Uint8Array<ArrayBuffer> | null> {
  const stream = await bundleStream(store, id);
  if (!stream) return null;
  const parts: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return concatBytes(parts);
}
