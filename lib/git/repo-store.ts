import type { Clock } from '../clock.ts';
import type { Repos } from './repos.ts';
import { buildBundle } from './bundle.ts';
import { PathIndex, type HeadEntry, type IndexedCommit } from './path-index.ts';
import { KeyedMutex, LockTimeoutError, type HeldLock, type Progress } from './lock.ts';
import { foldPathCase } from '../page/path.ts';
import { parseQuery } from '../search/query.ts';
import type { SearchOptions, SearchPage } from '../search/results.ts';
import {
  ConcurrentUpdateError,
  GitStore,
  RepoBusyError,
  RepoNotFoundError,
  StoreError,
  UnknownShaError,
  type FileWrite,
} from './store.ts';

/**
 * Repositories as the rest of the service sees them: the git store for content, the derived index for
 * every question about history, kept level with each other. Every write runs under the repository's
 * lock; every read first makes sure the index has caught up with git (once per repository per process,
 * and again after anything went wrong).
 */

/**
 * A push would create a page whose path differs only in letter case (foldPathCase) from another page's:
 * one at head, or another new one in the same push. On a case-insensitive disk both would be one file.
 */
export class PathCaseError extends StoreError {
  constructor(
    readonly path: string,
    readonly existing: string,
  ) {
    super(`path "${path}" differs only in letter case from "${existing}"`);
  }
}

export interface PushFile {
  path: string;
  /** New content, or null to delete the page. */
  content: Uint8Array | null;
  /** The commit the client last saw for this page; omitted = overwrite. */
  parentSha?: string;
}

export type PushOutcome =
  | { path: string; kind: 'committed' }
  | { path: string; kind: 'unchanged'; sha: string }
  | { path: string; kind: 'absent' }
  | {
      path: string;
      kind: 'conflict';
      currentSha: string;
      currentContent: Uint8Array;
      expectedParentSha: string;
      ancestorContent?: Uint8Array;
    };

export interface PushResult {
  /** The branch head after the push ('' for a repository that still has no commit). */
  head: string;
  /** The commit made, or null when nothing was committed. */
  commit: IndexedCommit | null;
  outcomes: PushOutcome[];
  /** The paths the commit changed, in push order. */
  committedPaths: string[];
}

/** Blob reads a pull keeps in flight. */
const PULL_READS_IN_FLIGHT = 32;

/** `Promise.all(items.map(fn))` with at most `limit` calls running at once; results in input order. */
async function mapBounded<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Head entries kept per repository before the map starts over. */
const HEAD_CACHE_ENTRIES = 20_000;

export class RepoStore implements Repos {
  readonly index: PathIndex;
  private readonly creationMutex: KeyedMutex;
  /**
   * Serialises creating (and claiming) a repository id, separately from the write lock. Every push takes
   * it too, so a caller gives up with RepoBusyError after the git store's lock wait (LOCK_WAIT_MS by
   * default) rather than queue behind a holder that does not come back; creationLocks() shows who holds
   * it, for the watchdog.
   */
  readonly creation = {
    run: <T>(key: string, fn: () => Promise<T>): Promise<T> =>
      this.creationMutex.run(key, fn, { owner: 'create or authorize' }).catch((e: unknown) => {
        throw e instanceof LockTimeoutError && e.key === key ? new RepoBusyError(e) : e;
      }),
  };
  private readonly synced = new Map<string, Promise<void>>();
  /**
   * Head entries already looked up, per repository, with a generation that every write bumps: a read
   * that raced a write never stores what it saw (see headEntry).
   */
  private readonly heads = new Map<string, { gen: number; entries: Map<string, HeadEntry | null> }>();

  constructor(
    readonly git: GitStore,
    index: PathIndex,
    private readonly clock: Clock,
  ) {
    this.index = index;
    this.creationMutex = new KeyedMutex({ waitMs: git.lockWaitMs });
  }

  exists(id: string): Promise<boolean> {
    return this.git.exists(id);
  }

  /** The creation locks held now (GitStore.locks() has the write locks). */
  creationLocks(): HeldLock[] {
    return this.creationMutex.held();
  }

  list(): Promise<string[]> {
    return this.git.list();
  }

  caseVariant(id: string): Promise<string | null> {
    return this.git.caseVariant(id);
  }

  creatorOf(id: string): Promise<string | null> {
    return this.git.creatorOf(id);
  }

  readBlob(id: string, oid: string): Promise<Uint8Array> {
    return this.git.readBlob(id, oid);
  }

  async bundle(id: string): Promise<Uint8Array<ArrayBuffer> | null> {
    await this.ready(id);
    return buildBundle(this.git, id);
  }

  /**
   * Creates the repository if missing; true when this call created it. `creator` (a user id) is kept in
   * the repository itself, so that a crash before the owner is recorded cannot orphan it.
   */
  create(id: string, creator?: string): Promise<boolean> {
    return this.git.init(id, { creator });
  }

  /** Waits until the index reflects the branch in git. */
  ready(id: string): Promise<void> {
    let p = this.synced.get(id);
    if (!p) {
      p = this.git.withLock(
        id,
        async () => {
          await this.index.sync(id, this.git);
        },
        { owner: 'index sync', step: 'sync index' },
      );
      this.synced.set(id, p);
      p.catch(() => this.synced.delete(id));
    }
    return p;
  }

  /** Forgets what this process knows of the index, so the next access re-checks it against git. */
  invalidate(id?: string): void {
    if (id === undefined) {
      this.synced.clear();
      for (const h of this.heads.values()) this.forgetHeads(h);
    } else {
      this.synced.delete(id);
      const h = this.heads.get(id);
      if (h) this.forgetHeads(h);
    }
  }

  private forgetHeads(h: { gen: number; entries: Map<string, HeadEntry | null> }): void {
    h.gen += 1;
    h.entries.clear();
  }

  /** The page's head entry, from memory when this process already looked it up since the last write. */
  private async headEntry(id: string, path: string): Promise<HeadEntry | null> {
    let h = this.heads.get(id);
    if (!h) this.heads.set(id, (h = { gen: 0, entries: new Map() }));
    const hit = h.entries.get(path);
    if (hit !== undefined) return hit;
    const gen = h.gen;
    const entry = await this.index.entry(id, path);
    if (h.gen === gen) {
      if (h.entries.size >= HEAD_CACHE_ENTRIES) h.entries.clear();
      h.entries.set(path, entry);
    }
    return entry;
  }

  async head(id: string): Promise<IndexedCommit | null> {
    await this.ready(id);
    return this.index.headCommit(id);
  }

  async resolve(id: string, sha: string): Promise<IndexedCommit> {
    await this.ready(id);
    return this.index.resolve(id, sha);
  }

  async page(id: string, path: string): Promise<{ entry: HeadEntry; content: Uint8Array } | null> {
    await this.ready(id);
    const entry = await this.headEntry(id, path);
    if (!entry) return null;
    return { entry, content: await this.git.readBlob(id, entry.blob) };
  }

  /** The file at a commit, or null when that commit's tree lacks it. */
  async fileAt(id: string, sha: string, path: string): Promise<Uint8Array | null> {
    return this.git.readFileAt(id, sha, path);
  }

  async pages(id: string): Promise<HeadEntry[]> {
    await this.ready(id);
    return this.index.pages(id);
  }

  async history(id: string, path: string, limit: number, beforeSeq?: number): Promise<IndexedCommit[]> {
    await this.ready(id);
    return this.index.history(id, path, limit, beforeSeq);
  }

  async timeline(id: string, limit: number) {
    await this.ready(id);
    return this.index.timeline(id, limit);
  }

  /** Full-text search over the pages at head (PathIndex.search); SearchQueryError (400) for a bad `q`. */
  async search(id: string, q: string, opts: SearchOptions): Promise<SearchPage> {
    parseQuery(q); // refused before waiting for the index
    await this.ready(id);
    return this.index.search(id, q, opts);
  }

  async summary(id: string): Promise<{ pageCount: number; lastCommit: IndexedCommit | null }> {
    await this.ready(id);
    const [pageCount, lastCommit] = await Promise.all([this.index.pageCount(id), this.index.headCommit(id)]);
    return { pageCount, lastCommit };
  }

  /**
   * Everything a client needs to catch up: with no `since`, every page at head; otherwise the pages
   * changed and deleted after `since` (UnknownShaError when it does not resolve).
   */
  async pull(
    id: string,
    since?: string,
  ): Promise<{ head: IndexedCommit | null; files: Array<{ entry: HeadEntry; content: Uint8Array }>; deleted: string[] }> {
    await this.ready(id);
    const head = await this.index.headCommit(id);
    let present: HeadEntry[];
    let deleted: string[] = [];
    if (since === undefined) {
      present = head ? await this.index.pages(id) : [];
    } else {
      const from = await this.index.resolve(id, since);
      ({ present, deleted } = await this.index.changedSince(id, from.seq));
    }
    // Bounded: a thousand blob reads at once hold a thousand inflate buffers at the peak.
    const files = await mapBounded(present, PULL_READS_IN_FLIGHT, async (entry) => ({
      entry,
      content: await this.git.readBlob(id, entry.blob),
    }));
    return { head, files, deleted };
  }

  /**
   * Commits every acceptable file as ONE commit. Per file: with a `parentSha`, an existing page whose
   * last commit is not that sha (a unique abbreviation of it counts as equal) is a conflict and is left
   * out; a write whose content equals the page's is `unchanged`; deleting a missing page is `absent`.
   * When every file conflicts or nothing changes, no commit is made. The repository must exist.
   * `owner` (the request id) names the push while it holds the repository's lock (GitStore.locks()).
   */
  async commitFiles(
    id: string,
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts: { owner?: string } = {},
  ): Promise<PushResult> {
    if (!(await this.git.exists(id))) throw new RepoNotFoundError(id);
    await this.ready(id);
    return this.git.withLock(id, async (progress) => {
      try {
        try {
          return await this.commitLocked(id, files, author, message, progress);
        } catch (e) {
          // The branch moved under us (another process, or a crash left the index behind): level the
          // index with git and decide every file again, once.
          if (!(e instanceof ConcurrentUpdateError)) throw e;
          progress.step('sync index');
          await this.index.sync(id, this.git);
          const h = this.heads.get(id);
          if (h) this.forgetHeads(h);
          return await this.commitLocked(id, files, author, message, progress);
        }
      } catch (e) {
        // Whatever happened, the next access re-checks the index against git (a refused path changed
        // nothing).
        if (!(e instanceof PathCaseError)) this.invalidate(id);
        throw e;
      }
    }, { owner: opts.owner ?? 'push', step: 'read index' });
  }

  private async commitLocked(
    id: string,
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    progress: Progress,
  ): Promise<PushResult> {
    // The index is level with git (ready()); if git moved since, the ref's check-and-set refuses the
    // commit and commitFiles re-syncs and retries.
    progress.step('read index');
    const head = await this.index.headCommit(id);
    const outcomes: Array<PushOutcome | null> = [];
    const writes: FileWrite[] = [];
    // The last write of a path wins when a batch names it twice.
    const seen = new Map<string, number>();
    // One query for every page named; an unchanged page's entry is still this one after the commit.
    const before = await this.index.entries(id, files.map((f) => f.path));
    for (const f of files) {
      const current = before.get(f.path) ?? null;
      if (f.parentSha !== undefined && current && !(await this.sameCommit(id, f.parentSha, current.commit.sha))) {
        outcomes.push(await this.conflict(id, f, current));
        continue;
      }
      const at = seen.get(f.path);
      if (at !== undefined) writes[at] = { path: f.path, content: f.content };
      else {
        seen.set(f.path, writes.length);
        writes.push({ path: f.path, content: f.content });
      }
      outcomes.push(null);
    }

    // Under the lock, against the head this commit builds on: two pushes of `A.md` and `a.md` cannot both land.
    await this.refuseCaseTwins(id, writes, before);

    let commit: IndexedCommit | null = null;
    let changed = new Set<string>();
    if (writes.length > 0) {
      const prepared = await this.git.prepareCommit(
        id,
        { parent: head?.sha ?? null, writes, author, message, time: Math.floor(this.clock.now() / 1000) },
        progress,
      );
      if (prepared) {
        // The objects are on disk; moving the branch and recording the commit in the index go in
        // parallel. An index row for a commit whose publish then fails (the branch moved) is cut back
        // by the re-sync in commitFiles, as is any index left ahead of git by a crash.
        progress.step('publish commit');
        const [published, recorded] = await Promise.allSettled([
          progress.track('move main', prepared.publish()),
          progress.track(
            'record index',
            this.index.record(id, prepared.meta, prepared.changes, new Map(writes.map((w) => [w.path, w.content]))),
          ),
        ]);
        const h = this.heads.get(id);
        if (h) this.forgetHeads(h);
        if (published.status === 'rejected') throw published.reason;
        if (recorded.status === 'rejected') throw recorded.reason;
        commit = recorded.value;
        changed = new Set(prepared.changes.map((c) => c.path));
      }
    }

    const result: PushOutcome[] = [];
    const committedPaths: string[] = [];
    const listed = new Set<string>();
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      const o = outcomes[i];
      if (o) {
        result.push(o);
      } else if (changed.has(f.path)) {
        result.push({ path: f.path, kind: 'committed' });
        if (!listed.has(f.path)) {
          listed.add(f.path);
          committedPaths.push(f.path);
        }
      } else if (f.content === null) {
        result.push({ path: f.path, kind: 'absent' });
      } else {
        const entry = before.get(f.path);
        result.push(entry ? { path: f.path, kind: 'unchanged', sha: entry.commit.sha } : { path: f.path, kind: 'absent' });
      }
    }
    const newHead = commit?.sha ?? head?.sha ?? '';
    return { head: newHead, commit, outcomes: result, committedPaths };
  }

  /**
   * Throws PathCaseError when a page this commit creates has the case-folded path of a different page
   * that is at head and not deleted by this same commit, or of another page this commit creates.
   * Updating a page under its exact path, and deleting, never collide. Costs one indexed lookup per
   * created page (git_head.path_fold), whatever the size of the repository.
   */
  private async refuseCaseTwins(id: string, writes: FileWrite[], before: Map<string, HeadEntry>): Promise<void> {
    const created = writes.filter((w) => w.content !== null && !before.has(w.path)).map((w) => w.path);
    if (created.length === 0) return;
    const deleted = new Set(writes.filter((w) => w.content === null).map((w) => w.path));
    const folds = created.map(foldPathCase);
    const atHead = await this.index.caseTwins(id, folds);
    const claimed = new Map<string, string>();
    for (let i = 0; i < created.length; i++) {
      const path = created[i]!;
      const key = folds[i]!;
      const existing = atHead.get(key)?.find((p) => p !== path && !deleted.has(p)) ?? claimed.get(key);
      if (existing !== undefined) throw new PathCaseError(path, existing);
      claimed.set(key, path);
    }
  }

  private async sameCommit(id: string, given: string, actual: string): Promise<boolean> {
    if (!/^[0-9a-fA-F]{1,40}$/.test(given)) return false;
    const g = given.toLowerCase();
    if (g === actual) return true;
    if (!actual.startsWith(g)) return false;
    try {
      return (await this.index.resolve(id, g)).sha === actual;
    } catch (e) {
      if (e instanceof UnknownShaError) return false;
      throw e;
    }
  }

  private async conflict(id: string, f: PushFile, current: HeadEntry): Promise<PushOutcome> {
    const out: PushOutcome = {
      path: f.path,
      kind: 'conflict',
      currentSha: current.commit.sha,
      currentContent: await this.git.readBlob(id, current.blob),
      expectedParentSha: f.parentSha!,
    };
    try {
      const ancestor = await this.index.resolve(id, f.parentSha!);
      const content = await this.git.readFileAt(id, ancestor.sha, f.path);
      if (content) out.ancestorContent = content;
    } catch (e) {
      if (!(e instanceof UnknownShaError)) throw e;
    }
    return out;
  }
}

