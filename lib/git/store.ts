import { LockTimeoutError, RepoBusyError } from '../core/errors.ts';
import { commitBatch, type CommitArgs, type CommitBatch, type PreparedCommit } from './commit-batch.ts';
import type { StoreFs } from './fs.ts';
import type { IndexedPack } from './import.ts';
import { KeyedMutex, noProgress, type HeldLock, type Progress } from './lock.ts';
import type { ObjectType } from './objects.ts';
import { PackStore } from './pack-store.ts';
import { ReadCache, type CommitMeta, type PathChange, type TreeEntry } from './read-cache.ts';
import { BranchRefs } from './refs.ts';
import { RepoDirs } from './repo-dirs.ts';

export type { CommitArgs, CommitBatch, FileWrite, PreparedCommit } from './commit-batch.ts';
export { mergeable, MAX_SMALL_PACKS, SMALL_PACK_BYTES } from './pack-store.ts';
export type { CommitMeta, PathChange, TreeEntry } from './read-cache.ts';
export { BRANCH } from './refs.ts';
export { RETIRED_PREFIX } from './repo-dirs.ts';

/**
 * The git store: one bare repository per project at `<root>/<id>.git`, branch `main`, readable by the
 * plain `git` command, under a per-repository write lock. This class puts together the parts, each in its
 * own module: the repository directories (lib/git/repo-dirs.ts), the branch and its lock file
 * (lib/git/refs.ts), cached object reads (lib/git/read-cache.ts), commit batches (lib/git/commit-batch.ts)
 * and the packs' upkeep (lib/git/pack-store.ts). Caches are bounded by one byte budget (`cacheBytes`).
 */

/** How long a writer waits for a repository's lock before giving up with RepoBusyError. */
export const LOCK_WAIT_MS = 60_000;
/** The store's cache budget when none is given (bytes). */
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;

export interface GitStoreOptions {
  fs: StoreFs;
  /** Directory holding the `<id>.git` repositories. */
  root: string;
  /**
   * The memory budget of the store's caches, in bytes (default DEFAULT_CACHE_BYTES): decoded blobs, trees
   * and commits (immutable, so caching them is always safe), and the head entries RepoStore keeps
   * (`headCacheBytes`). Each cache is bounded by its share of it, whatever the workload.
   */
  cacheBytes?: number;
  /** How long a caller of withLock waits at most (default LOCK_WAIT_MS). */
  lockWaitMs?: number;
}

export class GitStore {
  readonly fs: StoreFs;
  readonly root: string;
  /** How long a caller of withLock waits at most (ms). */
  readonly lockWaitMs: number;
  /** The share of the cache budget for RepoStore's head entries (bytes). */
  readonly headCacheBytes: number;
  private readonly mutex: KeyedMutex;
  private readonly dirs: RepoDirs;
  private readonly refs: BranchRefs;
  private readonly cache: ReadCache;
  private readonly packs: PackStore;
  /**
   * With `recoverLater`: the repositories whose crash leftovers are still to clear (null: none are), and the
   * clearings under way. A repository's first writer waits for its own.
   */
  private dueRecovery: Set<string> | null = null;
  private readonly recovering = new Map<string, Promise<void>>();

  constructor(opts: GitStoreOptions) {
    this.fs = opts.fs;
    this.root = opts.root.replace(/\/+$/, '');
    this.lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
    this.mutex = new KeyedMutex({ waitMs: this.lockWaitMs });
    const bytes = Math.max(0, opts.cacheBytes ?? DEFAULT_CACHE_BYTES);
    // Shares of the budget: blobs 3/8, trees 1/4, commits 1/8, pack indexes 1/8, head entries (RepoStore) 1/8.
    this.headCacheBytes = Math.floor(bytes / 8);
    this.dirs = new RepoDirs(this.fs, this.root);
    this.refs = new BranchRefs(this.fs, this.dirs);
    this.cache = new ReadCache(this.fs, this.dirs, {
      blobs: Math.floor((bytes * 3) / 8),
      trees: Math.floor(bytes / 4),
      commits: Math.floor(bytes / 8),
      packIndexes: Math.floor(bytes / 8),
    });
    this.packs = new PackStore(this.fs, this.dirs, this.cache, (id, fn, o) => this.withLock(id, fn, o));
  }

  /** Bytes held by the store's own caches now (blobs, trees, commits, pack indexes). */
  cachedBytes(): number {
    return this.cache.cachedBytes();
  }

  gitdir(id: string): string {
    return this.dirs.gitdir(id);
  }

  /**
   * Runs `fn` holding the repository's write lock (in this process). `owner` names the caller (a request
   * id) and `fn` reports its steps through `progress`, so that a lock held too long can be told apart
   * (locks()). A caller that does not get the lock within the wait deadline, or that finds it held past
   * that deadline already, gets RepoBusyError; the holder itself is never interrupted.
   */
  async withLock<T>(
    id: string,
    fn: (progress: Progress) => Promise<T>,
    opts: { owner?: string; step?: string } = {},
  ): Promise<T> {
    this.gitdir(id);
    if (this.dueRecovery?.has(id)) await this.recoverDue(id);
    try {
      return await this.mutex.run(id, fn, opts);
    } catch (e) {
      if (e instanceof LockTimeoutError && e.key === id) throw new RepoBusyError(e);
      throw e;
    }
  }

  /** The repository locks held now: by whom, at which step, for how long. */
  locks(): HeldLock[] {
    return this.mutex.held();
  }

  // The repository directories (lib/git/repo-dirs.ts).

  exists(id: string): Promise<boolean> {
    return this.dirs.exists(id);
  }

  /** The existing repository id equal to `id` ignoring ASCII letter case, or null (RepoDirs.caseVariant). */
  caseVariant(id: string): Promise<string | null> {
    return this.dirs.caseVariant(id);
  }

  list(): Promise<string[]> {
    return this.dirs.list();
  }

  /** Creates an empty bare repository, whole or not at all; false when it already existed (RepoDirs.init). */
  init(id: string, opts: { creator?: string } = {}): Promise<boolean> {
    return this.dirs.init(id, opts);
  }

  /**
   * Takes a repository out of the store in one rename (RepoDirs.retire) and forgets what the store
   * remembers of it. Returns its new directory, for `reinstate` or removal. Callers hold withLock.
   */
  async retire(id: string): Promise<string> {
    const gitdir = this.gitdir(id);
    const dir = await this.dirs.retire(id);
    this.cache.reader.forget(gitdir);
    this.packs.forget(id);
    return dir;
  }

  /** Puts back a repository `retire` took out (its deletion could not be completed). Callers hold withLock. */
  reinstate(id: string, dir: string): Promise<void> {
    return this.dirs.reinstate(id, dir);
  }

  /** The directories of retired repositories still on disk (a crash or a failure came before their removal). */
  retired(): Promise<Array<{ id: string; dir: string }>> {
    return this.dirs.retired();
  }

  /** The user id recorded as the repository's creator when it was made, or null (RepoDirs.creatorOf). */
  creatorOf(id: string): Promise<string | null> {
    return this.dirs.creatorOf(id);
  }

  // The branch (lib/git/refs.ts).

  /** Removes lock and temporary files left by a process that died mid-write (BranchRefs.recover). */
  recover(id: string, force = false): Promise<void> {
    return this.refs.recover(id, force);
  }

  /** Clears leftovers of a crash in every repository; call once at boot, before serving. */
  async recoverAll(): Promise<void> {
    await this.dirs.removeLeftovers();
    for (const id of await this.list()) await this.recover(id, true);
  }

  /**
   * `recoverAll` without making a boot wait for every repository: what a crash left at the root is removed
   * now; each repository's leftovers (a dead writer's `main.lock`, temporary object and pack files) are
   * cleared before its first writer of this process's life gets the lock (withLock), and by `sweepRecovery`
   * for the rest. Readers never needed it: no reader sees a temporary file or a pack without its index.
   * Only one process writes these repositories.
   */
  async recoverLater(): Promise<void> {
    await this.dirs.removeLeftovers();
    const due = await this.list();
    this.dueRecovery = due.length > 0 ? new Set(due) : null;
  }

  /**
   * After `recoverLater`: clears the repositories still due, one at a time under its lock; resolves with how
   * many it looked at. Never rejects.
   */
  async sweepRecovery(): Promise<number> {
    const due = this.dueRecovery;
    const ids = [...(due ?? [])];
    for (const id of ids) {
      if (this.dueRecovery !== due) break;
      // A failure here is met again, and answered, by the repository's next writer.
      await this.recoverDue(id).catch(() => undefined);
      await new Promise((r) => setImmediate(r));
    }
    return ids.length;
  }

  /** Clears repository `id`'s crash leftovers once, under its lock (see recoverLater). */
  private recoverDue(id: string): Promise<void> {
    let run = this.recovering.get(id);
    if (!run) {
      run = this.mutex
        // A repository removed since boot has nothing left to clear.
        .run(id, async () => ((await this.exists(id)) ? this.recover(id, true) : undefined), { owner: 'recovery', step: 'clear crash leftovers' })
        .then(
          () => {
            this.recovering.delete(id);
            this.dueRecovery?.delete(id);
            if (this.dueRecovery?.size === 0) this.dueRecovery = null;
          },
          (e: unknown) => {
            this.recovering.delete(id);
            throw e;
          },
        );
      this.recovering.set(id, run);
    }
    return run;
  }

  /** The sha `main` points at, or null for a repository with no commit yet. */
  head(id: string): Promise<string | null> {
    return this.refs.head(id);
  }

  /**
   * Points the branch of a repository that has none yet at `sha` (an import), by git's lock-file protocol:
   * ConcurrentUpdateError when the branch exists meanwhile. Callers hold withLock.
   */
  startBranch(id: string, sha: string): Promise<void> {
    return this.refs.startBranch(id, sha);
  }

  // Reading objects (lib/git/read-cache.ts).

  readCommit(id: string, sha: string): Promise<CommitMeta> {
    return this.cache.readCommit(id, sha);
  }

  readTree(id: string, oid: string): Promise<TreeEntry[]> {
    return this.cache.readTree(id, oid);
  }

  /** Several trees at once, in the order asked (ReadCache.readTrees). */
  readTrees(id: string, oids: readonly string[]): Promise<TreeEntry[][]> {
    return this.cache.readTrees(id, oids);
  }

  readBlob(id: string, oid: string): Promise<Uint8Array> {
    return this.cache.readBlob(id, oid);
  }

  /** Several blobs at once (a pull), in the order asked (ReadCache.readBlobs). */
  readBlobs(id: string, oids: readonly string[]): Promise<Uint8Array[]> {
    return this.cache.readBlobs(id, oids);
  }

  /** Any object's type and raw content (what git hashes after its `<type> <size>\0` header). */
  readObject(id: string, oid: string): Promise<{ type: ObjectType; content: Uint8Array }> {
    return this.cache.readObject(id, oid);
  }

  /** Several objects as readObject gives each, in the order asked (ReadCache.readObjects). */
  readObjects(id: string, oids: readonly string[]): Promise<Array<{ type: ObjectType; content: Uint8Array }>> {
    return this.cache.readObjects(id, oids);
  }

  /** Several objects for a pack sent to git (lib/git/upload-pack.ts), in the order asked (ReadCache.readRecords). */
  readRecords(id: string, oids: readonly string[]): Promise<Array<{ record: Uint8Array } | { type: ObjectType; content: Uint8Array }>> {
    return this.cache.readRecords(id, oids);
  }

  /** The blob id of `path` in the tree of `commit`, or null when the commit lacks it. */
  blobAt(id: string, commit: string, path: string): Promise<string | null> {
    return this.cache.blobAt(id, commit, path);
  }

  /** The file's bytes at `commit`, or null when the commit lacks it. */
  readFileAt(id: string, commit: string, path: string): Promise<Uint8Array | null> {
    return this.cache.readFileAt(id, commit, path);
  }

  /** Every file at `commit`: path → blob id. */
  listFiles(id: string, commit: string | null): Promise<Map<string, string>> {
    return this.cache.listFiles(id, commit);
  }

  /** Paths whose content differs between two commits (`from` null = the empty tree), sorted. */
  changedPaths(id: string, from: string | null, to: string | null): Promise<PathChange[]> {
    return this.cache.changedPaths(id, from, to);
  }

  // Writing commits (lib/git/commit-batch.ts).

  /**
   * Writes one commit on top of `parent` holding every write and delete, and moves `main` to it, but
   * only if `main` still points at `parent` (ConcurrentUpdateError otherwise, nothing changed). Callers
   * hold `withLock`. Returns the new commit and the paths it actually changed; when nothing would
   * change, no commit is made and null is returned.
   */
  async commit(id: string, args: CommitArgs): Promise<{ meta: CommitMeta; changes: PathChange[] } | null> {
    const prepared = await this.prepareCommit(id, args);
    if (!prepared) return null;
    await prepared.publish();
    return prepared;
  }

  /**
   * The first half of `commit`: every object is durably on disk and the branch's lock file is taken
   * (git's `main.lock`, holding the new sha) after checking that the branch still points at `parent`
   * (ConcurrentUpdateError otherwise), but the branch has not moved. `publish()` moves it (rename of
   * the lock over the ref) and `abort()` gives the lock back. Callers hold `withLock` and
   * must call one of the two. Null when nothing would change (no lock taken). Its steps are reported
   * through `progress` (the caller's withLock).
   */
  async prepareCommit(id: string, args: CommitArgs, progress: Progress = noProgress): Promise<PreparedCommit | null> {
    const batch = this.batch(id, args.parent);
    const made = await batch.add(args);
    if (!made) return null;
    await batch.prepare(progress);
    return { meta: made.meta, changes: made.changes, publish: () => batch.publish(), abort: () => batch.abort() };
  }

  /**
   * A chain of commits built on `base` in memory, made durable together and published with one move of
   * the branch (commitBatch). Callers hold `withLock`.
   */
  batch(id: string, base: string | null): CommitBatch {
    return commitBatch({ fs: this.fs, dirs: this.dirs, refs: this.refs, cache: this.cache, packs: this.packs }, id, base);
  }

  // The packs (lib/git/pack-store.ts).

  /** Resolves once no pack merge is queued or running (for `id`, or any repository) and the filesystem is idle. */
  packMerges(id?: string): Promise<void> {
    return this.packs.packMerges(id);
  }

  /** Merges small packs when the repository has more than MAX_SMALL_PACKS of them (PackStore.mergePacks). Callers hold withLock. */
  mergePacks(id: string): Promise<void> {
    return this.packs.mergePacks(id);
  }

  /** Makes the multi-pack-index list exactly the large packs, but `removing` (PackStore.indexPacks). Callers hold withLock. */
  indexPacks(id: string, removing: readonly string[] = []): Promise<void> {
    return this.packs.indexPacks(id, removing);
  }

  /** Keeps the objects of an imported pack, every one checked (PackStore.keepImported). Callers hold withLock. */
  keepImported(id: string, pack: IndexedPack, copy?: (to: string) => Promise<void>): Promise<void> {
    return this.packs.keepImported(id, pack, copy);
  }
}
