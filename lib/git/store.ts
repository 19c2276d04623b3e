import {
  deflate,
  encodeObject,
  serializeTreeSorted,
  PACK_TYPE,
  packRecord,
  serializeCommit,
  serializeTree,
  sha1,
  webCodec,
  type ObjectCodec,
  type ObjectForm,
  type ObjectType,
} from './objects.ts';
import { buildPacks, copyableRecords, type PackEntry } from './pack.ts';
import { syncMidx } from './midx.ts';
import { ObjectReader, parseCommit, parseTree, type RawObject } from './object-reader.ts';
import { buildIdx, type IndexedPack } from './import.ts';
import { replacedName, type StoreFs } from './fs.ts';
import {
  ConcurrentUpdateError,
  LockTimeoutError,
  PathCollisionError,
  RepoBusyError,
  RepoNotFoundError,
  StoreError,
  UnknownShaError,
  UnsafeNameError,
} from '../errors.ts';
import { KeyedMutex, noProgress, type HeldLock, type Progress } from './lock.ts';
import { TimeSlice } from '../time-slice.ts';
import { ownBytes } from '../bytes.ts';
import { LruCache } from './lru.ts';
import { isSafeRepoId, pagePathProblem, storedPathProblem } from '../page/path.ts';

/**
 * The git store: one bare repository per project at `<root>/<id>.git`, branch `main`, readable by the
 * plain `git` command. Objects are encoded here (lib/git/objects.ts) into a staging area — one commit, or
 * a chain of them (`batch`, for group commit) — then flushed to disk durably together (StoreFs
 * writeDurable: temp file, fsync, rename, directory fsync); the branch moves once, by git's own lock-file
 * protocol with a check-and-set, under a per-repository lock. No working tree, no `.git/index`. Reads go
 * through lib/git/object-reader.ts, behind caches bounded by one byte budget (`cacheBytes`).
 */

export const BRANCH = 'main';
/** Name prefix of a retired (deleted) repository's directory until it is removed (GitStore.retire). */
export const RETIRED_PREFIX = '.deleted-';
const REF = `refs/heads/${BRANCH}`;
const STALE_LOCK_MS = 30_000;
/** How long a writer waits for a repository's lock before giving up with RepoBusyError. */
export const LOCK_WAIT_MS = 60_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The store's cache budget when none is given (bytes). */
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;
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

/** What a tree's entries hold in memory, estimated: the array, each entry object, its name and oid strings. */
const treeBytes = (t: TreeEntry[]) => {
  let n = 64 + 8 * t.length;
  for (const e of t) n += 200 + 2 * e.path.length;
  return n;
};

export interface CommitMeta {
  sha: string;
  parent: string | null;
  /** A merge's other parents (an imported history; the service's own commits have one parent at most). */
  merges?: string[];
  tree: string;
  author: string;
  email: string;
  /** Unix seconds. */
  time: number;
  /** Subject line. */
  message: string;
}

/** A path a commit touched: its new blob, or null when the commit deleted it. */
export interface PathChange {
  path: string;
  blob: string | null;
}

/** Repository ids hold ASCII only, so ASCII folding is the whole of "ignoring case" for them. */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase());


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

export interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
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
  private readonly mutex: KeyedMutex;
  /** `main.lock` files this store has created and not yet renamed or removed: never stale. */
  private readonly liveLocks = new Set<string>();
  private readonly known = new Set<string>();
  /** Loose and packed objects; keeps the pack indexes of recently read repositories (its share of the budget). */
  private readonly reader: ObjectReader;
  /** The objects of a chain being made durable, per repository (GitStore.batch's prepare). */
  private readonly inFlight = new Map<
    string,
    { trees: Map<string, TreeEntry[]>; metas: Map<string, CommitMeta>; blobs: Map<string, Uint8Array> }
  >();
  /** The share of the cache budget for RepoStore's head entries (bytes). */
  readonly headCacheBytes: number;
  private readonly blobs: LruCache<Uint8Array>;
  private readonly trees: LruCache<TreeEntry[]>;
  private readonly commits: LruCache<CommitMeta>;
  /** Small packs per repository as last counted (absent: not counted since boot). */
  private readonly smallPacks = new Map<string, number>();
  /** Repositories whose multi-pack-index lists every large pack, as last checked (absent: not since boot). */
  private readonly indexed = new Set<string>();
  /** Pack merges queued or running, per repository. */
  private readonly merges = new Map<string, Promise<void>>();

  constructor(opts: GitStoreOptions) {
    this.fs = opts.fs;
    this.root = opts.root.replace(/\/+$/, '');
    this.lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
    this.mutex = new KeyedMutex({ waitMs: this.lockWaitMs });
    const bytes = Math.max(0, opts.cacheBytes ?? DEFAULT_CACHE_BYTES);
    // Shares of the budget: blobs 3/8, trees 1/4, commits 1/8, pack indexes 1/8, head entries (RepoStore)
    // 1/8. Sizes are estimates of the JS heap each value holds (strings at 2 bytes a character, object headers).
    this.blobs = new LruCache(Math.floor((bytes * 3) / 8), (b) => b.byteLength + 96);
    this.trees = new LruCache(Math.floor(bytes / 4), treeBytes);
    this.commits = new LruCache(Math.floor(bytes / 8), (c) => 320 + 2 * (c.author.length + c.email.length + c.message.length));
    this.headCacheBytes = Math.floor(bytes / 8);
    this.reader = new ObjectReader({ fs: this.fs, cacheBytes: Math.floor(bytes / 8) });
  }

  /** Bytes held by the store's own caches now (blobs, trees, commits, pack indexes). */
  cachedBytes(): number {
    return this.blobs.bytes + this.trees.bytes + this.commits.bytes + this.reader.cachedBytes;
  }

  gitdir(id: string): string {
    if (!isSafeRepoId(id)) throw new UnsafeNameError(`invalid repo id: ${JSON.stringify(id)}`);
    return `${this.root}/${id}.git`;
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

  async exists(id: string): Promise<boolean> {
    // A repository seen once stays known until it is retired (`retire`, under its lock).
    if (this.known.has(id)) return true;
    if (!(await this.fs.exists(`${this.gitdir(id)}/HEAD`))) return false;
    // On a case-insensitive filesystem `ACME.git/HEAD` opens `acme.git/HEAD`: only the exact spelling
    // among the directory's entries is this repository.
    if (!(await this.fs.readdir(this.root)).includes(`${id}.git`)) return false;
    this.known.add(id);
    return true;
  }

  /**
   * The id of an existing repository that equals `id` ignoring ASCII letter case (possibly `id` itself),
   * or null. Ids are unique ignoring case, because on case-insensitive filesystems two such ids would be
   * one directory.
   */
  async caseVariant(id: string): Promise<string | null> {
    const folded = asciiLower(id);
    for (const n of await this.fs.readdir(this.root)) {
      if (!n.endsWith('.git')) continue;
      const other = n.slice(0, -4);
      if (asciiLower(other) === folded && isSafeRepoId(other) && (await this.fs.exists(`${this.root}/${n}/HEAD`))) {
        return other;
      }
    }
    return null;
  }

  async list(): Promise<string[]> {
    const names = await this.fs.readdir(this.root);
    const ids: string[] = [];
    for (const n of names) {
      if (!n.endsWith('.git')) continue;
      const id = n.slice(0, -4);
      if (isSafeRepoId(id) && (await this.fs.exists(`${this.root}/${n}/HEAD`))) ids.push(id);
    }
    return ids.sort();
  }

  /**
   * Creates an empty bare repository. The repository is assembled in a temporary directory and renamed
   * into place, so it appears whole or not at all. Returns false when it already existed.
   */
  async init(id: string, opts: { creator?: string } = {}): Promise<boolean> {
    const gitdir = this.gitdir(id);
    if (await this.exists(id)) return false;
    await this.fs.mkdirp(this.root);
    const tmp = `${this.root}/.init-${id}-${Math.random().toString(36).slice(2)}`;
    try {
      for (const d of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info']) {
        await this.fs.mkdirp(`${tmp}/${d}`);
      }
      await this.fs.writeDurable(
        [
          { path: `${tmp}/HEAD`, data: encoder.encode(`ref: ${REF}\n`) },
          {
            path: `${tmp}/config`,
            data: encoder.encode(
              '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n' +
                (opts.creator && /^[A-Za-z0-9._:@-]{1,200}$/.test(opts.creator) ? `[kr]\n\tcreator = ${opts.creator}\n` : ''),
            ),
          },
          { path: `${tmp}/description`, data: encoder.encode(`Knowledge repository ${id}\n`) },
        ],
        tmp,
      );
      try {
        await this.fs.renameDurable(tmp, gitdir);
      } catch (e) {
        if (await this.exists(id)) return false;
        throw e;
      }
      return true;
    } finally {
      await this.fs.removeTree(tmp);
    }
  }

  /**
   * Takes a repository out of the store in one rename (the moment it stops existing): its directory becomes
   * `<root>/.deleted-<id>-<random>`, which no listing takes for a repository, and what the store remembers of
   * it is forgotten. Returns that directory, for `reinstate` or removal. Callers hold withLock.
   */
  async retire(id: string): Promise<string> {
    const gitdir = this.gitdir(id);
    const dir = `${this.root}/${RETIRED_PREFIX}${id}-${Math.random().toString(36).slice(2)}`;
    await this.fs.renameDurable(gitdir, dir);
    this.known.delete(id);
    this.reader.forget(gitdir);
    this.smallPacks.delete(id);
    return dir;
  }

  /** Puts back a repository `retire` took out (its deletion could not be completed). Callers hold withLock. */
  async reinstate(id: string, dir: string): Promise<void> {
    await this.fs.renameDurable(dir, this.gitdir(id));
  }

  /** The directories of retired repositories still on disk (a crash or a failure came before their removal). */
  async retired(): Promise<Array<{ id: string; dir: string }>> {
    const out: Array<{ id: string; dir: string }> = [];
    for (const n of await this.fs.readdir(this.root)) {
      if (!n.startsWith(RETIRED_PREFIX)) continue;
      const id = n.slice(RETIRED_PREFIX.length, n.lastIndexOf('-'));
      if (isSafeRepoId(id)) out.push({ id, dir: `${this.root}/${n}` });
    }
    return out;
  }

  /**
   * The user id recorded as the repository's creator when it was made (`kr.creator` in its config,
   * written atomically with the repository itself), or null.
   */
  async creatorOf(id: string): Promise<string | null> {
    const config = await this.fs.readFile(`${this.gitdir(id)}/config`);
    if (!config) return null;
    const m = /^\[kr\][^[]*?^\s*creator\s*=\s*(\S+)\s*$/m.exec(decoder.decode(config));
    return m ? m[1]! : null;
  }

  /**
   * Removes lock and temporary files left by a process that died mid-write: a `main.lock` older than
   * STALE_LOCK_MS (any age with `force`, at boot); with `force`, temporary object and pack files and the
   * ref's previous file if it still has its second name. A lock this store took itself and still holds is live
   * however old it is (its writer is slow, not dead) and is left alone.
   */
  async recover(id: string, force = false): Promise<void> {
    const gitdir = this.gitdir(id);
    const lock = `${gitdir}/${REF}.lock`;
    const mtime = this.liveLocks.has(lock) ? null : await this.fs.mtimeMs(lock);
    if (mtime !== null && (force || Date.now() - mtime > STALE_LOCK_MS)) await this.fs.unlink(lock);
    if (force) {
      // The ref's previous file, still linked when a crash came before it was freed (StoreFs.renameDurable).
      await this.fs.unlink(`${gitdir}/refs/heads/${replacedName(BRANCH)}`);
      for (const n of await this.fs.readdir(`${gitdir}/objects`)) {
        if (n.startsWith('tmp_obj_')) await this.fs.unlink(`${gitdir}/objects/${n}`);
      }
      // A pack being written (temporary files), or a merge cut short between its deletions (a .pack whose
      // .idx is gone: no reader can see it, and its objects are in the merged pack).
      const packDir = `${gitdir}/objects/pack`;
      const names = await this.fs.readdir(packDir);
      const idx = new Set(names.filter((n) => n.endsWith('.idx')).map((n) => n.slice(0, -4)));
      for (const n of names) {
        if (n.startsWith('tmp_pack_') || n.startsWith('tmp_idx_') || (n.startsWith('pack-') && n.endsWith('.pack') && !idx.has(n.slice(0, -5)))) {
          await this.fs.unlink(`${packDir}/${n}`);
        }
      }
    }
  }

  /** Clears leftovers of a crash in every repository; call once at boot, before serving. */
  async recoverAll(): Promise<void> {
    for (const n of await this.fs.readdir(this.root)) {
      // A repository being made, or an import's body (lib/repo/import-store.ts), when the process died.
      if (n.startsWith('.init-') || n.startsWith('.import-')) await this.fs.removeTree(`${this.root}/${n}`);
    }
    for (const id of await this.list()) await this.recover(id, true);
  }

  /** The sha `main` points at, or null for a repository with no commit yet. */
  async head(id: string): Promise<string | null> {
    const gitdir = this.gitdir(id);
    const loose = await this.fs.readFile(`${gitdir}/${REF}`);
    if (loose) {
      const sha = decoder.decode(loose).trim();
      if (/^[0-9a-f]{40}$/.test(sha)) return sha;
    }
    const packed = await this.fs.readFile(`${gitdir}/packed-refs`);
    if (packed) {
      for (const line of decoder.decode(packed).split('\n')) {
        const [sha, name] = line.split(' ');
        if (name === REF && sha && /^[0-9a-f]{40}$/.test(sha)) return sha;
      }
    }
    if (!(await this.exists(id))) throw new RepoNotFoundError(id);
    return null;
  }

  /** The object `oid` of the repository, of type `want` (any of blob, tree, commit when absent). */
  private async raw(id: string, oid: string, want?: RawObject['type']): Promise<RawObject> {
    const o = await this.reader.read(this.gitdir(id), oid);
    if (want ? o.type !== want : o.type === 'tag') throw new StoreError(`object ${oid} is a ${o.type}, not a ${want ?? 'blob, tree or commit'}`);
    return o;
  }

  async readCommit(id: string, sha: string): Promise<CommitMeta> {
    const key = `${id}:${sha}`;
    const hit = this.commits.get(key) ?? this.inFlight.get(id)?.metas.get(sha);
    if (hit) return hit;
    let c;
    try {
      c = parseCommit((await this.raw(id, sha, 'commit')).content);
    } catch (e) {
      if (e instanceof UnsafeNameError) throw e;
      throw new UnknownShaError(sha);
    }
    const meta: CommitMeta = {
      sha,
      parent: c.parents[0] ?? null,
      tree: c.tree,
      author: c.author.name,
      email: c.author.email,
      time: c.author.timestamp,
      message: c.message.split('\n')[0] ?? '',
    };
    if (c.parents.length > 1) meta.merges = c.parents.slice(1);
    this.commits.set(key, meta);
    return meta;
  }

  async readTree(id: string, oid: string): Promise<TreeEntry[]> {
    const key = `${id}:${oid}`;
    const hit = this.trees.get(key) ?? this.inFlight.get(id)?.trees.get(oid);
    if (hit) return hit;
    const entries: TreeEntry[] = parseTree((await this.raw(id, oid, 'tree')).content);
    this.trees.set(key, entries);
    return entries;
  }

  /**
   * Several trees at once, in the order asked: those cached from memory, the others read in pack order
   * (ObjectReader.readMany) and cached as readTree caches them.
   */
  async readTrees(id: string, oids: readonly string[]): Promise<TreeEntry[][]> {
    const out: TreeEntry[][] = new Array(oids.length);
    const missing: number[] = [];
    const inFlight = this.inFlight.get(id);
    oids.forEach((oid, i) => {
      const hit = this.trees.get(`${id}:${oid}`) ?? inFlight?.trees.get(oid);
      if (hit) out[i] = hit;
      else missing.push(i);
    });
    if (missing.length === 0) return out;
    const read = await this.reader.readMany(this.gitdir(id), missing.map((i) => oids[i]!));
    read.forEach((o, k) => {
      const oid = oids[missing[k]!]!;
      if (o.type !== 'tree') throw new StoreError(`object ${oid} is a ${o.type}, not a tree`);
      const entries: TreeEntry[] = parseTree(o.content);
      this.trees.set(`${id}:${oid}`, entries);
      out[missing[k]!] = entries;
    });
    return out;
  }

  async readBlob(id: string, oid: string): Promise<Uint8Array> {
    const key = `${id}:${oid}`;
    const hit = this.blobs.get(key) ?? this.inFlight.get(id)?.blobs.get(oid);
    if (hit) return hit;
    const blob = ownBytes((await this.raw(id, oid, 'blob')).content);
    this.blobs.set(key, blob);
    return blob;
  }

  /**
   * Several blobs at once (a pull): those cached from memory, the others read in pack order
   * (ObjectReader.readMany), in the order asked. Each as readBlob gives it (StoreError for an object that
   * is not a blob).
   */
  async readBlobs(id: string, oids: readonly string[]): Promise<Uint8Array[]> {
    const out: Uint8Array[] = new Array(oids.length);
    const missing: number[] = [];
    const inFlight = this.inFlight.get(id);
    oids.forEach((oid, i) => {
      const hit = this.blobs.get(`${id}:${oid}`) ?? inFlight?.blobs.get(oid);
      if (hit) out[i] = hit;
      else missing.push(i);
    });
    if (missing.length === 0) return out;
    const read = await this.reader.readMany(this.gitdir(id), missing.map((i) => oids[i]!));
    // A read that would fill more than half the blob cache (a full pull) is not kept: it would only push
    // out what is read often.
    const keep = read.reduce((n, o) => n + o.content.byteLength + 96, 0) <= this.blobs.limit / 2;
    read.forEach((o, k) => {
      const oid = oids[missing[k]!]!;
      if (o.type !== 'blob') throw new StoreError(`object ${oid} is a ${o.type}, not a blob`);
      out[missing[k]!] = o.content;
      if (keep) this.blobs.set(`${id}:${oid}`, ownBytes(o.content));
    });
    return out;
  }

  /** Any object's type and raw content (what git hashes after its `<type> <size>\0` header). */
  async readObject(id: string, oid: string): Promise<{ type: ObjectType; content: Uint8Array }> {
    const o = await this.raw(id, oid);
    return { type: o.type as ObjectType, content: o.content };
  }

  /** Several objects as readObject gives each, read in pack order (ObjectReader.readMany), in the order asked. */
  async readObjects(id: string, oids: readonly string[]): Promise<Array<{ type: ObjectType; content: Uint8Array }>> {
    const read = await this.reader.readMany(this.gitdir(id), oids);
    return read.map((o, i) => {
      if (o.type === 'tag') throw new StoreError(`object ${oids[i]} is a tag, not a blob, tree or commit`);
      return { type: o.type, content: o.content };
    });
  }

  /**
   * Several objects for a pack sent to git (lib/git/upload-pack.ts), in the order asked: each stored whole in a
   * pack as its record's bytes as they are, any other as readObject gives it (ObjectReader.readRecords).
   */
  async readRecords(id: string, oids: readonly string[]): Promise<Array<{ record: Uint8Array } | { type: ObjectType; content: Uint8Array }>> {
    const read = await this.reader.readRecords(this.gitdir(id), oids);
    return read.map((o, i) => {
      if ('type' in o && o.type === 'tag') throw new StoreError(`object ${oids[i]} is a tag, not a blob, tree or commit`);
      return o as { record: Uint8Array } | { type: ObjectType; content: Uint8Array };
    });
  }

  /** The blob id of `path` in the tree of `commit`, or null when the commit lacks it. */
  async blobAt(id: string, commit: string, path: string): Promise<string | null> {
    this.checkPath(path);
    let tree = (await this.readCommit(id, commit)).tree;
    const segments = path.split('/');
    for (let i = 0; i < segments.length; i++) {
      const entry = (await this.readTree(id, tree)).find((e) => e.path === segments[i]);
      if (!entry) return null;
      if (i === segments.length - 1) return entry.type === 'blob' ? entry.oid : null;
      if (entry.type !== 'tree') return null;
      tree = entry.oid;
    }
    return null;
  }

  /** The file's bytes at `commit`, or null when the commit lacks it. */
  async readFileAt(id: string, commit: string, path: string): Promise<Uint8Array | null> {
    const blob = await this.blobAt(id, commit, path);
    return blob ? this.readBlob(id, blob) : null;
  }

  /** Every file at `commit`: path → blob id. */
  async listFiles(id: string, commit: string | null): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!commit) return out;
    const walk = async (tree: string, prefix: string) => {
      for (const e of await this.readTree(id, tree)) {
        if (e.type === 'tree') await walk(e.oid, `${prefix}${e.path}/`);
        else if (e.type === 'blob') out.set(`${prefix}${e.path}`, e.oid);
      }
    };
    await walk((await this.readCommit(id, commit)).tree, '');
    return out;
  }

  /** Paths whose content differs between two commits (`from` null = the empty tree), sorted. */
  async changedPaths(id: string, from: string | null, to: string | null): Promise<PathChange[]> {
    const treeOf = async (c: string | null) => (c ? (await this.readCommit(id, c)).tree : null);
    const out: PathChange[] = [];
    await this.diffTrees(id, await treeOf(from), await treeOf(to), '', out);
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  private async diffTrees(id: string, a: string | null, b: string | null, prefix: string, out: PathChange[]) {
    if (a === b) return;
    const ea = new Map((a ? await this.readTree(id, a) : []).map((e) => [e.path, e]));
    const eb = new Map((b ? await this.readTree(id, b) : []).map((e) => [e.path, e]));
    for (const name of new Set([...ea.keys(), ...eb.keys()])) {
      const x = ea.get(name);
      const y = eb.get(name);
      if (x && y && x.oid === y.oid && x.type === y.type) continue;
      const path = `${prefix}${name}`;
      const xTree = x?.type === 'tree' ? x.oid : null;
      const yTree = y?.type === 'tree' ? y.oid : null;
      if (xTree || yTree) await this.diffTrees(id, xTree, yTree, `${path}/`, out);
      if (y?.type === 'blob') out.push({ path, blob: y.oid });
      else if (x?.type === 'blob') out.push({ path, blob: null });
    }
  }

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
   * A chain of commits built on `base` in memory (each `add` is one commit whose parent is the previous
   * one), then made durable together: every object of every commit written in one durable write, the
   * branch's lock taken once with the check-and-set against `base`, and the branch moved once, to the
   * last commit (`publish`). A failed `add` leaves the chain as it was. Callers hold `withLock`.
   */
  batch(id: string, base: string | null): CommitBatch {
    const gitdir = this.gitdir(id);
    // Records of the group's pack, and loose objects (for a commit that would make the pack large, or a
    // filesystem without packs).
    const packed = new Map<string, Uint8Array>();
    const loose = new Map<string, Uint8Array>();
    const trees = new Map<string, TreeEntry[]>();
    const metas = new Map<string, CommitMeta>();
    const blobs = new Map<string, Uint8Array>();
    const commits: Array<{ meta: CommitMeta; changes: PathChange[] }> = [];
    const codec = this.fs.codec ?? webCodec;
    // One pack per batch where the filesystem writes packs (split at MAX_PACK_BYTES), else loose objects.
    let head = base;
    let bytes = 0;
    let state: 'open' | 'prepared' | 'settled' = 'open';
    const refPath = `${gitdir}/${REF}`;
    const lockPath = `${refPath}.lock`;
    const readTree = async (oid: string) => trees.get(oid) ?? this.readTree(id, oid);
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
          this.checkPath(w.path, w.content !== null);
          if (slice.due) await slice.next();
        }
        const form: ObjectForm = this.fs.packs ? 'pack' : 'loose';
        const into = form === 'pack' ? packed : loose;
        const stage = new ObjectStage(codec, form);
        // Blobs first; a write whose blob equals the current one changes nothing.
        const byPath = new Map<string, string | null>();
        for (const w of args.writes) {
          byPath.set(w.path, w.content === null ? null : await stage.put('blob', w.content));
          if (slice.due) await slice.next();
        }
        const parentTree = head ? (metas.get(head) ?? (await this.readCommit(id, head))).tree : null;
        const changes: PathChange[] = [];
        const newTree = await this.rewriteTree(readTree, stage, parentTree, byPath, '', changes, slice);
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
        this.inFlight.set(id, inFlight);
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
          packed.size > 0 ? this.writePacks(id, [...packed].map(([oid, record]) => ({ oid, record })), () => issue(true)) : undefined,
          loose.size > 0
            ? this.fs.writeDurable(
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
            this.takeLock(id, lockPath, sha).then(async ({ flushed }) => {
              // Whatever fails from here on (the check, or reading the ref) gives the lock back.
              let current: string | null;
              try {
                current = await this.head(id);
              } catch (e) {
                await this.dropLock(lockPath);
                throw e;
              }
              if (current !== base) {
                await this.dropLock(lockPath);
                throw new ConcurrentUpdateError(`${REF} moved from ${base ?? '(none)'} to ${current ?? '(none)'}`);
              }
              // The branch is ours until publish or abort: what goes with the chain can start now.
              try {
                await Promise.all([flushed, issued.then((ok) => (ok ? alongside?.() : undefined))]);
              } catch (e) {
                await this.dropLock(lockPath);
                throw e;
              }
            }),
          ),
        ]);
        if (this.inFlight.get(id) === inFlight) this.inFlight.delete(id);
        if (written.status === 'rejected' || lock.status === 'rejected') {
          state = 'settled';
          // A failed lock step has already released (or never taken) the lock.
          if (lock.status === 'fulfilled') await this.dropLock(lockPath);
          throw written.status === 'rejected' ? written.reason : (lock as PromiseRejectedResult).reason;
        }
        for (const [oid, entries] of trees) this.trees.set(`${id}:${oid}`, entries);
        for (const [sha, meta] of metas) this.commits.set(`${id}:${sha}`, meta);
        for (const [oid, content] of blobs) this.blobs.set(`${id}:${oid}`, ownBytes(content));
      },
      publish: async () => {
        if (state !== 'prepared') throw new StoreError('commit batch not prepared, or already published or aborted');
        state = 'settled';
        try {
          await this.fs.renameDurable(lockPath, refPath);
          this.liveLocks.delete(lockPath);
        } catch (e) {
          await this.dropLock(lockPath);
          throw e;
        }
        if (packed.size > 0) this.scheduleMerge(id);
      },
      abort: async () => {
        if (state === 'settled') return;
        const held = state === 'prepared';
        state = 'settled';
        if (held) await this.dropLock(lockPath);
      },
    };
    return batch;
  }

  /**
   * Takes `main.lock` (O_EXCL), clearing a stale one left by a crash first if needed. Resolves once the
   * lock is held; `flushed` once its bytes are on disk too (where the filesystem can tell the two apart,
   * the holder goes on while the flush runs).
   */
  private async takeLock(id: string, lockPath: string, sha: string): Promise<{ flushed: Promise<void> }> {
    const data = encoder.encode(`${sha}\n`);
    const create = async (): Promise<{ flushed: Promise<void> } | null> => {
      if (this.fs.createExclusiveEarly) return this.fs.createExclusiveEarly(lockPath, data);
      return (await this.fs.createExclusive(lockPath, data)) ? { flushed: Promise.resolve() } : null;
    };
    let made = await create();
    if (!made) {
      await this.recover(id);
      made = await create();
      if (!made) throw new ConcurrentUpdateError(`${REF} is locked by another writer`);
    }
    this.liveLocks.add(lockPath);
    return made;
  }

  /**
   * Writes staged pack records as one pack (more only past MAX_PACK_BYTES), durably, and counts them.
   * `issued` is called once the first pack's flushes are requested.
   */
  private async writePacks(id: string, entries: PackEntry[], issued?: () => void): Promise<void> {
    const packs = this.fs.packs!;
    const dir = `${this.gitdir(id)}/objects/pack`;
    const built = await buildPacks(this.fs.codec ?? webCodec, entries);
    for (const b of built) {
      await packs.write(dir, b.name, b.pack, b.idx, issued);
      this.reader.added(this.gitdir(id), b.name, b.idx, b.pack.byteLength);
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
  private scheduleMerge(id: string): void {
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
    const gitdir = this.gitdir(id);
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
        const o = await this.readObject(id, oid);
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
    this.reader.forget(gitdir);
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
    const gitdir = this.gitdir(id);
    const dir = `${gitdir}/objects/pack`;
    const gone = new Set(removing);
    const large = (await packs.list(dir)).filter((p) => p.bytes >= SMALL_PACK_BYTES && !gone.has(p.name)).map((p) => p.name);
    if (await syncMidx(this.fs, dir, large, `${gitdir}/objects`)) this.reader.forget(gitdir);
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
    const gitdir = this.gitdir(id);
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
      this.reader.forget(gitdir);
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

  /**
   * Points the branch of a repository that has none yet at `sha` (an import), by git's lock-file protocol:
   * ConcurrentUpdateError when the branch exists meanwhile. Callers hold withLock.
   */
  async startBranch(id: string, sha: string): Promise<void> {
    const refPath = `${this.gitdir(id)}/${REF}`;
    const lockPath = `${refPath}.lock`;
    const { flushed } = await this.takeLock(id, lockPath, sha);
    try {
      await flushed;
      const current = await this.head(id);
      if (current !== null) throw new ConcurrentUpdateError(`${REF} moved from (none) to ${current}`);
      await this.fs.renameDurable(lockPath, refPath);
      this.liveLocks.delete(lockPath);
    } catch (e) {
      if (this.liveLocks.has(lockPath)) await this.dropLock(lockPath);
      throw e;
    }
  }

  /** Gives `main.lock` back without moving the branch. */
  private async dropLock(lockPath: string): Promise<void> {
    try {
      await this.fs.unlink(lockPath);
    } finally {
      this.liveLocks.delete(lockPath);
    }
  }

  /** Applies `byPath` (paths relative to the repository root) below `prefix` to `tree`; null = empty. */
  private async rewriteTree(
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
      const after = await this.rewriteTree(readTree, stage, before, sub, `${prefix}${name}/`, changes, slice);
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

  /** Paths written with content must pass every rule; reads and deletions only have to name a page. */
  private checkPath(path: string, write = false): void {
    const problem = write ? pagePathProblem(path) : storedPathProblem(path);
    if (problem) throw new UnsafeNameError(`invalid page path: ${path} (${problem})`);
  }
}
