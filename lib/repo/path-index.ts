import type { SqlDatabase as Database, Stmt } from '../db/sql.ts';
import type { CommitMeta, GitStore, PathChange } from '../git/store.ts';
import { UnknownShaError } from '../core/errors.ts';
import { foldPathCase } from '../core/page/path.ts';
import { searchDocument, type SearchDocument } from '../search/document.ts';
import { FullTextIndex, type TextStore } from '../search/fts.ts';
import type { SearchOptions, SearchPage } from '../search/results.ts';
import { LinkIndex, linkDocument, linkStmts, type LinkDocument } from '../links/index.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import { TimeSlice } from '../util/time-slice.ts';

/**
 * The derived commit/path index in libSQL. It answers per-path history, "the previous commit touching
 * this path", pages at head and pull-since in O(result), and full-text search over the pages at head
 * (lib/search/fts.ts, whose rows live in a TextStore: per repository on Node), and the links between pages
 * (lib/links/). The full-text and link rows are derived from the pages at head: a push leaves them for
 * right after it (`recordMany` with `derived: false`, then `catchUpDerived`). It is never the source of
 * truth: `sync` compares it with the branch in git and replays (or rebuilds) what is missing, so a deleted or
 * stale database loses nothing.
 */

export interface IndexedCommit {
  sha: string;
  seq: number;
  author: string;
  email: string;
  /** Unix seconds. */
  time: number;
  message: string;
}

export interface HeadEntry {
  path: string;
  blob: string;
  /** The last commit that touched the path. */
  commit: IndexedCommit;
}

const COMMIT_COLS = 'c.sha, c.seq, c.author, c.email, c.time, c.message';
const REBUILD_CHUNK = 200;

/**
 * Paths per IN (...) query: under the smallest bound-parameter limit of the backends — 100 per statement in
 * a Durable Object's SQLite and in D1 (the hosted build); libSQL allows far more.
 */
const ENTRIES_CHUNK = 90;

type Row = Record<string, unknown>;
const toCommit = (r: Row): IndexedCommit => ({
  sha: String(r.sha),
  seq: Number(r.seq),
  author: String(r.author),
  email: String(r.email),
  time: Number(r.time),
  message: String(r.message),
});

export interface PathIndexOptions {
  /**
   * Keep the full-text rows (search_docs, search_fts) in step: default true. false only for measuring what
   * they cost (bench/workloads/search.ts); such an index answers `search` with what it held before.
   */
  search?: boolean;
  /**
   * Where the full-text rows live (lib/search/fts.ts): by default this index's own database, shared by every
   * repository; the Node server gives each repository a file of its own (lib/runtime/node/search-files.ts).
   */
  text?: TextStore;
}

/** New page contents by path (null: deleted), as a push hands them to `record`. */
export type PageContents = ReadonlyMap<string, Uint8Array | null>;

export class PathIndex {
  private readonly searchOn: boolean;
  /** The full-text rows (lib/search/fts.ts); kept in step by `record` and `sync`. */
  private readonly fts: FullTextIndex;
  /** The link rows (lib/links/); kept in step by `record` and `sync`. */
  private readonly linkIndex: LinkIndex;

  constructor(
    private readonly db: Database,
    opts: PathIndexOptions = {},
  ) {
    this.searchOn = opts.search ?? true;
    this.fts = new FullTextIndex(db, opts.text);
    this.linkIndex = new LinkIndex(db);
  }

  /** Where the full-text rows live (lib/search/fts.ts). */
  get text(): TextStore {
    return this.fts.text;
  }

  /** The database the index lives in (statements of other tables may join its batches when it is theirs). */
  get database(): Database {
    return this.db;
  }

  async headCommit(repo: string): Promise<IndexedCommit | null> {
    const r = await this.db.get<Row>(
      `SELECT ${COMMIT_COLS} FROM git_commits c WHERE c.repo_id = ? ORDER BY c.seq DESC LIMIT 1`,
      [repo],
    );
    return r ? toCommit(r) : null;
  }

  /**
   * Resolves 1–40 hex chars to the one commit of the branch they abbreviate. Anything else (not hex,
   * no match, more than one match) is UnknownShaError.
   */
  async resolve(repo: string, value: string): Promise<IndexedCommit> {
    if (!/^[0-9a-fA-F]{1,40}$/.test(value)) throw new UnknownShaError(value);
    const prefix = value.toLowerCase();
    const rows =
      prefix.length === 40
        ? await this.db.all<Row>(`SELECT ${COMMIT_COLS} FROM git_commits c WHERE c.repo_id = ? AND c.sha = ?`, [
            repo,
            prefix,
          ])
        : await this.db.all<Row>(
            `SELECT ${COMMIT_COLS} FROM git_commits c WHERE c.repo_id = ? AND c.sha >= ? AND c.sha < ? LIMIT 2`,
            [repo, prefix, `${prefix}g`],
          );
    if (rows.length !== 1) throw new UnknownShaError(value);
    return toCommit(rows[0]!);
  }

  /** Which of `shas` (40 hex digits each) are commits of the branch, in batches under the backends' parameter limit. */
  async knownCommits(repo: string, shas: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < shas.length; i += ENTRIES_CHUNK) {
      const chunk = shas.slice(i, i + ENTRIES_CHUNK);
      const rows = await this.db.all<Row>(
        `SELECT sha FROM git_commits WHERE repo_id = ? AND sha IN (${chunk.map(() => '?').join(', ')})`,
        [repo, ...chunk],
      );
      for (const r of rows) out.add(String(r.sha));
    }
    return out;
  }

  /** The page at head: its blob and the last commit that touched it, or null. */
  async entry(repo: string, path: string): Promise<HeadEntry | null> {
    const r = await this.db.get<Row>(
      `SELECT h.path, h.blob, ${COMMIT_COLS} FROM git_head h JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
       WHERE h.repo_id = ? AND h.path = ?`,
      [repo, path],
    );
    return r ? { path: String(r.path), blob: String(r.blob), commit: toCommit(r) } : null;
  }

  /** The head entries of several pages at once (missing pages are absent from the map). */
  async entries(repo: string, paths: string[]): Promise<Map<string, HeadEntry>> {
    const out = new Map<string, HeadEntry>();
    const unique = [...new Set(paths)];
    for (let i = 0; i < unique.length; i += ENTRIES_CHUNK) {
      const chunk = unique.slice(i, i + ENTRIES_CHUNK);
      const rows = await this.db.all<Row>(
        `SELECT h.path, h.blob, ${COMMIT_COLS} FROM git_head h JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
         WHERE h.repo_id = ? AND h.path IN (${chunk.map(() => '?').join(', ')})`,
        [repo, ...chunk],
      );
      for (const r of rows) out.set(String(r.path), { path: String(r.path), blob: String(r.blob), commit: toCommit(r) });
    }
    return out;
  }

  /**
   * The pages at head whose case-folded path (foldPathCase) is one of `folds`, grouped by that key: what
   * a new path would collide with on a case-insensitive disk. One indexed lookup per key (INDEXED BY: left
   * to itself, SQLite walks the whole repository's rows in path order to spare the sort, once per chunk — 1.4 s
   * for a push of 10,000 pages into 20,000).
   */
  async caseTwins(repo: string, folds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    const unique = [...new Set(folds)];
    for (let i = 0; i < unique.length; i += ENTRIES_CHUNK) {
      const chunk = unique.slice(i, i + ENTRIES_CHUNK);
      const rows = await this.db.all<Row>(
        `SELECT path, path_fold FROM git_head INDEXED BY git_head_fold
         WHERE repo_id = ? AND path_fold IN (${chunk.map(() => '?').join(', ')}) ORDER BY path`,
        [repo, ...chunk],
      );
      for (const r of rows) {
        const key = String(r.path_fold);
        let list = out.get(key);
        if (!list) out.set(key, (list = []));
        list.push(String(r.path));
      }
    }
    return out;
  }

  /** Every page at head, sorted by path (byte order, as git sorts). */
  async pages(repo: string): Promise<HeadEntry[]> {
    const rows = await this.db.all<Row>(
      `SELECT h.path, h.blob, ${COMMIT_COLS} FROM git_head h JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
       WHERE h.repo_id = ? ORDER BY h.path`,
      [repo],
    );
    return rows.map((r) => ({ path: String(r.path), blob: String(r.blob), commit: toCommit(r) }));
  }

  async pageCount(repo: string): Promise<number> {
    const r = await this.db.get<Row>('SELECT COUNT(*) AS n FROM git_head WHERE repo_id = ?', [repo]);
    return Number(r?.n ?? 0);
  }

  /** Commits touching `path`, newest first, optionally only those before `beforeSeq`. */
  async history(repo: string, path: string, limit: number, beforeSeq?: number): Promise<IndexedCommit[]> {
    const rows = await this.db.all<Row>(
      `SELECT ${COMMIT_COLS} FROM git_changes ch JOIN git_commits c ON c.repo_id = ch.repo_id AND c.seq = ch.seq
       WHERE ch.repo_id = ? AND ch.path = ? AND ch.seq < ? ORDER BY ch.seq DESC LIMIT ?`,
      [repo, path, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit],
    );
    return rows.map(toCommit);
  }

  /** As `history`, each commit with the blob it left at `path` (null where it deleted the page). */
  async touches(
    repo: string,
    path: string,
    limit: number,
    beforeSeq?: number,
  ): Promise<Array<{ commit: IndexedCommit; blob: string | null }>> {
    const rows = await this.db.all<Row>(
      `SELECT ch.blob, ${COMMIT_COLS} FROM git_changes ch JOIN git_commits c ON c.repo_id = ch.repo_id AND c.seq = ch.seq
       WHERE ch.repo_id = ? AND ch.path = ? AND ch.seq < ? ORDER BY ch.seq DESC LIMIT ?`,
      [repo, path, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit],
    );
    return rows.map((r) => ({ commit: toCommit(r), blob: r.blob === null ? null : String(r.blob) }));
  }

  /** The most recent commit at or before `atSeq` that touched `path` (with the blob it left), or null. */
  async lastTouch(repo: string, path: string, atSeq: number): Promise<{ commit: IndexedCommit; blob: string | null } | null> {
    const r = await this.db.get<Row>(
      `SELECT ch.blob, ${COMMIT_COLS} FROM git_changes ch JOIN git_commits c ON c.repo_id = ch.repo_id AND c.seq = ch.seq
       WHERE ch.repo_id = ? AND ch.path = ? AND ch.seq <= ? ORDER BY ch.seq DESC LIMIT 1`,
      [repo, path, atSeq],
    );
    return r ? { commit: toCommit(r), blob: r.blob === null ? null : String(r.blob) } : null;
  }

  /** Newest commits first, each with the paths it touched. */
  async timeline(repo: string, limit: number): Promise<Array<IndexedCommit & { paths: string[] }>> {
    const commits = (
      await this.db.all<Row>(
        `SELECT ${COMMIT_COLS} FROM git_commits c WHERE c.repo_id = ? ORDER BY c.seq DESC LIMIT ?`,
        [repo, limit],
      )
    ).map(toCommit);
    if (commits.length === 0) return [];
    const lo = commits[commits.length - 1]!.seq;
    const hi = commits[0]!.seq;
    const paths = new Map<number, string[]>();
    for (const r of await this.db.all<Row>(
      'SELECT seq, path FROM git_changes WHERE repo_id = ? AND seq BETWEEN ? AND ? ORDER BY seq, path',
      [repo, lo, hi],
    )) {
      const seq = Number(r.seq);
      let list = paths.get(seq);
      if (!list) paths.set(seq, (list = []));
      list.push(String(r.path));
    }
    return commits.map((c) => ({ ...c, paths: paths.get(c.seq) ?? [] }));
  }

  /**
   * Pages changed after `sinceSeq` up to head: the ones present at head (with their blob and last
   * commit) and the ones deleted since (only those that existed at `sinceSeq`).
   */
  async changedSince(repo: string, sinceSeq: number): Promise<{ present: HeadEntry[]; deleted: string[] }> {
    const rows = await this.db.all<Row>(
      `SELECT p.path AS path, h.blob AS blob, c.sha, c.seq, c.author, c.email, c.time, c.message,
              (SELECT o.blob FROM git_changes o WHERE o.repo_id = ? AND o.path = p.path AND o.seq <= ?
                ORDER BY o.seq DESC LIMIT 1) AS before
       FROM (SELECT DISTINCT path FROM git_changes WHERE repo_id = ? AND seq > ?) p
       LEFT JOIN git_head h ON h.repo_id = ? AND h.path = p.path
       LEFT JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
       ORDER BY p.path`,
      [repo, sinceSeq, repo, sinceSeq, repo],
    );
    const { present, deleted } = changesOf(rows);
    return { present, deleted };
  }

  /** The commits of `seqs` by seq (every one recorded: git_head and git_changes name only recorded commits). */
  private async commitsBySeq(repo: string, seqs: number[]): Promise<Map<number, IndexedCommit>> {
    const out = new Map<number, IndexedCommit>();
    for (let i = 0; i < seqs.length; i += ENTRIES_CHUNK) {
      const chunk = seqs.slice(i, i + ENTRIES_CHUNK);
      for (const r of await this.db.all<Row>(
        `SELECT ${COMMIT_COLS} FROM git_commits c WHERE c.repo_id = ? AND c.seq IN (${chunk.map(() => '?').join(', ')})`,
        [repo, ...chunk],
      )) {
        out.set(Number(r.seq), toCommit(r));
      }
    }
    return out;
  }

  /**
   * One batch of a pull fixed at the commit `atSeq` (the head when the pull began), in path order after
   * `after` (`''`: from the first path), at most `limit` paths: every page at that commit, or, with
   * `sinceSeq`, the pages changed after that commit up to `atSeq` and (in `deleted`) the ones deleted since
   * that existed then. Read as of `atSeq` (git_head while it is still the head, git_changes after), so
   * commits recorded meanwhile change nothing in it. `last` is the `after` of the next batch, or null when this one is the last.
   */
  async pullBatch(
    repo: string,
    atSeq: number,
    after: string,
    limit: number,
    sinceSeq?: number,
  ): Promise<{ present: HeadEntry[]; deleted: string[]; last: string | null }> {
    if (sinceSeq === undefined) {
      // While the head is still `atSeq`, the pages at it are git_head's rows: a range of its primary key,
      // whatever the length of the history. The head is read in the same statement (one snapshot); once a
      // push has moved it (or nothing is left to show it), the pages as of `atSeq` come from git_changes.
      const rows = await this.db.all<Row>(
        `SELECT path, blob, seq, (SELECT seq FROM git_commits WHERE repo_id = ? ORDER BY seq DESC LIMIT 1) AS head_seq
         FROM git_head WHERE repo_id = ? AND path > ? ORDER BY path LIMIT ?`,
        [repo, repo, after, limit],
      );
      if (rows.length > 0 && Number(rows[0]!.head_seq) === atSeq) {
        // The commits once each (a push of 10,000 pages is one commit for all of them), not once a row.
        const seqs = [...new Set(rows.map((r) => Number(r.seq)))];
        const commits = await this.commitsBySeq(repo, seqs);
        // (A commit gone meanwhile — the index cut back to another history — leaves it to the query below.)
        if (commits.size === seqs.length) {
          const present = rows.map((r) => ({ path: String(r.path), blob: String(r.blob), commit: commits.get(Number(r.seq))! }));
          return { present, deleted: [], last: rows.length < limit ? null : String(rows[rows.length - 1]!.path) };
        }
      }
    }
    // CROSS JOIN keeps the batch's paths the outer loop: each one's row at `atSeq` is found by primary key.
    const rows =
      sinceSeq === undefined
        ? await this.db.all<Row>(
            `SELECT p.path AS path, ch.blob AS blob, ${COMMIT_COLS}, NULL AS before
             FROM (SELECT path, MAX(seq) AS at FROM git_changes WHERE repo_id = ? AND path > ? AND seq <= ?
                   GROUP BY path ORDER BY path LIMIT ?) p
             CROSS JOIN git_changes ch ON ch.repo_id = ? AND ch.path = p.path AND ch.seq = p.at
             LEFT JOIN git_commits c ON c.repo_id = ch.repo_id AND c.seq = ch.seq
             ORDER BY p.path`,
            [repo, after, atSeq, limit, repo],
          )
        : await this.db.all<Row>(
            // The paths changed since come from the seq index: O(changes), not O(history), a batch.
            `SELECT p.path AS path, ch.blob AS blob, ${COMMIT_COLS},
                    (SELECT o.blob FROM git_changes o WHERE o.repo_id = ? AND o.path = p.path AND o.seq <= ?
                      ORDER BY o.seq DESC LIMIT 1) AS before
             FROM (SELECT DISTINCT path FROM git_changes INDEXED BY git_changes_seq
                   WHERE repo_id = ? AND seq > ? AND seq <= ? AND path > ? ORDER BY path LIMIT ?) p
             CROSS JOIN git_changes ch ON ch.repo_id = ? AND ch.path = p.path
               AND ch.seq = (SELECT MAX(m.seq) FROM git_changes m WHERE m.repo_id = ? AND m.path = p.path AND m.seq <= ?)
             LEFT JOIN git_commits c ON c.repo_id = ch.repo_id AND c.seq = ch.seq
             ORDER BY p.path`,
            [repo, sinceSeq, repo, sinceSeq, atSeq, after, limit, repo, repo, atSeq],
          );
    const { present, deleted } = changesOf(rows);
    return { present, deleted, last: rows.length < limit ? null : String(rows[rows.length - 1]!.path) };
  }

  /**
   * Statements recording one commit on top of the current head (seq = previous + 1). With `links`, the link
   * rows of every changed path it holds are replaced in the same batch.
   */
  private recordStmts(
    repo: string,
    seq: number,
    meta: CommitMeta,
    changes: PathChange[],
    links?: ReadonlyMap<string, LinkDocument | null>,
  ): Stmt[] {
    const stmts: Stmt[] = [
      {
        sql: 'INSERT INTO git_commits (repo_id, seq, sha, author, email, time, message) VALUES (?, ?, ?, ?, ?, ?, ?)',
        args: [repo, seq, meta.sha, meta.author, meta.email, meta.time, meta.message],
      },
    ];
    for (const ch of changes) {
      stmts.push({
        sql: 'INSERT INTO git_changes (repo_id, path, seq, blob) VALUES (?, ?, ?, ?)',
        args: [repo, ch.path, seq, ch.blob],
      });
      stmts.push(
        ch.blob === null
          ? { sql: 'DELETE FROM git_head WHERE repo_id = ? AND path = ?', args: [repo, ch.path] }
          : {
              sql: `INSERT INTO git_head (repo_id, path, blob, seq, path_fold) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (repo_id, path) DO UPDATE SET blob = excluded.blob, seq = excluded.seq, path_fold = excluded.path_fold`,
              args: [repo, ch.path, ch.blob, seq, foldPathCase(ch.path)],
            },
      );
      const linked = links?.get(ch.path);
      if (linked !== undefined) stmts.push(...linkStmts(repo, ch.path, ch.blob === null || linked === null ? null : { blob: ch.blob, doc: linked }));
    }
    return stmts;
  }

  /**
   * Records a commit the caller just made on top of the indexed head. `contents` (the pushed bytes by path)
   * keeps the full-text rows in step right after: a page is searchable as soon as the push is answered.
   */
  async record(repo: string, meta: CommitMeta, changes: PathChange[], contents: PageContents): Promise<IndexedCommit> {
    return (await this.recordMany(repo, [{ meta, changes, contents }]))[0]!;
  }

  /**
   * Records a chain of commits (each the parent of the next, the first on top of the indexed head) in one
   * batch, with `extra` statements (e.g. activity rows) and the link rows of the changed pages (lib/links/) in
   * the same transaction, then the changed pages' full-text rows, in their own database (were that write to
   * fail, the commits stay recorded and the next catch-up makes the rows). `derived: false` records neither
   * link nor full-text rows: they stay behind head for `catchUpDerived` (RepoStore makes them right after the
   * push, for many pushes at once). `head`: the indexed head the chain builds on, when the caller read it
   * under the repository's lock (one query less a push); read here otherwise.
   */
  async recordMany(
    repo: string,
    commits: ReadonlyArray<{ meta: CommitMeta; changes: PathChange[]; contents: PageContents }>,
    extra: Stmt[] = [],
    opts: {
      derived?: boolean;
      head?: IndexedCommit | null;
      /** Told the results of the `extra` statements, in order. */
      extraResults?: (results: Array<{ changes: number; rows: Record<string, unknown>[] }>) => void;
    } = {},
  ): Promise<IndexedCommit[]> {
    const derived = opts.derived !== false;
    const fullText = this.searchOn && derived;
    const head = opts.head !== undefined ? opts.head : await this.headCommit(repo);
    let seq = head?.seq ?? 0;
    const stmts: Stmt[] = [];
    const out: IndexedCommit[] = [];
    // The last change of each path across the chain wins.
    const docs = new Map<string, { blob: string; doc: SearchDocument | null } | null>();
    for (const { meta, changes, contents } of commits) {
      seq += 1;
      if (fullText) {
        for (const ch of changes) {
          const bytes = ch.blob === null ? null : contents.get(ch.path);
          docs.set(ch.path, ch.blob === null ? null : { blob: ch.blob, doc: bytes ? searchDocument(ch.path, bytes) : null });
        }
      }
      // A page whose bytes are not at hand keeps its rows, which then describe an older blob: sync's
      // catch-up makes them again.
      let links: Map<string, LinkDocument | null> | undefined;
      if (derived) {
        links = new Map();
        // Parsing 10,000 pages for their links is most of a second: other requests get turns meanwhile.
        const slice = new TimeSlice();
        for (const ch of changes) {
          if (slice.due) await slice.next();
          const bytes = ch.blob === null ? null : contents.get(ch.path);
          if (ch.blob === null) links.set(ch.path, null);
          else if (bytes) links.set(ch.path, linkDocument(ch.path, bytes));
        }
      }
      stmts.push(...this.recordStmts(repo, seq, meta, changes, links));
      out.push({ sha: meta.sha, seq, author: meta.author, email: meta.email, time: meta.time, message: meta.message });
    }
    const results = await this.db.batch([...stmts, ...extra]);
    opts.extraResults?.(results.slice(stmts.length));
    if (fullText) await this.fts.record(repo, docs);
    return out;
  }

  /**
   * Brings the index level with the branch in git. Walks back from git's head to the newest commit the
   * index already knows, then replays the commits after it; if the index holds commits git does not
   * (it diverged), it is cut back to the common point first. Callers hold the repository's lock.
   * Returns the number of commits replayed.
   */
  async sync(repo: string, store: GitStore): Promise<number> {
    const replayed = await this.replay(repo, store);
    await this.fillFolds(repo);
    if (this.searchOn) await this.fts.catchUp(repo, (blob) => store.readBlob(repo, blob));
    await this.linkIndex.catchUp(repo, (blob) => store.readBlob(repo, blob));
    return replayed;
  }

  /** Whether this index keeps full-text rows at all (false only for measuring their cost). */
  get fullText(): boolean {
    return this.searchOn;
  }

  /**
   * Brings the link and full-text rows of `paths` (all pages without it) level with head: the part of `sync`
   * that `recordMany(…, { derived: false })` leaves for later. Callers hold the repository's lock.
   */
  async catchUpDerived(repo: string, store: GitStore, paths?: readonly string[]): Promise<void> {
    const read = (blob: string) => store.readBlob(repo, blob);
    if (paths) await this.linkIndex.catchUpPaths(repo, paths, read);
    else await this.linkIndex.catchUp(repo, read);
    if (this.searchOn) await this.fts.catchUp(repo, read, paths);
  }

  /**
   * Full-text search over the pages at head (lib/search/fts.ts; lib/core/search-query.ts for `q`).
   * SearchQueryError (400) for a query that cannot be searched.
   */
  search(repo: string, q: string, opts: SearchOptions): Promise<SearchPage> {
    return this.fts.search(repo, q, opts);
  }

  /** Deletes every full-text row of `repo` (its repository is deleted). */
  dropSearch(repo: string): Promise<void> {
    return this.fts.drop(repo);
  }

  /** Closes the full-text rows' databases (not this index's own database, which its opener closes). */
  close(): Promise<void> {
    return this.fts.text.close();
  }

  /**
   * The links of the page at `path`, which the caller found at head (lib/links/index.ts): what it links to
   * and the pages that link to it.
   */
  links(repo: string, path: string): Promise<LinksResponse> {
    return this.linkIndex.forPage(repo, path);
  }

  /**
   * Statements deleting every row this index holds for a repository (its deletion: lib/repo/repo-store.ts
   * `remove`): commits, changes, head and link rows, the event log and webhooks. The full-text rows live in
   * their own store: `dropSearch` deletes them.
   */
  removalStmts(repo: string): Stmt[] {
    return [
      { sql: 'DELETE FROM git_commits WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM git_changes WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM git_head WHERE repo_id = ?', args: [repo] },
      ...LinkIndex.removalStmts(repo),
      // Live events (schema/migrations/0011_events.sql): the event log, webhooks and their deliveries.
      { sql: 'DELETE FROM webhook_deliveries WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM webhooks WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM repo_events WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM repo_event_seq WHERE repo_id = ?', args: [repo] },
    ];
  }

  /**
   * Fills `path_fold` where it is missing: rows indexed before migration 0002, and head rows rebuilt from
   * git_changes by `replay`. SQLite cannot compute the fold (its lower() is ASCII-only), so it is done here.
   */
  private async fillFolds(repo: string): Promise<void> {
    const rows = await this.db.all<Row>('SELECT path FROM git_head WHERE repo_id = ? AND path_fold IS NULL', [repo]);
    for (let i = 0; i < rows.length; i += ENTRIES_CHUNK) {
      await this.db.batch(
        rows.slice(i, i + ENTRIES_CHUNK).map((r) => ({
          sql: 'UPDATE git_head SET path_fold = ? WHERE repo_id = ? AND path = ?',
          args: [foldPathCase(String(r.path)), repo, String(r.path)],
        })),
      );
    }
  }

  private async replay(repo: string, store: GitStore): Promise<number> {
    const gitHead = await store.head(repo);
    const indexed = await this.headCommit(repo);
    if ((gitHead ?? null) === (indexed?.sha ?? null)) return 0;

    const missing: CommitMeta[] = [];
    let base: { seq: number } | null = null;
    for (let sha = gitHead; sha; ) {
      const known = await this.db.get<Row>('SELECT seq FROM git_commits WHERE repo_id = ? AND sha = ?', [repo, sha]);
      if (known) {
        base = { seq: Number(known.seq) };
        break;
      }
      const meta = await store.readCommit(repo, sha);
      missing.push(meta);
      sha = meta.parent;
    }
    missing.reverse();

    const baseSeq = base?.seq ?? 0;
    if (!indexed || indexed.seq !== baseSeq) {
      // The index is ahead of or beside git: cut it back to the common point and rebuild head state. Push
      // events recorded with those commits go too (activity, the event log, webhook deliveries): git never
      // reached them, so no push was acknowledged.
      const cut = (table: string): Stmt => ({
        sql: `DELETE FROM ${table} WHERE repo_id = ? AND commit_sha IN (
                SELECT sha FROM git_commits WHERE repo_id = ? AND seq > ?)`,
        args: [repo, repo, baseSeq],
      });
      await this.db.batch([
        cut('activity'),
        cut('repo_events'),
        cut('webhook_deliveries'),
        { sql: 'DELETE FROM git_commits WHERE repo_id = ? AND seq > ?', args: [repo, baseSeq] },
        { sql: 'DELETE FROM git_changes WHERE repo_id = ? AND seq > ?', args: [repo, baseSeq] },
        { sql: 'DELETE FROM git_head WHERE repo_id = ?', args: [repo] },
      ]);
      if (baseSeq > 0) {
        await this.db.run(
          `INSERT INTO git_head (repo_id, path, blob, seq)
           SELECT ch.repo_id, ch.path, ch.blob, ch.seq FROM git_changes ch
           WHERE ch.repo_id = ? AND ch.seq = (SELECT MAX(seq) FROM git_changes o WHERE o.repo_id = ch.repo_id AND o.path = ch.path)
             AND ch.blob IS NOT NULL`,
          [repo],
        );
      }
    }

    let seq = baseSeq;
    for (let i = 0; i < missing.length; i += REBUILD_CHUNK) {
      const stmts: Stmt[] = [];
      for (const meta of missing.slice(i, i + REBUILD_CHUNK)) {
        seq += 1;
        const changes = await store.changedPaths(repo, meta.parent, meta.sha);
        stmts.push(...this.recordStmts(repo, seq, meta, changes));
      }
      await this.db.batch(stmts);
    }
    return missing.length;
  }
}

/**
 * Rows of a pull's query (path, blob at the pulled commit, `before`: the blob at `since`) as the pages present
 * and the paths deleted since: a page with no blob now that had one then is a deletion; one that had none
 * either (made and deleted in between) is neither.
 */
function changesOf(rows: Row[]): { present: HeadEntry[]; deleted: string[] } {
  const present: HeadEntry[] = [];
  const deleted: string[] = [];
  for (const r of rows) {
    if (r.blob !== null && r.blob !== undefined) {
      present.push({ path: String(r.path), blob: String(r.blob), commit: toCommit(r) });
    } else if (r.before !== null && r.before !== undefined) {
      deleted.push(String(r.path));
    }
  }
  return { present, deleted };
}
