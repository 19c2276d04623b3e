import { StoreError } from '../core/errors.ts';
import { TimeSlice } from '../util/time-slice.ts';
import type { StoreFs } from './fs.ts';
import { buildIdx, type IndexedPack } from './import.ts';
import { syncMidx } from './midx.ts';
import { deflate, PACK_TYPE, packRecord, sha1, webCodec } from './objects.ts';
import { buildPacks, copyableRecords, type PackEntry } from './pack.ts';
import type { ReadCache } from './read-cache.ts';

/**
 * The packs of the repositories, where the filesystem keeps packs (StoreFs.packs): a commit group's objects
 * written as one pack, small packs merged geometrically behind the repository's writers, the
 * multi-pack-index kept listing the large ones, and an imported pack kept as git would keep it (or, without
 * packs, its objects written loose).
 */

const encoder = new TextEncoder();

/**
 * Packs below this size are merged (MAX_SMALL_PACKS); larger ones (a large push, or a merge's result) stay
 * as they are, and the multi-pack-index (lib/git/midx.ts) lists every one of them, so that a lookup costs
 * the same however many there are. Reading a pack costs no memory for its size (lib/git/object-reader.ts
 * reads a record by its byte range); a merge reads the small packs whole, so together they stay below
 * MAX_SMALL_PACKS × this.
 */
export const SMALL_PACK_BYTES = 1024 * 1024;
/**
 * Small packs a repository keeps at most before they are merged: a read that misses the loose objects
 * looks in every pack's index, so their number is bounded.
 */
export const MAX_SMALL_PACKS = 16;

/**
 * The packs a merge takes of `small` (at least two): the smallest, up to the first that is at least twice
 * their size together, which stays with every larger one (git's `repack --geometric=2`, by size). Sizes
 * then double from one kept pack to the next, so a merge rewrites about what was pushed since the last
 * merge of its size: about log2(SMALL_PACK_BYTES / the smallest pack) rewrites of each object before it
 * lands in a pack of SMALL_PACK_BYTES or more, where it was one per merge with the whole set merged.
 */
export function mergeable<P extends { name: string; bytes: number }>(small: readonly P[]): P[] {
  const bySize = [...small].sort((a, b) => a.bytes - b.bytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let sum = 0;
  let take = 0;
  for (const p of bySize) {
    if (take >= 2 && p.bytes >= 2 * sum) break;
    sum += p.bytes;
    take++;
  }
  return bySize.slice(0, take);
}

/** Runs `fn` holding the repository's write lock (GitStore.withLock). */
export type WithLock = <T>(id: string, fn: () => Promise<T>, opts: { owner?: string; step?: string }) => Promise<T>;

export class PackStore {
  /** Small packs per repository as last counted (absent: not counted since boot). */
  private readonly smallPacks = new Map<string, number>();
  /** Repositories whose multi-pack-index lists every large pack, as last checked (absent: not since boot). */
  private readonly indexed = new Set<string>();
  /** Pack merges queued or running, per repository. */
  private readonly merges = new Map<string, Promise<void>>();

  constructor(
    private readonly fs: StoreFs,
    private readonly dirs: { gitdir(id: string): string },
    private readonly cache: ReadCache,
    private readonly withLock: WithLock,
  ) {}

  /** Forgets what was counted of a repository (it was retired). */
  forget(id: string): void {
    this.smallPacks.delete(id);
  }

  /**
   * Writes staged pack records as one pack (more only past MAX_PACK_BYTES), durably, and counts them.
   * `issued` is called once the first pack's flushes are requested.
   */
  async writePacks(id: string, entries: PackEntry[], issued?: () => void): Promise<void> {
    const packs = this.fs.packs!;
    const dir = `${this.dirs.gitdir(id)}/objects/pack`;
    const built = await buildPacks(this.fs.codec ?? webCodec, entries);
    for (const b of built) {
      await packs.write(dir, b.name, b.pack, b.idx, issued);
      this.cache.reader.added(this.dirs.gitdir(id), b.name, b.idx, b.pack.byteLength);
    }
    const known = this.smallPacks.get(id);
    if (known !== undefined) this.smallPacks.set(id, known + built.filter((b) => b.pack.byteLength < SMALL_PACK_BYTES).length);
    if (built.some((b) => b.pack.byteLength >= SMALL_PACK_BYTES)) this.indexed.delete(id);
  }

  /**
   * After a group's branch move: when the repository may hold more than MAX_SMALL_PACKS small packs, or a
   * large pack its multi-pack-index does not list (or neither was checked since boot), the packs' upkeep —
   * a merge, then the multi-pack-index — is queued behind the repository's writers (withLock), so it never
   * runs beside one and never delays the answer of the group that triggered it. At most one queued.
   */
  scheduleMerge(id: string): void {
    const n = this.smallPacks.get(id);
    if ((n !== undefined && n <= MAX_SMALL_PACKS && this.indexed.has(id)) || this.merges.has(id)) return;
    const upkeep = async () => {
      await this.mergePacks(id);
      await this.indexPacks(id);
    };
    const run = this.withLock(id, upkeep, { owner: 'pack-merge', step: 'merge packs' })
      .catch(() => {
        // Not done this time (lock wait, disk error): counted and checked again after the next group.
        this.smallPacks.delete(id);
        this.indexed.delete(id);
      })
      .finally(() => {
        if (this.merges.get(id) === run) this.merges.delete(id);
      });
    this.merges.set(id, run);
  }

  /**
   * Resolves once no pack merge is queued or running (for `id`, or any repository), and the filesystem's
   * own background work is done (StoreFs.idle: a replaced ref file being freed).
   */
  async packMerges(id?: string): Promise<void> {
    while (true) {
      const pending = id === undefined ? [...this.merges.values()] : [this.merges.get(id)].filter((p) => p !== undefined);
      if (pending.length === 0) break;
      await Promise.all(pending);
    }
    await this.fs.idle?.();
  }

  /**
   * Merges small packs into one when the repository has more than MAX_SMALL_PACKS of them: the smallest,
   * up to the first that is at least twice their size together (mergeable). The merged pack is written
   * durably first, then the old .idx files are deleted (readers stop finding them), then the old .pack
   * files, then the directory is flushed. A reader that listed an old pack just before lists again
   * (lib/git/object-reader.ts). Whole objects are copied record by record; a delta (from a pack git wrote)
   * is stored whole again. Callers hold withLock.
   */
  async mergePacks(id: string): Promise<void> {
    const packs = this.fs.packs;
    if (!packs) return;
    const codec = this.fs.codec ?? webCodec;
    const gitdir = this.dirs.gitdir(id);
    const dir = `${gitdir}/objects/pack`;
    const small = (await packs.list(dir)).filter((p) => p.bytes < SMALL_PACK_BYTES);
    if (small.length <= MAX_SMALL_PACKS) {
      this.smallPacks.set(id, small.length);
      return;
    }
    const entries: PackEntry[] = [];
    const seen = new Set<string>();
    const merged: string[] = [];
    for (const p of mergeable(small)) {
      const [pack, idx] = await Promise.all([this.fs.readFile(`${dir}/pack-${p.name}.pack`), this.fs.readFile(`${dir}/pack-${p.name}.idx`)]);
      if (!pack || !idx || pack.byteLength < 32) continue;
      // Only a pack whose bytes match its checksum is copied (and then deleted); any other stays as it is.
      const sum = await sha1(codec, pack.subarray(0, pack.byteLength - 20));
      if (!sum.every((b, i) => b === pack[pack.byteLength - 20 + i])) continue;
      let records;
      try {
        records = copyableRecords(pack, idx);
      } catch {
        continue;
      }
      for (const e of records.entries) {
        if (seen.has(e.oid)) continue;
        seen.add(e.oid);
        entries.push(e);
      }
      for (const oid of records.deltas) {
        if (seen.has(oid)) continue;
        seen.add(oid);
        const o = await this.cache.readObject(id, oid);
        const type = PACK_TYPE[o.type];
        const content = o.content;
        entries.push({ oid, record: packRecord(type, content.byteLength, await deflate(codec, content)) });
      }
      merged.push(p.name);
    }
    if (merged.length < 2) {
      this.smallPacks.set(id, small.length);
      return;
    }
    const built = await buildPacks(codec, entries);
    for (const b of built) await packs.write(dir, b.name, b.pack, b.idx);
    const kept = new Set(built.map((b) => b.name));
    const removed = merged.filter((n) => !kept.has(n));
    // The multi-pack-index names none of the packs about to go (git refuses one that names a missing pack).
    await this.indexPacks(id, removed);
    await packs.remove(dir, removed);
    this.cache.reader.forget(gitdir);
    this.smallPacks.set(id, small.length - merged.length + built.filter((b) => b.pack.byteLength < SMALL_PACK_BYTES).length);
  }

  /**
   * Makes the repository's multi-pack-index list exactly its large packs (SMALL_PACK_BYTES or more, which
   * are never merged), leaving out `removing` (packs about to be deleted): rewritten when a large pack was
   * written since, or when it is missing or names anything else (lib/git/midx.ts syncMidx). The few small
   * packs are looked up through their own .idx. Callers hold withLock.
   */
  async indexPacks(id: string, removing: readonly string[] = []): Promise<void> {
    const packs = this.fs.packs;
    if (!packs) return;
    const gitdir = this.dirs.gitdir(id);
    const dir = `${gitdir}/objects/pack`;
    const gone = new Set(removing);
    const large = (await packs.list(dir)).filter((p) => p.bytes >= SMALL_PACK_BYTES && !gone.has(p.name)).map((p) => p.name);
    if (await syncMidx(this.fs, dir, large, `${gitdir}/objects`)) this.cache.reader.forget(gitdir);
    if (gone.size === 0) this.indexed.add(id);
  }

  /**
   * Keeps the objects of an imported pack (lib/git/import.ts, every one checked): where the filesystem has
   * packs and the pack can be copied as it is (`copy` writes its bytes to a new file, flushed), it becomes a
   * pack of the repository as git would keep it, deltas and all, with the idx made for it, and the
   * multi-pack-index is brought up to date; otherwise (the Durable Object build) each object is written whole
   * as a loose object, a batch at a time. Nothing points at them until `startBranch`. Callers hold withLock.
   */
  async keepImported(id: string, pack: IndexedPack, copy?: (to: string) => Promise<void>): Promise<void> {
    const gitdir = this.dirs.gitdir(id);
    const codec = this.fs.codec ?? webCodec;
    if (this.fs.packs && copy) {
      const dir = `${gitdir}/objects/pack`;
      await this.fs.mkdirp(dir);
      const tmp = `${dir}/tmp_pack_import_${Math.random().toString(36).slice(2)}`;
      try {
        await copy(tmp);
        await this.fs.renameDurable(tmp, `${dir}/pack-${pack.checksum}.pack`);
      } catch (e) {
        await this.fs.unlink(tmp).catch(() => undefined);
        throw e;
      }
      await this.fs.writeDurable([{ path: `${dir}/pack-${pack.checksum}.idx`, data: await buildIdx(pack, codec) }], dir);
      this.cache.reader.forget(gitdir);
      this.smallPacks.delete(id);
      this.indexed.delete(id);
      await this.indexPacks(id);
      return;
    }
    const slice = new TimeSlice();
    let files: Array<{ path: string; data: Uint8Array }> = [];
    let bytes = 0;
    const flush = async () => {
      if (files.length > 0) await this.fs.writeDurable(files, `${gitdir}/objects`);
      files = [];
      bytes = 0;
    };
    for (let i = 0; i < pack.count; i++) {
      const o = await pack.object(i);
      const header = encoder.encode(`${o.type} ${o.data.byteLength}\0`);
      const whole = new Uint8Array(header.byteLength + o.data.byteLength);
      whole.set(header);
      whole.set(o.data, header.byteLength);
      const { oid, deflated } = await codec.hashAndDeflate(whole);
      if (oid !== pack.oid(i)) throw new StoreError(`imported object ${pack.oid(i)} hashed to ${oid}`);
      files.push({ path: `${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`, data: deflated });
      bytes += deflated.byteLength;
      if (files.length >= 512 || bytes >= 4 * 1024 * 1024) await flush();
      if (slice.due) await slice.next();
    }
    await flush();
  }
}
