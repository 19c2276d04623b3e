import type { Clock } from '../util/clock.ts';
import type { Repo, RepoIndex, Repos, StreamOptions } from './repos.ts';
import { bundleStream } from '../git/bundle.ts';
import { pullBody } from '../usecases/pull-body.ts';
import { uploadPack, type UploadAnswer } from '../git/upload-pack.ts';
import type { FetchRequest } from '../git/upload-request.ts';
import type { StreamWatch } from '../framework/http/stream.ts';
import type { PathIndex, HeadEntry, IndexedCommit } from './path-index.ts';
import type { Stmt } from '../db/sql.ts';
import { ownerStmt } from '../db/members.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import { KeyedMutex, type HeldLock } from '../git/lock.ts';
import { LruCache } from '../git/lru.ts';
import { parseQuery } from '../core/search-query.ts';
import type { SearchOptions, SearchPage } from '../search/results.ts';
import { EventLog } from '../events/event-log.ts';
import { WebhookStore } from '../events/webhook-store.ts';
import { ImportSessions, type ImportCheckOptions, type ImportRuntime } from './import-store.ts';
import type { ImportPlan } from '../git/import.ts';
import { LockTimeoutError, RepoBusyError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import type { GitStore } from '../git/store.ts';
import type { PullPages, PushFile, PushResult } from './types.ts';
import { GroupCommit } from './group-commit.ts';
import { pullPages } from './pull.ts';
import { finishRemovals, removeRepository } from './removal.ts';
import { DerivedLater } from './derived-later.ts';

/**
 * Repositories as the rest of the service sees them: the git store for content, the derived index for
 * every question about history, kept level with each other. Every write runs under the repository's
 * lock; every read first makes sure the index has caught up with git (once per repository per process,
 * and again after anything went wrong).
 */

export type { MergedWrite, PulledPage, PullPages, PushFile, PushOutcome, PushResult } from './types.ts';
export { GROUP_BYTES, GROUP_FILES, GROUP_PUSHES } from './group-commit.ts';
export { PULL_BATCH, PULL_BYTES } from './pull.ts';
export { SEARCH_DELAY_MS } from './derived-later.ts';

/** What a cached head entry holds in memory, estimated (strings at 2 bytes a character). */
const headEntryBytes = (e: HeadEntry | null) =>
  e === null ? 64 : 400 + 2 * (e.path.length + e.commit.author.length + e.commit.email.length + e.commit.message.length);

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
  /** Link and full-text rows behind head, made right after their pushes (lib/repo/derived-later.ts). */
  private readonly derived: DerivedLater;
  /** The pushes, committed in groups (lib/repo/group-commit.ts). */
  private readonly groups: GroupCommit;
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
    this.derived = new DerivedLater(git, index, (id) => this.synced.delete(id));
    this.groups = new GroupCommit(this, clock);
  }

  /** Bytes held by the head-entry cache now. */
  cachedBytes(): number {
    return this.headCache.bytes;
  }

  exists(id: string): Promise<boolean> {
    return this.git.exists(id);
  }

  /** Repos.open: a view of this store bound to `id` (RepoView); nothing is read. */
  open(id: string): Repo {
    return new RepoView(this, id);
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

  /** Retires the head entries remembered for `id` (a write changed them). */
  forgetHeadsOf(id: string): void {
    const h = this.heads.get(id);
    if (h) this.forgetHeads(h);
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

  /** The link and full-text rows of `paths` are behind head (their push recorded none): made right after it. */
  derivedLater(id: string, paths: Iterable<string>): void {
    this.derived.later(id, paths);
  }

  /**
   * Makes the link and full-text rows every repository still has due (a graceful stop, before the database
   * closes: the next start then has nothing to catch up).
   */
  searchSettled(): Promise<void> {
    return this.derived.settled();
  }

  /** Waits until the link and full-text rows of every page pushed to `id` before the call are made (DerivedLater.now). */
  searchNow(id: string): Promise<void> {
    return this.derived.now(id);
  }


  /**
   * The links of the page at head (lib/links/), or null when there is no such page. Pages pushed before the
   * request are in it: their rows left for later are made first.
   */
  async links(id: string, path: string): Promise<LinksResponse | null> {
    await this.ready(id);
    // The rows of pages pushed before the request are made first (as a search's are).
    await this.searchNow(id);
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
          this.derived.forget(id);
          this.invalidate(id);
        }
      },
      { owner, step: 'delete repository' },
    );
  }

  /** Repos.remove on Node (lib/repo/removal.ts). Callers hold its creation lock. */
  remove(id: string): Promise<boolean> {
    return removeRepository(this, id);
  }

  /** Finishes the deletions a crash left half-way (lib/repo/removal.ts). Call once at boot, before serving. */
  finishRemovals(): Promise<void> {
    return finishRemovals(this);
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

  /** A pull's answer as the PullResponse JSON, streamed as it is read (lib/usecases/pull-body.ts); `pages`: whether it holds any page. */
  async pullBody(
    id: string,
    since?: string,
    opts: StreamOptions = {},
  ): Promise<{ pages: boolean; body: ReadableStream<Uint8Array> }> {
    const pull = await this.pullPages(id, since);
    return { pages: pull.first.length > 0, body: pullBody(pull, { onEnd: opts.onEnd }) };
  }

  /** A pull fixed at the head when it begins, read a batch at a time (lib/repo/pull.ts). */
  async pullPages(id: string, since?: string): Promise<PullPages> {
    await this.ready(id);
    return pullPages(this.git, this.index, id, since);
  }

  /**
   * Commits every acceptable file as ONE commit, queued with the other pushes of the repository and committed
   * with them as a group (lib/repo/group-commit.ts).
   */
  commitFiles(
    id: string,
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts: { owner?: string; activity?: (result: PushResult) => Stmt[] } = {},
  ): Promise<PushResult> {
    return this.groups.commitFiles(id, files, author, message, opts);
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
        this.forgetHeadsOf(id);
        await this.webhooks.releaseAll(id);
      },
      { owner: 'webhooks', step: 'release deliveries' },
    );
  }
}

/**
 * One repository of a RepoStore (Repos.open on Node): the store's methods with the id bound. Its commits are
 * recorded in the index's database, which is also the accounts database of the Node build: `commitDatabase`.
 */
export class RepoView implements Repo {
  readonly index: RepoIndex;
  readonly commitDatabase: RepoStore['index']['database'];

  constructor(
    private readonly store: RepoStore,
    readonly id: string,
  ) {
    const pathIndex = store.index;
    this.index = {
      resolve: (value) => pathIndex.resolve(id, value),
      history: (path, limit, beforeSeq) => pathIndex.history(id, path, limit, beforeSeq),
      touches: (path, limit, beforeSeq) => pathIndex.touches(id, path, limit, beforeSeq),
      lastTouch: (path, atSeq) => pathIndex.lastTouch(id, path, atSeq),
    };
    this.commitDatabase = pathIndex.database;
  }

  ready() {
    return this.store.ready(this.id);
  }
  head() {
    return this.store.head(this.id);
  }
  resolve(sha: string) {
    return this.store.resolve(this.id, sha);
  }
  page(path: string) {
    return this.store.page(this.id, path);
  }
  fileAt(sha: string, path: string) {
    return this.store.fileAt(this.id, sha, path);
  }
  pages() {
    return this.store.pages(this.id);
  }
  history(path: string, limit: number, beforeSeq?: number) {
    return this.store.history(this.id, path, limit, beforeSeq);
  }
  timeline(limit: number) {
    return this.store.timeline(this.id, limit);
  }
  summary() {
    return this.store.summary(this.id);
  }
  search(q: string, opts: SearchOptions) {
    return this.store.search(this.id, q, opts);
  }
  links(path: string) {
    return this.store.links(this.id, path);
  }
  pullBody(since?: string, opts?: StreamOptions) {
    return this.store.pullBody(this.id, since, opts);
  }
  commitFiles(
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts?: { owner?: string; activity?: (result: PushResult) => Stmt[] },
  ) {
    return this.store.commitFiles(this.id, files, author, message, opts);
  }
  readBlob(oid: string) {
    return this.store.readBlob(this.id, oid);
  }
  exportBody(opts?: StreamOptions) {
    return this.store.exportBody(this.id, opts);
  }
  uploadPack(req: FetchRequest, opts?: StreamOptions) {
    return this.store.uploadPack(this.id, req, opts);
  }
  importBegin() {
    return this.store.importBegin(this.id);
  }
  importAppend(token: string, chunk: Uint8Array) {
    return this.store.importAppend(this.id, token, chunk);
  }
  importCheck(token: string, opts: ImportCheckOptions) {
    return this.store.importCheck(this.id, token, opts);
  }
  importFinish(token: string) {
    return this.store.importFinish(this.id, token);
  }
  importDiscard(token: string) {
    return this.store.importDiscard(this.id, token);
  }
}
