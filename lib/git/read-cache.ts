import { StoreError, UnknownShaError, UnsafeNameError } from '../core/errors.ts';
import { ownBytes } from '../util/bytes.ts';
import { pagePathProblem, storedPathProblem } from '../core/page/path.ts';
import type { StoreFs } from './fs.ts';
import { LruCache } from './lru.ts';
import { ObjectReader, parseCommit, parseTree, type RawObject } from './object-reader.ts';
import type { ObjectType } from './objects.ts';

/**
 * Reading a repository's objects as the service uses them — commits, trees, blobs, a path at a commit, the
 * files of a commit, the paths two commits differ in — through lib/git/object-reader.ts (loose and packed
 * objects), behind caches bounded by the store's byte budget. Objects are immutable, so caching them is
 * always safe; a chain of commits being made durable is read from memory meanwhile (`inFlight`).
 */

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

export interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

/** Paths written with content must pass every rule; reads and deletions only have to name a page. */
export function checkPath(path: string, write = false): void {
  const problem = write ? pagePathProblem(path) : storedPathProblem(path);
  if (problem) throw new UnsafeNameError(`invalid page path: ${path} (${problem})`);
}

/** What a tree's entries hold in memory, estimated: the array, each entry object, its name and oid strings. */
const treeBytes = (t: TreeEntry[]) => {
  let n = 64 + 8 * t.length;
  for (const e of t) n += 200 + 2 * e.path.length;
  return n;
};

/** The objects of a chain being made durable (CommitBatch.prepare), readable before they are on disk. */
export interface InFlightObjects {
  trees: Map<string, TreeEntry[]>;
  metas: Map<string, CommitMeta>;
  blobs: Map<string, Uint8Array>;
}

export class ReadCache {
  /** Loose and packed objects; keeps the pack indexes of recently read repositories (its share of the budget). */
  readonly reader: ObjectReader;
  /** The objects of a chain being made durable, per repository (CommitBatch.prepare). */
  readonly inFlight = new Map<string, InFlightObjects>();
  readonly blobs: LruCache<Uint8Array>;
  readonly trees: LruCache<TreeEntry[]>;
  readonly commits: LruCache<CommitMeta>;

  /** `budget`: each cache's share of the store's budget, in bytes (the pack indexes' is the reader's). */
  constructor(
    fs: StoreFs,
    private readonly dirs: { gitdir(id: string): string },
    budget: { blobs: number; trees: number; commits: number; packIndexes: number },
  ) {
    // Sizes are estimates of the JS heap each value holds (strings at 2 bytes a character, object headers).
    this.blobs = new LruCache(budget.blobs, (b) => b.byteLength + 96);
    this.trees = new LruCache(budget.trees, treeBytes);
    this.commits = new LruCache(budget.commits, (c) => 320 + 2 * (c.author.length + c.email.length + c.message.length));
    this.reader = new ObjectReader({ fs, cacheBytes: budget.packIndexes });
  }

  /** Bytes held by the caches now (blobs, trees, commits, pack indexes). */
  cachedBytes(): number {
    return this.blobs.bytes + this.trees.bytes + this.commits.bytes + this.reader.cachedBytes;
  }

  /** Keeps a durable chain's objects (CommitBatch.prepare) in the caches. */
  keep(id: string, objects: InFlightObjects): void {
    for (const [oid, entries] of objects.trees) this.trees.set(`${id}:${oid}`, entries);
    for (const [sha, meta] of objects.metas) this.commits.set(`${id}:${sha}`, meta);
    for (const [oid, content] of objects.blobs) this.blobs.set(`${id}:${oid}`, ownBytes(content));
  }

  /** The object `oid` of the repository, of type `want` (any of blob, tree, commit when absent). */
  private async raw(id: string, oid: string, want?: RawObject['type']): Promise<RawObject> {
    const o = await this.reader.read(this.dirs.gitdir(id), oid);
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
    const read = await this.reader.readMany(this.dirs.gitdir(id), missing.map((i) => oids[i]!));
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
    const read = await this.reader.readMany(this.dirs.gitdir(id), missing.map((i) => oids[i]!));
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
    const read = await this.reader.readMany(this.dirs.gitdir(id), oids);
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
    const read = await this.reader.readRecords(this.dirs.gitdir(id), oids);
    return read.map((o, i) => {
      if ('type' in o && o.type === 'tag') throw new StoreError(`object ${oids[i]} is a tag, not a blob, tree or commit`);
      return o as { record: Uint8Array } | { type: ObjectType; content: Uint8Array };
    });
  }

  /** The blob id of `path` in the tree of `commit`, or null when the commit lacks it. */
  async blobAt(id: string, commit: string, path: string): Promise<string | null> {
    checkPath(path);
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
}
