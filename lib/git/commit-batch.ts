import { ConcurrentUpdateError, PathCollisionError, StoreError } from '../core/errors.ts';
import { TimeSlice } from '../util/time-slice.ts';
import type { StoreFs } from './fs.ts';
import { noProgress, type Progress } from './lock.ts';
import {
  encodeObject,
  serializeCommit,
  serializeTree,
  serializeTreeSorted,
  webCodec,
  type ObjectCodec,
  type ObjectForm,
  type ObjectType,
} from './objects.ts';
import type { PackStore } from './pack-store.ts';
import { checkPath, type CommitMeta, type PathChange, type ReadCache, type TreeEntry } from './read-cache.ts';
import { REF, type BranchRefs } from './refs.ts';

/**
 * Writing commits: objects encoded (lib/git/objects.ts) into a staging area — one commit, or a chain of
 * them (`commitBatch`, for group commit) — then flushed to disk durably together (StoreFs writeDurable:
 * temp file, fsync, rename, directory fsync, or one pack), and the branch moved once, by git's lock-file
 * protocol with a check-and-set (lib/git/refs.ts). No working tree, no `.git/index`.
 */

export interface CommitArgs {
  parent: string | null;
  writes: FileWrite[];
  author: { name: string; email: string };
  message: string;
  /** Unix seconds. */
  time: number;
}

export interface PreparedCommit {
  meta: CommitMeta;
  changes: PathChange[];
  /** Moves the branch to the commit (the check-and-set was made when the lock was taken). */
  publish(): Promise<void>;
  /** Releases the lock without moving the branch. */
  abort(): Promise<void>;
}

/** A chain of commits made durable together (GitStore.batch). */
export interface CommitBatch {
  readonly id: string;
  /** The branch head the chain builds on (checked when the lock is taken). */
  readonly base: string | null;
  /** The last commit of the chain (`base` while it is empty). */
  readonly head: string | null;
  readonly commits: ReadonlyArray<{ meta: CommitMeta; changes: PathChange[] }>;
  /** Deflated bytes of the objects staged so far. */
  readonly bytes: number;
  /** Adds one commit on top of `head`; null (and nothing staged) when it would change nothing. */
  add(args: Omit<CommitArgs, 'parent'>): Promise<{ meta: CommitMeta; changes: PathChange[] } | null>;
  /** The content of a blob this chain staged, if it did. */
  staged(oid: string): Uint8Array | undefined;
  /**
   * Every staged object durably on disk and `main.lock` taken holding the last commit, after checking
   * the branch still points at `base` (ConcurrentUpdateError otherwise, lock given back). `alongside`
   * (e.g. the database batch recording the chain) starts as soon as the lock is held and the check passed,
   * while the objects are still being flushed; meanwhile this store's readers are served the chain's
   * objects from memory. Its failure fails `prepare` (lock given back).
   */
  prepare(progress?: Progress, alongside?: () => Promise<void>): Promise<void>;
  /** Moves the branch to `head` (rename of the lock over the ref, its directory flushed). */
  publish(): Promise<void>;
  /** Gives the lock back without moving the branch (a no-op when not prepared or already settled). */
  abort(): Promise<void>;
}

export interface FileWrite {
  path: string;
  /** New content, or null to delete. */
  content: Uint8Array | null;
}

/**
 * Objects encoded for one commit, flushed together once all are known: as loose objects, or as records of
 * the pack they will be written in (`form`).
 */
class ObjectStage {
  readonly objects = new Map<string, Uint8Array>();
  /** Trees written, with their entries, for the read cache once they are on disk. */
  readonly trees = new Map<string, TreeEntry[]>();
  constructor(
    private readonly codec: ObjectCodec,
    private readonly form: ObjectForm,
  ) {}
  async put(type: ObjectType, content: Uint8Array): Promise<string> {
    const { oid, deflated } = await encodeObject(this.codec, type, content, this.form);
    this.objects.set(oid, deflated);
    return oid;
  }
}

/** The parts of the store a commit batch works with. */
export interface BatchParts {
  fs: StoreFs;
  dirs: { gitdir(id: string): string };
  refs: BranchRefs;
  cache: ReadCache;
  packs: PackStore;
}

/**
 * A chain of commits built on `base` in memory (each `add` is one commit whose parent is the previous
 * one), then made durable together: every object of every commit written in one durable write, the
 * branch's lock taken once with the check-and-set against `base`, and the branch moved once, to the
 * last commit (`publish`). A failed `add` leaves the chain as it was. Callers hold `withLock`.
 */
export function commitBatch(store: BatchParts, id: string, base: string | null): CommitBatch {
  const { fs, refs, cache, packs } = store;
  const gitdir = store.dirs.gitdir(id);
  // Records of the group's pack, and loose objects (for a commit that would make the pack large, or a
  // filesystem without packs).
  const packed = new Map<string, Uint8Array>();
  const loose = new Map<string, Uint8Array>();
  const trees = new Map<string, TreeEntry[]>();
  const metas = new Map<string, CommitMeta>();
  const blobs = new Map<string, Uint8Array>();
  const commits: Array<{ meta: CommitMeta; changes: PathChange[] }> = [];
  const codec = fs.codec ?? webCodec;
  // One pack per batch where the filesystem writes packs (split at MAX_PACK_BYTES), else loose objects.
  let head = base;
  let bytes = 0;
  let state: 'open' | 'prepared' | 'settled' = 'open';
  const refPath = `${gitdir}/${REF}`;
  const lockPath = `${refPath}.lock`;
  const readTree = async (oid: string) => trees.get(oid) ?? cache.readTree(id, oid);
  const batch: CommitBatch = {
    id,
    base,
    get head() {
      return head;
    },
    commits,
    get bytes() {
      return bytes;
    },
    add: async (args) => {
      if (state !== 'open') throw new StoreError('commit batch already prepared');
      // Checking, hashing and deflating 10,000 files is seconds of work on this thread: it runs in slices,
      // other requests getting turns between them.
      const slice = new TimeSlice();
      for (const w of args.writes) {
        checkPath(w.path, w.content !== null);
        if (slice.due) await slice.next();
      }
      const form: ObjectForm = fs.packs ? 'pack' : 'loose';
      const into = form === 'pack' ? packed : loose;
      const stage = new ObjectStage(codec, form);
      // Blobs first; a write whose blob equals the current one changes nothing.
      const byPath = new Map<string, string | null>();
      for (const w of args.writes) {
        byPath.set(w.path, w.content === null ? null : await stage.put('blob', w.content));
        if (slice.due) await slice.next();
      }
      const parentTree = head ? (metas.get(head) ?? (await cache.readCommit(id, head))).tree : null;
      const changes: PathChange[] = [];
      const newTree = await rewriteTree(readTree, stage, parentTree, byPath, '', changes, slice);
      if (changes.length === 0) return null;
      const rootTree = newTree ?? (await stage.put('tree', serializeTree([])));
      const message = args.message.endsWith('\n') ? args.message : `${args.message}\n`;
      const parent = head;
      const sha = await stage.put(
        'commit',
        serializeCommit({ tree: rootTree, parents: parent ? [parent] : [], author: args.author, time: args.time, message }),
      );
      const meta: CommitMeta = {
        sha,
        parent,
        tree: rootTree,
        author: args.author.name,
        email: args.author.email,
        time: args.time,
        message: message.split('\n')[0] ?? '',
      };
      for (const [oid, data] of stage.objects) {
        if (!into.has(oid)) bytes += data.byteLength;
        into.set(oid, data);
      }
      for (const [oid, entries] of stage.trees) trees.set(oid, entries);
      for (const w of args.writes) {
        const blob = byPath.get(w.path);
        if (blob && w.content) blobs.set(blob, w.content);
      }
      metas.set(sha, meta);
      head = sha;
      changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      const made = { meta, changes };
      commits.push(made);
      return made;
    },
    staged: (oid) => blobs.get(oid),
    prepare: async (progress = noProgress, alongside) => {
      if (state !== 'open') throw new StoreError('commit batch already prepared');
      if (head === null || head === base) throw new StoreError('commit batch holds no commit');
      state = 'prepared';
      const sha = head;
      // Until every object is in place, a reader that learns of the chain (from the index `alongside`
      // records) reads its objects here.
      const inFlight = { trees, metas, blobs };
      cache.inFlight.set(id, inFlight);
      // Objects reach the disk before the ref that makes them reachable. The lock file (which names the
      // new sha but makes nothing reachable) is written and flushed at the same time. An object that is
      // already stored is simply replaced by the same bytes (rename is atomic).
      progress.step('prepare commit');
      // `alongside` starts once the objects' flushes are requested (or the objects failed): its work on
      // this thread then overlaps the disk's instead of delaying the writes. False: the objects failed.
      let issue!: (ok: boolean) => void;
      const issued = new Promise<boolean>((resolve) => (issue = resolve));
      if (packed.size === 0) issue(true);
      const writing = Promise.all([
        packed.size > 0 ? packs.writePacks(id, [...packed].map(([oid, record]) => ({ oid, record })), () => issue(true)) : undefined,
        loose.size > 0
          ? fs.writeDurable(
              [...loose].map(([oid, data]) => ({ path: `${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`, data })),
              `${gitdir}/objects`,
            )
          : undefined,
      ]);
      writing.then(
        () => issue(true),
        () => issue(false),
      );
      const [written, lock] = await Promise.allSettled([
        progress.track('write objects', writing),
        // Once the lock is held no git-protocol writer can move the branch, so the check-and-set
        // comparison is made now, while the objects are being flushed.
        progress.track(
          'take main.lock',
          refs.takeLock(id, lockPath, sha).then(async ({ flushed }) => {
            // Whatever fails from here on (the check, or reading the ref) gives the lock back.
            let current: string | null;
            try {
              current = await refs.head(id);
            } catch (e) {
              await refs.dropLock(lockPath);
              throw e;
            }
            if (current !== base) {
              await refs.dropLock(lockPath);
              throw new ConcurrentUpdateError(`${REF} moved from ${base ?? '(none)'} to ${current ?? '(none)'}`);
            }
            // The branch is ours until publish or abort: what goes with the chain can start now.
            try {
              await Promise.all([flushed, issued.then((ok) => (ok ? alongside?.() : undefined))]);
            } catch (e) {
              await refs.dropLock(lockPath);
              throw e;
            }
          }),
        ),
      ]);
      if (cache.inFlight.get(id) === inFlight) cache.inFlight.delete(id);
      if (written.status === 'rejected' || lock.status === 'rejected') {
        state = 'settled';
        // A failed lock step has already released (or never taken) the lock.
        if (lock.status === 'fulfilled') await refs.dropLock(lockPath);
        throw written.status === 'rejected' ? written.reason : (lock as PromiseRejectedResult).reason;
      }
      cache.keep(id, inFlight);
    },
    publish: async () => {
      if (state !== 'prepared') throw new StoreError('commit batch not prepared, or already published or aborted');
      state = 'settled';
      await refs.moveTo(lockPath, refPath);
      if (packed.size > 0) packs.scheduleMerge(id);
    },
    abort: async () => {
      if (state === 'settled') return;
      const held = state === 'prepared';
      state = 'settled';
      if (held) await refs.dropLock(lockPath);
    },
  };
  return batch;
}

/** Applies `byPath` (paths relative to the repository root) below `prefix` to `tree`; null = empty. */
async function rewriteTree(
  readTree: (oid: string) => Promise<TreeEntry[]>,
  stage: ObjectStage,
  tree: string | null,
  byPath: Map<string, string | null>,
  prefix: string,
  changes: PathChange[],
  slice: TimeSlice,
): Promise<string | null> {
  if (slice.due) await slice.next();
  const entries = new Map<string, TreeEntry>((tree ? await readTree(tree) : []).map((e) => [e.path, e]));
  const files = new Map<string, string | null>();
  const dirs = new Map<string, Map<string, string | null>>();
  for (const [path, blob] of byPath) {
    const rest = path.slice(prefix.length);
    const slash = rest.indexOf('/');
    if (slash < 0) files.set(rest, blob);
    else {
      const name = rest.slice(0, slash);
      let sub = dirs.get(name);
      if (!sub) dirs.set(name, (sub = new Map()));
      sub.set(path, blob);
    }
  }
  let dirty = false;
  for (const [name, blob] of files) {
    const cur = entries.get(name);
    if (dirs.has(name) || (cur && cur.type !== 'blob' && blob !== null)) {
      throw new PathCollisionError(`${prefix}${name}`);
    }
    if (blob === null) {
      if (cur && cur.type === 'blob') {
        entries.delete(name);
        changes.push({ path: `${prefix}${name}`, blob: null });
        dirty = true;
      }
    } else if (!cur || cur.oid !== blob) {
      entries.set(name, { mode: '100644', path: name, oid: blob, type: 'blob' });
      changes.push({ path: `${prefix}${name}`, blob });
      dirty = true;
    }
  }
  for (const [name, sub] of dirs) {
    const cur = entries.get(name);
    if (cur && cur.type !== 'tree') {
      // Deleting below a file is a no-op; writing below it collides.
      if ([...sub.values()].some((b) => b !== null)) throw new PathCollisionError(`${prefix}${name}`);
      continue;
    }
    const before = cur?.oid ?? null;
    const after = await rewriteTree(readTree, stage, before, sub, `${prefix}${name}/`, changes, slice);
    if (after === before) continue;
    dirty = true;
    if (after === null) entries.delete(name);
    else entries.set(name, { mode: '040000', path: name, oid: after, type: 'tree' });
  }
  if (!dirty) return tree;
  if (entries.size === 0) return null;
  // Cached in the order the tree is stored, so a cached read equals one from disk.
  const { content, sorted } = serializeTreeSorted(
    [...entries.values()].map((e) => ({ mode: e.mode, name: e.path, oid: e.oid, type: e.type, entry: e })),
  );
  const oid = await stage.put('tree', content);
  stage.trees.set(oid, sorted.map((s) => s.entry));
  return oid;
}
