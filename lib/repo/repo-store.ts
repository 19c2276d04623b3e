import type { Clock } from '../clock.ts';
import type { Repos, StreamOptions } from './repos.ts';
import { bundleStream, nextBatch } from '../git/bundle.ts';
import { pullBody } from '../pull-body.ts';
import { uploadPack, type UploadAnswer } from '../git/upload-pack.ts';
import type { FetchRequest } from '../git/upload-request.ts';
import { checkCancelled, type StreamWatch } from '../http/stream.ts';
import { TimeSlice } from '../time-slice.ts';
import { PathIndex, type HeadEntry, type IndexedCommit, type PageContents } from './path-index.ts';
import type { Stmt } from '../db/sql.ts';
import { ownerStmt } from '../db/members.ts';
import { repositoryRowsDeletion } from '../db/repo-rows.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import { KeyedMutex, type HeldLock, type Progress } from '../git/lock.ts';
import { LruCache } from '../git/lru.ts';
import { foldPathCase } from '../page/path.ts';
import { parseQuery } from '../search/query.ts';
import { mergePagesAsync, type PageMerge } from '../differ/merge.ts';
import type { SearchOptions, SearchPage } from '../search/results.ts';
import { EventLog, deliveriesQueued, pushEventData } from '../events/log.ts';
import { WebhookStore } from '../events/webhook-store.ts';
import type { PathStatus } from '../../schema/wire/events.ts';
import { ImportSessions, type ImportCheckOptions, type ImportRuntime } from './import-store.ts';
import type { ImportPlan } from '../git/import.ts';
import {
  ConcurrentUpdateError,
  LockTimeoutError,
  PathCaseError,
  RepoBusyError,
  RepoNotFoundError,
  StoreError,
  UnknownShaError,
  refuse,
} from '../errors.ts';
import { R } from '../refusals.ts';
import {
  GitStore,
  type CommitMeta,
  type FileWrite,
  type PathChange,
} from '../git/store.ts';

/**
 * Repositories as the rest of the service sees them: the git store for content, the derived index for
 * every question about history, kept level with each other. Every write runs under the repository's
 * lock; every read first makes sure the index has caught up with git (once per repository per process,
 * and again after anything went wrong).
 */


export interface PushFile {
  path: string;
  /** New content, or null to delete the page. */
  content: Uint8Array | null;
  /** The commit the client last saw for this page; omitted = overwrite. */
  parentSha?: string;
  /**
   * Section merge (API.md "Section merge"): a write whose `parentSha` is stale is merged three ways with the
   * page at head instead of being a conflict, when it merges cleanly (lib/differ/merge.ts).
   */
  merge?: boolean;
}

/** A stale write merged with the page at head: the head it was merged with, and the merged text. */
export interface MergedWrite {
  with: string;
  content: Uint8Array;
}

export type PushOutcome =
  | { path: string; kind: 'committed'; merged?: MergedWrite }
  | { path: string; kind: 'unchanged'; sha: string; merged?: MergedWrite }
  | { path: string; kind: 'absent' }
  | {
      path: string;
      kind: 'conflict';
      currentSha: string;
      currentContent: Uint8Array;
      expectedParentSha: string;
      ancestorContent?: Uint8Array;
      /** With `merge`: what could not be merged (`frontmatter.<key>`, `_preamble`, a heading). */
      conflicting?: string[];
      /** The page was deleted after `expectedParentSha`, by `currentSha` (`currentContent` is empty). */
      deleted?: true;
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

/** What a cached head entry holds in memory, estimated (strings at 2 bytes a character). */
const headEntryBytes = (e: HeadEntry | null) =>
  e === null ? 64 : 400 + 2 * (e.path.length + e.commit.author.length + e.commit.email.length + e.commit.message.length);

/**
 * A push's pages become searchable through rows that are made this long after it at the latest (sooner
 * when a search of the repository comes first: it waits for them). Pushes in between share the work: a
 * page updated twenty times meanwhile is indexed once, in one transaction with the others.
 */
export const SEARCH_DELAY_MS = 250;
/** Pages remembered per repository for that work; beyond this the whole repository is looked at. */
const SEARCH_PATHS = 2_000;

/** Full-text work left behind by the pushes of one repository (see searchLater). */
interface SearchDue {
  /** The pages to look at, or null: every page. */
  paths: Set<string> | null;
  timer: ReturnType<typeof setTimeout> | null;
  run: Promise<void> | null;
}

/** A group commit takes at most this many queued pushes, */
export const GROUP_PUSHES = 64;
/** … this much pushed content (bytes; one push larger than this still goes, alone), */
export const GROUP_BYTES = 8 * 1024 * 1024;
/** … and this many files. */
export const GROUP_FILES = 20_000;

/**
 * Pages one batch of a pull holds at most, … (a batch's index query and the inflating of its blobs run on
 * this thread in one go: tens of milliseconds at 1,024 small pages.) Each batch looks its blobs up in the
 * packs' indexes: fewer, larger batches read each index page fewer times when the indexes outgrow the cache.
 */
export const PULL_BATCH = 4_096;
/** … and the bytes of page content it aims at: the next batch is sized from the last one's pages. */
export const PULL_BYTES = 2 * 1024 * 1024;

/** A page of a pull, with its bytes. */
export interface PulledPage {
  entry: HeadEntry;
  content: Uint8Array;
}

/** A pull fixed at the head when it began (RepoStore.pullPages). */
export interface PullPages {
  /** That head (null: the repository has no commit, and the pull no page). */
  head: IndexedCommit | null;
  /** The first batch of pages, already read; empty when the pull has none. */
  first: PulledPage[];
  /** The batches after `first`, in path order, each read when asked for; stops once `signal` is aborted. */
  rest(signal?: AbortSignal): AsyncGenerator<PulledPage[], void, void>;
  /** The paths deleted since (a pull since a commit), in path order, a batch at a time. */
  deleted(signal?: AbortSignal): AsyncGenerator<string[], void, void>;
}

/** A push waiting for (or taken by) a group commit. */
interface QueuedPush {
  files: PushFile[];
  author: { name: string; email: string };
  message: string;
  activity: ((result: PushResult) => Stmt[]) | undefined;
  bytes: number;
  /** A group has taken it (it is no longer queued). */
  taken: boolean;
  /** Set by the group: the push's own outcome, or the error that refused it alone. */
  result: PushResult | null;
  error: unknown;
  resolve(r: PushResult): void;
  reject(e: unknown): void;
}

/**
 * What a group's earlier pushes changed, ahead of the index (null: deleted), the commit that deleted each
 * page deleted there, and their new blobs.
 */
interface Overlay {
  entries: Map<string, HeadEntry | null>;
  deletedBy: Map<string, IndexedCommit>;
  staged(oid: string): Uint8Array | undefined;
}

export class RepoStore implements Repos {
  readonly index: PathIndex;
  /**
   * The repositories' event log and webhooks (lib/events/), in the index's database: a commit's push event
   * and webhook deliveries are written in the transaction that records it.
   */
  readonly events: EventLog;
  readonly webhooks: WebhookStore;
  /**
   * Told, under the repository's lock, once a commit is published (its events count, its held deliveries are
   * due): the live hub announces them (lib/events/live.ts). Never throws.
   */
  onPublished: ((id: string, info: { deliveries: number }) => Promise<void>) | null = null;
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
  /** Full-text rows behind head, per repository (searchLater). */
  private readonly searchDue = new Map<string, SearchDue>();
  /** Pushes waiting for their repository's writer, per repository, oldest first (see commitFiles). */
  private readonly queues = new Map<string, QueuedPush[]>();
  /**
   * Head entries already looked up, keyed by repository, its generation and path, in one cache bounded by
   * bytes (the git store's `headCacheBytes`). Every write bumps the repository's generation, which retires
   * its older entries (they age out), and a read that raced a write never stores what it saw (headEntry).
   */
  private readonly headCache: LruCache<HeadEntry | null>;
  private readonly heads = new Map<string, { gen: number }>();

  /** Imports of git bundles (lib/repo/import-store.ts), where the runtime gave a place for their bodies. */
  private readonly imports: ImportSessions | null;

  constructor(
    readonly git: GitStore,
    index: PathIndex,
    private readonly clock: Clock,
    /**
     * Pending webhook deliveries kept per webhook (config.webhookMaxPending; default 1,000), and where imports
     * spool their bodies (none: this store takes no import).
     */
    opts: { maxPendingDeliveries?: number; imports?: ImportRuntime } = {},
  ) {
    this.imports = opts.imports ? new ImportSessions(opts.imports, git) : null;
    this.index = index;
    this.events = new EventLog(index.database, clock, undefined, opts.maxPendingDeliveries);
    this.webhooks = new WebhookStore(index.database, clock, opts.maxPendingDeliveries);
    this.creationMutex = new KeyedMutex({ waitMs: git.lockWaitMs });
    this.headCache = new LruCache(git.headCacheBytes, headEntryBytes);
  }

  /** Bytes held by the head-entry cache now. */
  cachedBytes(): number {
    return this.headCache.bytes;
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

  /**
   * Where exports are made when set (Node: on a worker thread, lib/runtime/node/export-threads.ts); in this
   * thread otherwise (bundleStream: the Workers build, in the repository's Durable Object).
   */
  bundler: ((id: string, opts: { onEnd?: StreamWatch }) => Promise<ReadableStream<Uint8Array> | null>) | null = null;

  /** The repository as a git bundle, streamed as it is read (lib/git/bundle.ts), or null while it has no commit. */
  async exportBody(id: string, opts: StreamOptions = {}): Promise<ReadableStream<Uint8Array> | null> {
    await this.ready(id);
    if (this.bundler) return this.bundler(id, { onEnd: opts.onEnd });
    return bundleStream(this.git, id, { onEnd: opts.onEnd });
  }

  /** git's upload-pack answer to a fetch (lib/git/upload-pack.ts), as of the branch's head now. */
  async uploadPack(id: string, req: FetchRequest, opts: StreamOptions = {}): Promise<UploadAnswer> {
    await this.ready(id);
    const head = await this.git.head(id);
    const source = { store: this.git, id, head, commitsKnown: (shas: readonly string[]) => this.index.knownCommits(id, shas) };
    return uploadPack(source, req, { onEnd: opts.onEnd });
  }

  #imports(): ImportSessions {
    if (!this.imports) throw refuse(R.imports_unavailable);
    return this.imports;
  }

  /** Repos.importBegin: a new import's spool; its token. */
  importBegin(id: string): Promise<string> {
    return this.#imports().begin(id);
  }

  importAppend(id: string, token: string, chunk: Uint8Array): Promise<void> {
    return this.#imports().append(id, token, chunk);
  }

  importCheck(id: string, token: string, opts: ImportCheckOptions): Promise<ImportPlan> {
    return this.#imports().check(id, token, opts);
  }

  /**
   * Repos.importFinish: under the repository's lock, the checked import's objects are kept, the branch starts
   * at its head, and the index is rebuilt from git at once (the catch-up a missing index gets: commits,
   * pages at head, links, full text). The spool goes whatever happens.
   */
  async importFinish(id: string, token: string): Promise<ImportPlan> {
    const imports = this.#imports();
    try {
      return await this.git.withLock(
        id,
        async (progress) => {
          progress.step('keep imported objects');
          const plan = await imports.keep(id, token);
          this.invalidate(id);
          progress.step('index imported history');
          await this.index.sync(id, this.git);
          return plan;
        },
        { owner: 'import', step: 'import' },
      );
    } finally {
      await imports.discard(id, token);
    }
  }

  async importDiscard(id: string, token: string): Promise<void> {
    await this.imports?.discard(id, token);
  }

  /**
   * Creates the repository if missing; true when this call created it. `creator` (a user id) is kept in
   * the repository itself, so that a crash before the owner is recorded cannot orphan it.
   */
  create(id: string, creator?: string): Promise<boolean> {
    return this.git.init(id, { creator });
  }

  /**
   * Repos.createOwned on Node, where a repository exists once its directory does and this process is the
   * only one that makes directories: under the caller's creation lock a missing directory stays missing
   * until made here. The owner row is written first, by one statement that checks `when` (the cap) as it
   * inserts, so racing creations of other ids are serialised by the database; the directory follows. A
   * failure to make it takes the row back. The accounts database is the one the index lives in.
   */
  async createOwned(id: string, owner: string, when: Stmt | null): Promise<'created' | 'exists' | 'refused'> {
    if ((await this.git.caseVariant(id)) !== null) return 'exists';
    const db = this.index.database;
    const [recorded] = await db.batch([
      ownerStmt(id, owner, Math.floor(this.clock.now() / 1000), when),
      // Rows of others for an id with no repository were left by a creation that died before making its
      // directory: they must not make anyone a member of the repository made now.
      { sql: 'DELETE FROM members WHERE repo_id = ? AND user_id <> ? AND changes() > 0', args: [id, owner] },
    ]);
    if (recorded!.changes === 0) return 'refused';
    let created = false;
    try {
      created = await this.git.init(id, { creator: owner });
    } finally {
      if (!created) await db.run('DELETE FROM members WHERE repo_id = ? AND user_id = ?', [id, owner]);
    }
    return created ? 'created' : 'exists';
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

  private forgetHeads(h: { gen: number }): void {
    h.gen += 1;
  }

  /** The page's head entry, from memory when this process already looked it up since the last write. */
  private async headEntry(id: string, path: string): Promise<HeadEntry | null> {
    let h = this.heads.get(id);
    if (!h) this.heads.set(id, (h = { gen: 0 }));
    const gen = h.gen;
    const key = `${id}\0${gen}\0${path}`;
    const hit = this.headCache.get(key);
    if (hit !== undefined) return hit;
    const entry = await this.index.entry(id, path);
    if (h.gen === gen) this.headCache.set(key, entry);
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

  /**
   * Full-text search over the pages at head (PathIndex.search); SearchQueryError (400) for a bad `q`.
   * Pages pushed before the search are in it: their rows left for later are made first.
   */
  async search(id: string, q: string, opts: SearchOptions): Promise<SearchPage> {
    parseQuery(q); // refused before waiting for the index
    await this.ready(id);
    await this.searchNow(id);
    // Again: after work that failed, the repository is synced (which makes every row) before it is searched.
    await this.ready(id);
    return this.index.search(id, q, opts);
  }

  /**
   * Remembers that the full-text rows of `paths` are behind head (their push recorded none) and makes
   * them within SEARCH_DELAY_MS, under the repository's lock, for every push of that time at once. A
   * failure leaves them to the next sync (the repository is re-checked on its next access).
   */
  private searchLater(id: string, paths: Iterable<string>): void {
    let due = this.searchDue.get(id);
    if (!due) this.searchDue.set(id, (due = { paths: new Set(), timer: null, run: null }));
    if (due.paths) {
      for (const p of paths) due.paths.add(p);
      if (due.paths.size > SEARCH_PATHS) due.paths = null;
    }
    if (due.timer === null && due.run === null) {
      due.timer = setTimeout(() => this.searchRun(id), SEARCH_DELAY_MS);
      // Never what keeps a process alive: rows still behind at exit are made by the next start's sync.
      (due.timer as { unref?: () => void }).unref?.();
    }
  }

  /** Starts the full-text work due for `id` (none running). */
  private searchRun(id: string): void {
    const due = this.searchDue.get(id);
    if (!due || due.run) return;
    if (due.timer !== null) clearTimeout(due.timer);
    due.timer = null;
    const paths = due.paths ? [...due.paths] : undefined;
    due.paths = new Set();
    due.run = this.git
      .withLock(id, () => this.index.catchUpSearch(id, this.git, paths), { owner: 'search index', step: 'index pages' })
      .catch(() => {
        // Not made now (lock wait, database closed at shutdown, disk error): the next access syncs.
        this.synced.delete(id);
      })
      .finally(() => {
        due.run = null;
        if (due.paths === null || due.paths.size > 0) this.searchLater(id, []);
        else if (due.timer === null && this.searchDue.get(id) === due) this.searchDue.delete(id);
      });
  }

  /**
   * Makes the full-text rows every repository still has due (a graceful stop, before the database closes:
   * the next start then has nothing to catch up).
   */
  async searchSettled(): Promise<void> {
    await Promise.all([...this.searchDue.keys()].map((id) => this.searchNow(id)));
  }

  /**
   * Waits until the full-text rows of every page pushed to `id` before the call are made, making them now
   * rather than at their time. Two runs at most: the one already running (which may have started before the
   * last pages came), then one for everything remembered since.
   */
  async searchNow(id: string): Promise<void> {
    for (let round = 0; round < 2; round++) {
      const due = this.searchDue.get(id);
      if (!due) return;
      const started = due.run === null;
      if (started) this.searchRun(id);
      await due.run;
      if (started) return;
    }
  }

  /** The links of the page at head (lib/links/), or null when there is no such page. */
  async links(id: string, path: string): Promise<LinksResponse | null> {
    await this.ready(id);
    if (!(await this.headEntry(id, path))) return null;
    return this.index.links(id, path);
  }

  /**
   * Runs `fn` while nothing else works on the repository: it holds the write lock, so no push (or index
   * work) is in flight, and waiters start after it. Afterwards what this process remembers of the repository
   * (index sync, head entries, full-text work due) is forgotten: `fn` may have taken it away. Callers hold
   * its creation lock (`creation`), so that no push or creation starts on it meanwhile.
   */
  async whileQuiet<T>(id: string, fn: () => Promise<T>, owner = 'delete repository'): Promise<T> {
    return this.git.withLock(
      id,
      async () => {
        try {
          return await fn();
        } finally {
          const due = this.searchDue.get(id);
          if (due?.timer) clearTimeout(due.timer);
          this.searchDue.delete(id);
          this.invalidate(id);
        }
      },
      { owner, step: 'delete repository' },
    );
  }

  /**
   * Repos.remove on Node. Under the repository's lock: its directory is renamed out of the repositories (the
   * moment it stops existing: GitStore.retire), then every row the database holds for it — accounts side
   * (lib/db/repo-rows.ts) and index — goes in one batch, then the directory is removed. A failed batch
   * renames the directory back (nothing happened); a crash after the rename is finished at the next start
   * (`finishRemovals`), before anything is served, so rows and directory never disagree for long: the id is
   * gone or whole. False when the repository does not exist (any more). Callers hold its creation lock.
   */
  async remove(id: string): Promise<boolean> {
    return this.whileQuiet(id, async () => {
      if (!(await this.git.exists(id))) return false;
      const dir = await this.git.retire(id);
      try {
        await this.dropRows(id);
      } catch (e) {
        await this.git.reinstate(id, dir);
        throw e;
      }
      // Left behind when it fails: the next start removes it (the repository is gone either way).
      await this.git.fs.removeTree(dir).catch(() => undefined);
      return true;
    });
  }

  /**
   * Every row of the database about the repository, accounts side and index, in one batch; then its
   * full-text rows, which live in a store of their own (derived: were that to fail, nothing refers to them,
   * and a repository created again under the id rebuilds them from its own git).
   */
  private async dropRows(id: string): Promise<void> {
    await this.index.database.batch([...repositoryRowsDeletion(id), ...this.index.removalStmts(id)]);
    await this.index.dropSearch(id);
  }

  /**
   * Finishes the deletions a crash (or a failed removal) left half-way: the rows of a retired repository
   * whose id has not been created again are deleted, and its directory removed. Call once at boot, before
   * serving.
   */
  async finishRemovals(): Promise<void> {
    for (const { id, dir } of await this.git.retired()) {
      if (!(await this.git.exists(id))) await this.dropRows(id);
      await this.git.fs.removeTree(dir);
    }
  }

  async summary(id: string): Promise<{ pageCount: number; lastCommit: IndexedCommit | null }> {
    await this.ready(id);
    const [pageCount, lastCommit] = await Promise.all([this.index.pageCount(id), this.index.headCommit(id)]);
    return { pageCount, lastCommit };
  }

  /**
   * Everything a client needs to catch up, whole: with no `since`, every page at head; otherwise the pages
   * changed and deleted after `since` (UnknownShaError when it does not resolve). For tests and tools: the
   * pull route streams it (pullBody).
   */
  async pull(
    id: string,
    since?: string,
  ): Promise<{ head: IndexedCommit | null; files: Array<{ entry: HeadEntry; content: Uint8Array }>; deleted: string[] }> {
    const pull = await this.pullPages(id, since);
    const files = [...pull.first];
    for await (const batch of pull.rest()) files.push(...batch);
    const deleted: string[] = [];
    for await (const paths of pull.deleted()) deleted.push(...paths);
    return { head: pull.head, files, deleted };
  }

  /** A pull's answer as the PullResponse JSON, streamed as it is read (lib/pull-body.ts); `pages`: whether it holds any page. */
  async pullBody(
    id: string,
    since?: string,
    opts: StreamOptions = {},
  ): Promise<{ pages: boolean; body: ReadableStream<Uint8Array> }> {
    const pull = await this.pullPages(id, since);
    return { pages: pull.first.length > 0, body: pullBody(pull, { onEnd: opts.onEnd }) };
  }

  /**
   * A pull fixed at the head when it begins, read a batch at a time: with no `since`, every page at that
   * head; otherwise the pages changed after `since` up to it, and the pages deleted meanwhile
   * (UnknownShaError when `since` does not resolve, before anything is read). Each batch is the index's rows
   * as of that head (PathIndex.pullBatch, so a push landing meanwhile changes nothing in the answer), then
   * their blobs in pack order (GitStore.readBlobs); batches hold about PULL_BYTES of pages, PULL_BATCH at
   * most. The first batch with a page is read here.
   */
  async pullPages(id: string, since?: string): Promise<PullPages> {
    await this.ready(id);
    const head = await this.index.headCommit(id);
    const sinceSeq = since === undefined ? undefined : (await this.index.resolve(id, since)).seq;
    const atSeq = head?.seq ?? 0;
    // Sized as an export's reads are (bundle.ts nextBatch), from 16 pages, but going straight to the size
    // the first batch's pages call for (a full pull of small pages is then two batches' index lookups).
    let size = 16;
    let after: string | null = '';
    const next = async (): Promise<PulledPage[]> => {
      const b = await this.index.pullBatch(id, atSeq, after!, size, sinceSeq);
      after = b.last;
      const contents = await this.git.readBlobs(id, b.present.map((e) => e.blob));
      const bytes = contents.reduce((n, c) => n + c.byteLength, 0);
      // At the mean size of the pages read (a batch since a commit holds deleted paths too).
      if (b.present.length > 0) size = nextBatch(size, (bytes * size) / b.present.length, PULL_BATCH, PULL_BYTES, PULL_BATCH);
      return b.present.map((entry, i) => ({ entry, content: contents[i]! }));
    };
    let first: PulledPage[] = [];
    while (head && first.length === 0 && after !== null) first = await next();
    const index = this.index;
    return {
      head,
      first,
      async *rest(signal) {
        while (after !== null) {
          if (signal) checkCancelled(signal);
          const batch = await next();
          if (batch.length > 0) yield batch;
        }
      },
      async *deleted(signal) {
        if (sinceSeq === undefined || !head) return;
        for (let from: string | null = ''; from !== null; ) {
          if (signal) checkCancelled(signal);
          const b = await index.pullBatch(id, atSeq, from, PULL_BATCH, sinceSeq);
          from = b.last;
          if (b.deleted.length > 0) yield b.deleted;
        }
      },
    };
  }

  /**
   * Commits every acceptable file as ONE commit. Per file: with a `parentSha`, an existing page whose
   * last commit is not that sha (a unique abbreviation of it counts as equal) is a conflict and is left
   * out; a write whose content equals the page's is `unchanged`; deleting a missing page is `absent`.
   * When every file conflicts or nothing changes, no commit is made. The repository must exist.
   * `owner` (the request id) names the push while it holds the repository's lock (GitStore.locks()).
   * `activity` gives statements recorded in the same transaction as the commit's index rows, when the push
   * made a commit (the activity feed must share the index's database).
   *
   * Group commit: pushes to one repository that queue behind its writer are taken together by the first of
   * them to get the lock (at most GROUP_PUSHES pushes, GROUP_BYTES of content). Each is decided against the
   * head the one before it left and becomes its own commit (parent = the previous one), but their objects
   * are written in one durable write, the branch moves once (to the last), and the index rows of all of them
   * go in one database batch. Each caller's promise settles only once its commit is durable: objects, the
   * branch and its directory flushed, the batch committed.
   */
  async commitFiles(
    id: string,
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts: { owner?: string; activity?: (result: PushResult) => Stmt[] } = {},
  ): Promise<PushResult> {
    if (!(await this.git.exists(id))) throw new RepoNotFoundError(id);
    await this.ready(id);
    let settle!: { resolve: (r: PushResult) => void; reject: (e: unknown) => void };
    const done = new Promise<PushResult>((resolve, reject) => (settle = { resolve, reject }));
    const me: QueuedPush = {
      files,
      author,
      message,
      activity: opts.activity,
      bytes: files.reduce((n, f) => n + (f.content?.byteLength ?? 0) + f.path.length, 0),
      taken: false,
      result: null,
      error: null,
      ...settle,
    };
    let queue = this.queues.get(id);
    if (!queue) this.queues.set(id, (queue = []));
    queue.push(me);
    try {
      await this.git.withLock(
        id,
        async (progress) => {
          // Taken by an earlier holder's group: its answer is already settled (or about to be).
          if (me.taken) return;
          await this.runGroup(id, this.takeGroup(id), progress);
        },
        { owner: opts.owner ?? 'push', step: 'read index' },
      );
    } catch (e) {
      if (!me.taken) {
        // Gave up waiting for the lock before any group took this push: it is no longer queued.
        const q = this.queues.get(id);
        const at = q?.indexOf(me) ?? -1;
        if (at >= 0) q!.splice(at, 1);
        if (q && q.length === 0) this.queues.delete(id);
        throw e;
      }
      // A group holding the lock has this push: its outcome is that group's.
    }
    return done;
  }

  /** The pushes queued for `id`, oldest first, up to the group's bounds (at least one). */
  private takeGroup(id: string): QueuedPush[] {
    const queue = this.queues.get(id) ?? [];
    const group: QueuedPush[] = [];
    let bytes = 0;
    let files = 0;
    while (queue.length > 0 && group.length < GROUP_PUSHES) {
      const next = queue[0]!;
      if (group.length > 0 && (bytes + next.bytes > GROUP_BYTES || files + next.files.length > GROUP_FILES)) break;
      queue.shift();
      next.taken = true;
      bytes += next.bytes;
      files += next.files.length;
      group.push(next);
    }
    if (queue.length === 0) this.queues.delete(id);
    return group;
  }

  /** Commits a group (see commitFiles) and settles every push of it. Holds the repository's lock. */
  private async runGroup(id: string, group: QueuedPush[], progress: Progress): Promise<void> {
    try {
      try {
        await this.commitGroup(id, group, progress);
      } catch (e) {
        // The branch moved under us (another process, or a crash left the index behind): level the
        // index with git and decide every push of the group again, once.
        if (!(e instanceof ConcurrentUpdateError)) throw e;
        progress.step('sync index');
        await this.index.sync(id, this.git);
        const h = this.heads.get(id);
        if (h) this.forgetHeads(h);
        await this.commitGroup(id, group, progress);
      }
    } catch (e) {
      // Whatever happened, the next access re-checks the index against git; no push of the group is
      // answered as if it had landed.
      this.invalidate(id);
      for (const p of group) p.reject(e);
      return;
    }
    // A push refused on its own (a path problem) leaves the others alone; the next access re-checks the
    // index all the same, as after any failed push (a refused case twin changed nothing).
    if (group.some((p) => p.error && !(p.error instanceof PathCaseError))) this.invalidate(id);
    for (const p of group) {
      if (p.error) p.reject(p.error);
      else p.resolve(p.result!);
    }
  }

  /**
   * Decides every push of the group against the head the previous one leaves, builds their commits as one
   * chain, makes it durable and records it. A push refused on its own gets its error in `error`; an error
   * thrown from here concerns the whole group (nothing of it was answered).
   */
  private async commitGroup(id: string, group: QueuedPush[], progress: Progress): Promise<void> {
    // Deleted while the group waited for the lock: nothing may be written where it was.
    if (!(await this.git.exists(id))) throw new RepoNotFoundError(id);
    // The index is level with git (ready()); if git moved since, the ref's check-and-set refuses the
    // chain and runGroup re-syncs and retries.
    progress.step('read index');
    const head = await this.index.headCommit(id);
    const batch = this.git.batch(id, head?.sha ?? null);
    const overlay: Overlay = { entries: new Map(), deletedBy: new Map(), staged: (oid) => batch.staged(oid) };
    const made: Array<{
      push: QueuedPush;
      meta: CommitMeta;
      changes: PathChange[];
      contents: PageContents;
      /** What the commit did to each path it changed (its push event's `paths`). */
      statuses: Array<{ path: string; status: PathStatus }>;
    }> = [];
    let current: IndexedCommit | null = head;
    for (const p of group) {
      p.result = null;
      p.error = null;
      try {
        const decided = await this.decide(id, p.files, overlay, current?.sha ?? '');
        let commit: IndexedCommit | null = null;
        let changed = new Set<string>();
        if (decided.writes.length > 0) {
          const c = await batch.add({
            writes: decided.writes,
            author: p.author,
            message: p.message,
            time: Math.floor(this.clock.now() / 1000),
          });
          if (c) {
            commit = {
              sha: c.meta.sha,
              seq: (current?.seq ?? 0) + 1,
              author: c.meta.author,
              email: c.meta.email,
              time: c.meta.time,
              message: c.meta.message,
            };
            current = commit;
            changed = new Set(c.changes.map((ch) => ch.path));
            for (const ch of c.changes) {
              overlay.entries.set(ch.path, ch.blob === null ? null : { path: ch.path, blob: ch.blob, commit });
              if (ch.blob === null) overlay.deletedBy.set(ch.path, commit);
              else overlay.deletedBy.delete(ch.path);
            }
            made.push({
              push: p,
              meta: c.meta,
              changes: c.changes,
              contents: new Map(decided.writes.map((w) => [w.path, w.content])),
              statuses: c.changes.map((ch) => ({
                path: ch.path,
                status: ch.blob === null ? 'deleted' : decided.before.has(ch.path) ? 'modified' : 'added',
              })),
            });
          }
        }
        p.result = this.outcome(p.files, decided, commit, changed, current?.sha ?? '');
      } catch (e) {
        if (e instanceof ConcurrentUpdateError) throw e;
        p.error = e;
      }
    }
    if (made.length === 0) return;

    // The index batch (with the pushes' activity rows) is committed while the objects are being flushed,
    // once the branch's lock is held and the check-and-set passed: nothing but a failed write or a crash
    // can keep the branch from moving then, and the index's rows for commits git does not reach are cut
    // back by the next sync (after the failure here, or at boot after a crash). The branch moves only
    // once every object is durable; the answers wait for both.
    // Each commit's push event and webhook deliveries go into the same transaction (held until the branch
    // has moved: see published()).
    const extra: Stmt[] = [];
    for (const m of made) {
      if (m.push.activity) extra.push(...m.push.activity(m.push.result!));
      const merged = m.push.result!.outcomes.filter((o) => o.kind === 'committed' && o.merged).map((o) => o.path);
      const data = pushEventData(id, m.meta, m.statuses, [...new Set(merged)]);
      extra.push(...this.events.appendStmts(id, 'push', data, { commitSha: m.meta.sha }));
    }
    let deliveries = 0;
    let recorded: IndexedCommit[] = [];
    progress.step('prepare commit');
    try {
      await batch.prepare(progress, async () => {
        recorded = await progress.track(
          'record index',
          this.index.recordMany(
            id,
            made.map((m) => ({ meta: m.meta, changes: m.changes, contents: m.contents })),
            extra,
            { fullText: false, head, extraResults: (results) => (deliveries = deliveriesQueued(extra, results)) },
          ),
        );
      });
    } finally {
      const h = this.heads.get(id);
      if (h) this.forgetHeads(h);
    }
    progress.step('publish commit');
    await progress.track('move main', batch.publish());
    if (this.index.fullText) this.searchLater(id, made.flatMap((m) => m.changes.map((c) => c.path)));
    // The commits as recorded: their sequence numbers follow `head`, read under this lock.
    recorded.forEach((c, i) => {
      const r = made[i]!.push.result!;
      r.commit = c;
    });
    await this.published(id, made.map((m) => m.meta.sha), deliveries);
  }

  /**
   * After a group's commits are published, under the repository's lock: their held deliveries become due and
   * their events are announced to the open streams. The commits landed whatever happens here: a release that
   * fails is made later (releaseHeld, at the deliverer's next run or after a restart).
   */
  private async published(id: string, shas: string[], deliveries: number): Promise<void> {
    if (deliveries > 0) {
      try {
        await this.webhooks.release(id, shas);
      } catch {
        // left held: releaseHeld makes them due
      }
    }
    try {
      await this.onPublished?.(id, { deliveries });
    } catch {
      // the listener reports its own failures; the push stands
    }
  }

  /**
   * Runs `fn` under the repository's write lock once its index is level with git: no commit is then between
   * the index and the branch. Event writes other than a push's (member events) and the live hub's reads of
   * where the log stands go through here, so that events count in id order.
   */
  async exclusive<T>(id: string, fn: () => Promise<T>, step = 'events'): Promise<T> {
    await this.ready(id);
    return this.git.withLock(id, fn, { owner: step, step });
  }

  /**
   * Makes every held delivery of the repository due: those whose push was published but whose release was
   * lost (a crash right after the push, a failed write). Under the lock, after levelling the index with git,
   * which cuts back (with their events and deliveries) the commits git never reached.
   */
  async releaseHeld(id: string): Promise<void> {
    await this.git.withLock(
      id,
      async () => {
        await this.index.sync(id, this.git);
        const h = this.heads.get(id);
        if (h) this.forgetHeads(h);
        await this.webhooks.releaseAll(id);
      },
      { owner: 'webhooks', step: 'release deliveries' },
    );
  }

  /** One push's files against the head the group has reached (the index plus `overlay`). */
  private async decide(
    id: string,
    files: PushFile[],
    overlay: Overlay,
    head: string,
  ): Promise<{ outcomes: Array<PushOutcome | null>; writes: FileWrite[]; before: Map<string, HeadEntry>; merged: Map<string, MergedWrite> }> {
    const outcomes: Array<PushOutcome | null> = [];
    const writes: FileWrite[] = [];
    const merged = new Map<string, MergedWrite>();
    // The last write of a path wins when a batch names it twice.
    const seen = new Map<string, number>();
    // One query for every page named; an unchanged page's entry is still this one after the commit.
    const before = await this.index.entries(id, files.map((f) => f.path));
    if (overlay.entries.size > 0) {
      for (const f of files) {
        const entry = overlay.entries.get(f.path);
        if (entry === null) before.delete(f.path);
        else if (entry !== undefined) before.set(f.path, entry);
      }
    }
    const slice = new TimeSlice();
    const parents = new Map<string, IndexedCommit | null>();
    for (const f of files) {
      if (slice.due) await slice.next();
      const current = before.get(f.path) ?? null;
      let content = f.content;
      // A write of a page that is gone, based on a version from before it went: the deletion is news to the
      // writer, never undone silently (with or without merge). Deleting it again stays a no-op.
      if (f.parentSha !== undefined && current === null && f.content !== null) {
        const gone = await this.deletedSince(id, f, overlay, parents);
        if (gone) {
          outcomes.push(gone);
          continue;
        }
      }
      if (f.parentSha !== undefined && current && !(await this.sameCommit(id, f.parentSha, current.commit.sha))) {
        const conflict = await this.conflict(id, f, current, overlay);
        const merge = f.merge && f.content !== null ? await mergeWrite(conflict, f.content) : null;
        if (!merge?.clean) {
          if (merge) conflict.conflicting = merge.conflicting;
          delete conflict.parentResolved;
          outcomes.push(conflict);
          continue;
        }
        content = encoder.encode(merge.text);
        merged.set(f.path, { with: head, content });
      } else merged.delete(f.path);
      const at = seen.get(f.path);
      if (at !== undefined) writes[at] = { path: f.path, content };
      else {
        seen.set(f.path, writes.length);
        writes.push({ path: f.path, content });
      }
      outcomes.push(null);
    }
    // Under the lock, against the head this commit builds on: two pushes of `A.md` and `a.md` cannot both land.
    await this.refuseCaseTwins(id, writes, before, overlay);
    return { outcomes, writes, before, merged };
  }

  /** A push's result once its commit (or none) is known. */
  private outcome(
    files: PushFile[],
    decided: { outcomes: Array<PushOutcome | null>; before: Map<string, HeadEntry>; merged: Map<string, MergedWrite> },
    commit: IndexedCommit | null,
    changed: Set<string>,
    head: string,
  ): PushResult {
    const result: PushOutcome[] = [];
    const committedPaths: string[] = [];
    const listed = new Set<string>();
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      const o = decided.outcomes[i];
      if (o) {
        result.push(o);
      } else if (changed.has(f.path)) {
        const merged = decided.merged.get(f.path);
        result.push(merged ? { path: f.path, kind: 'committed', merged } : { path: f.path, kind: 'committed' });
        if (!listed.has(f.path)) {
          listed.add(f.path);
          committedPaths.push(f.path);
        }
      } else if (f.content === null) {
        result.push({ path: f.path, kind: 'absent' });
      } else {
        const entry = decided.before.get(f.path);
        const merged = decided.merged.get(f.path);
        if (!entry) result.push({ path: f.path, kind: 'absent' });
        else result.push(merged ? { path: f.path, kind: 'unchanged', sha: entry.commit.sha, merged } : { path: f.path, kind: 'unchanged', sha: entry.commit.sha });
      }
    }
    return { head, commit, outcomes: result, committedPaths };
  }

  /**
   * Throws PathCaseError when a page this commit creates has the case-folded path of a different page
   * that is at head and not deleted by this same commit, or of another page this commit creates.
   * Updating a page under its exact path, and deleting, never collide. Costs one indexed lookup per
   * created page (git_head.path_fold), whatever the size of the repository.
   */
  private async refuseCaseTwins(id: string, writes: FileWrite[], before: Map<string, HeadEntry>, overlay: Overlay): Promise<void> {
    const created = writes.filter((w) => w.content !== null && !before.has(w.path)).map((w) => w.path);
    if (created.length === 0) return;
    const deleted = new Set(writes.filter((w) => w.content === null).map((w) => w.path));
    const folds = created.map(foldPathCase);
    const atHead = await this.index.caseTwins(id, folds);
    if (overlay.entries.size > 0) {
      // The pages earlier pushes of the group created or deleted, which the index does not hold yet.
      const wanted = new Set(folds);
      for (const [path, entry] of overlay.entries) {
        const key = foldPathCase(path);
        if (!wanted.has(key)) continue;
        const list = (atHead.get(key) ?? []).filter((p) => p !== path);
        if (entry !== null) list.push(path);
        atHead.set(key, list.sort());
      }
    }
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

  /**
   * The conflict of a write of a page absent at head whose `parentSha` resolves and is older than the
   * page's deletion (by an earlier push of the group, or the last commit that touched it in the index);
   * null when the parent does not resolve, the page never existed, or it was deleted at or before the
   * parent (the writer saw the deletion). `parents` caches the push's resolved parents.
   */
  private async deletedSince(
    id: string,
    f: PushFile,
    overlay: Overlay,
    parents: Map<string, IndexedCommit | null>,
  ): Promise<ConflictOutcome | null> {
    const given = f.parentSha!.toLowerCase();
    let parent = parents.get(given);
    if (parent === undefined) {
      try {
        parent = await this.index.resolve(id, given);
      } catch (e) {
        if (!(e instanceof UnknownShaError)) throw e;
        parent = null;
      }
      parents.set(given, parent);
    }
    if (parent === null) return null;
    // Deleted by an earlier push of this group: after any parent the index resolves.
    let deletion = overlay.entries.get(f.path) === null ? (overlay.deletedBy.get(f.path) ?? null) : null;
    if (deletion === null) {
      const last = await this.index.lastTouch(id, f.path, Number.MAX_SAFE_INTEGER);
      if (!last || last.blob !== null || last.commit.seq <= parent.seq) return null;
      deletion = last.commit;
    }
    const out: ConflictOutcome = {
      path: f.path,
      kind: 'conflict',
      currentSha: deletion.sha,
      currentContent: new Uint8Array(0),
      expectedParentSha: f.parentSha!,
      deleted: true,
    };
    const ancestor = await this.git.readFileAt(id, parent.sha, f.path);
    if (ancestor) out.ancestorContent = ancestor;
    return out;
  }

  private async conflict(id: string, f: PushFile, current: HeadEntry, overlay: Overlay): Promise<ConflictOutcome> {
    const out: ConflictOutcome = {
      path: f.path,
      kind: 'conflict',
      currentSha: current.commit.sha,
      // A page an earlier push of the group wrote is not on disk yet.
      currentContent: overlay.staged(current.blob) ?? (await this.git.readBlob(id, current.blob)),
      expectedParentSha: f.parentSha!,
    };
    try {
      const ancestor = await this.index.resolve(id, f.parentSha!);
      const content = await this.git.readFileAt(id, ancestor.sha, f.path);
      if (content) out.ancestorContent = content;
      out.parentResolved = true;
    } catch (e) {
      if (!(e instanceof UnknownShaError)) throw e;
    }
    return out;
  }
}

/** A conflict, and whether its parent resolved (a merge needs it: the page's base is its text there, or empty). */
type ConflictOutcome = Extract<PushOutcome, { kind: 'conflict' }> & { parentResolved?: boolean };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * The section merge of a stale write (API.md "Section merge"): base = the file at the parent (empty when it
 * did not exist there), theirs = the page at head, ours = the pushed content. Null when there is nothing to
 * merge against (the parent does not resolve) or a side is not UTF-8 text: the write stays a plain conflict.
 * The merge hands the event loop a turn every few milliseconds, so a large page does not hold other requests.
 */
async function mergeWrite(conflict: ConflictOutcome, ours: Uint8Array): Promise<PageMerge | null> {
  if (!conflict.parentResolved) return null;
  let base: string;
  let theirs: string;
  let mine: string;
  try {
    base = conflict.ancestorContent ? strictUtf8.decode(conflict.ancestorContent) : '';
    theirs = strictUtf8.decode(conflict.currentContent);
    mine = strictUtf8.decode(ours);
  } catch {
    return null;
  }
  return mergePagesAsync(base, theirs, mine);
}

