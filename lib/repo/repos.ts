import type { HeadEntry, IndexedCommit } from './path-index.ts';
import type { PushFile, PushResult } from './types.ts';
import type { SearchOptions, SearchPage } from '../search/results.ts';
import type { SqlDatabase, Stmt } from '../db/sql.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import type { StreamWatch } from '../framework/http/stream.ts';
import type { FetchRequest } from '../git/upload-request.ts';
import type { UploadAnswer } from '../git/upload-pack.ts';
import type { ImportPlan } from '../git/import.ts';
import type { ImportCheckOptions } from './import-store.ts';

/**
 * Repositories as handlers and lib/ see them, whatever holds them: on Node, RepoStore over bare
 * repositories on disk and the index in the database file (lib/repo/repo-store.ts); in the hosted build, one
 * Durable Object per repository running that same RepoStore over its own storage, reached by RPC
 * (lib/runtime/workers/remote-repos.ts). The registry (which ids exist, creating and removing them) is here;
 * everything about one repository is its handle's (`open`, Repo below). Errors are the git store's
 * (lib/git/store.ts), mapped to HTTP by lib/framework/app.ts on both runtimes.
 */
export interface Repos {
  exists(id: string): Promise<boolean>;
  /** Every repository id, sorted. */
  list(): Promise<string[]>;
  /** The existing repository whose id equals `id` ignoring ASCII case (possibly `id` itself), or null. */
  caseVariant(id: string): Promise<string | null>;
  /** Creates the repository if missing; true when this call created it. `creator` is kept with it. */
  create(id: string, creator?: string): Promise<boolean>;
  /**
   * Creates the repository with `owner` as its owner (and creator), if missing and only where `when` (an
   * SQL condition over the accounts database: the owner's plan cap, lib/usecases/quota.ts) holds. The condition,
   * the owner row and the repository's coming into existence are one atomic step, so racing creators
   * never pass a cap together, and a refusal ('refused') writes nothing. 'exists': the id, or a case
   * variant of it, is taken. Callers hold the creation lock of the id (`creation`).
   */
  createOwned(id: string, owner: string, when: Stmt | null): Promise<'created' | 'exists' | 'refused'>;
  /** The user id recorded as the repository's creator when it was made, or null. */
  creatorOf(id: string): Promise<string | null>;
  /** Serialises creating (and claiming) one id: `key` is the id folded to lower case. */
  readonly creation: { run<T>(key: string, fn: () => Promise<T>): Promise<T> };
  /**
   * Deletes the repository: its history, its derived index, and every row of the accounts database about it
   * (lib/db/repo-rows.ts); the id may be created again afterwards. False when it does not exist. Callers
   * hold the creation lock of the id (`creation`).
   */
  remove(id: string): Promise<boolean>;

  /**
   * The repository's handle: no I/O, and no check that it exists (whoever opens it checks that once, as
   * openRepo in lib/usecases/open-repo.ts does; a call on a missing repository fails with the git store's not-found error).
   */
  open(id: string): Repo;
}

/**
 * One repository, as Repos.open hands it out: on Node a view of RepoStore bound to the id; in the hosted build
 * the repository's Durable Object (its stub, bound to the id).
 */
export interface Repo {
  readonly id: string;
  /** Waits until the derived index reflects the branch in git. */
  ready(): Promise<void>;
  head(): Promise<IndexedCommit | null>;
  resolve(sha: string): Promise<IndexedCommit>;
  page(path: string): Promise<{ entry: HeadEntry; content: Uint8Array } | null>;
  fileAt(sha: string, path: string): Promise<Uint8Array | null>;
  pages(): Promise<HeadEntry[]>;
  history(path: string, limit: number, beforeSeq?: number): Promise<IndexedCommit[]>;
  timeline(limit: number): Promise<Array<IndexedCommit & { paths: string[] }>>;
  summary(): Promise<{ pageCount: number; lastCommit: IndexedCommit | null }>;
  /**
   * Full-text search over the pages at head, best first (lib/search/): `q` in the query language of
   * lib/core/search-query.ts (SearchQueryError, a 400, when it cannot be searched).
   */
  search(q: string, opts: SearchOptions): Promise<SearchPage>;
  /** The links of the page at head (what it links to, what links to it: lib/links/), or null when there is no such page. */
  links(path: string): Promise<LinksResponse | null>;
  /**
   * A pull's answer, the PullResponse JSON (lib/usecases/pull-body.ts), as a stream made as it is read: every page at
   * head, or with `since` the pages changed and deleted after it, as of the head when the call was made
   * (UnknownShaError, before anything is streamed, when `since` does not resolve). `pages`: whether the
   * answer holds any page. `onEnd` hears how the stream ended (Node; the hosted build's object logs it).
   */
  pullBody(since?: string, opts?: StreamOptions): Promise<{ pages: boolean; body: ReadableStream<Uint8Array> }>;
  commitFiles(
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts?: { owner?: string; activity?: (result: PushResult) => Stmt[] },
  ): Promise<PushResult>;
  readBlob(oid: string): Promise<Uint8Array>;
  /** The repository as a git bundle (lib/git/bundle.ts), streamed as it is read, or null while it has no commit. */
  exportBody(opts?: StreamOptions): Promise<ReadableStream<Uint8Array> | null>;
  /**
   * git's upload-pack answer to a parsed fetch (lib/git/upload-pack.ts), streamed as it is read; `sends`: it
   * holds a pack with commits in it.
   */
  uploadPack(req: FetchRequest, opts?: StreamOptions): Promise<UploadAnswer>;
  /**
   * An import of a git bundle, in steps (lib/import.ts, lib/repo/import-store.ts): `importBegin` makes a spool
   * and names it by a token, `importAppend` stores the body's chunks as they arrive, `importCheck` checks the
   * whole bundle (HttpError 400/413 when it is refused), `importFinish` keeps it in the repository (which must
   * exist and have no commit: 409 `repository is not empty`) and indexes its history; `importDiscard` drops
   * the spool (a no-op once finished). The spool is gone once finished or discarded.
   */
  importBegin(): Promise<string>;
  importAppend(token: string, chunk: Uint8Array): Promise<void>;
  importCheck(token: string, opts: ImportCheckOptions): Promise<ImportPlan>;
  importFinish(token: string): Promise<ImportPlan>;
  importDiscard(token: string): Promise<void>;
  /** The derived index's path queries (lib/repo/path-index.ts), for the diff service. */
  readonly index: RepoIndex;
  /**
   * Where set, the database a push's commit is recorded in: statements given as commitFiles' `activity`
   * run in the same transaction (the Node build, whose activity feed shares that database). Unset where the
   * commit is recorded elsewhere (the hosted build's object): the caller records its activity after.
   */
  readonly commitDatabase?: SqlDatabase;
}

/** How a streamed answer reports its end: `onEnd` (in this process), `requestId` (the request it answers, for a log line made elsewhere). */
export interface StreamOptions {
  onEnd?: StreamWatch;
  requestId?: string;
}

export interface RepoIndex {
  resolve(value: string): Promise<IndexedCommit>;
  history(path: string, limit: number, beforeSeq?: number): Promise<IndexedCommit[]>;
  touches(
    path: string,
    limit: number,
    beforeSeq?: number,
  ): Promise<Array<{ commit: IndexedCommit; blob: string | null }>>;
  lastTouch(path: string, atSeq: number): Promise<{ commit: IndexedCommit; blob: string | null } | null>;
}
