/**
 * The full-text rows of the derived index, per repository: `search_docs` (one row per page at head), the
 * FTS5 table `search_fts` sharing its ids, and `search_level` (the commit they are level with). They live in
 * a TextStore: a database of their own per repository on Node (lib/runtime/node/search-files.ts: a file each, read
 * on worker threads), the repository's Durable Object's SQLite on Workers, or any one database (the index's
 * own, for tests and measurements). A search reads the rows of its repository only, so its cost does not
 * depend on what other repositories hold (docs/architecture.md). The commit rows (git_head, git_commits,
 * git_changes) stay in the index's database; PathIndex (lib/repo/path-index.ts) keeps both in step and
 * answers `search` through here. Plain SQL over the Database interface, the same on every backend.
 */
import type { SqlDatabase as Database, Stmt } from '../db/sql.ts';
import type { SqlArgs } from '../db/sql.ts';
import { normalizeField, searchDocument, tagKey, tagNeedle, type SearchDocument } from './document.ts';
import { parseQuery } from '../core/search-query.ts';
import { nextTurn } from '../core/differ/budget.ts';
import { TimeSlice } from '../util/time-slice.ts';
import {
  BM25_ARGS,
  SNIPPET_CLOSE,
  SNIPPET_ELLIPSIS,
  SNIPPET_OPEN,
  SNIPPET_TOKENS,
  scoreOf,
  shapeSnippet,
  type SearchOptions,
  type SearchPage,
} from './results.ts';

type Row = Record<string, unknown>;

/**
 * Pages re-indexed per batch when catchUp levels the full-text rows with head: a batch runs on the event loop
 * (some 50 ms for 100 small pages on a busy 2-core machine), the loop gets a turn between batches.
 */
const CHUNK = 100;
/** Blob reads catchUp keeps in flight. */
const READS_IN_FLIGHT = 16;
/**
 * Ids per `IN (...)` list: a Durable Object's SQLite and D1 refuse a statement with more than 100 bound
 * parameters (the snippet query has 4 others).
 */
const IDS_PER_QUERY = 90;
/**
 * Pages compared per step when every page is compared (a lost or replaced file): one step's rows are read,
 * then the event loop gets a turn, so that a 100,000-page repository does not hold it for the whole walk.
 */
const COMPARE_CHUNK = 5_000;
/**
 * Rows past the requested page that a search of one repository's table ranks and looks at, to see a run of
 * equal ranks at the page's end whole (see search).
 */
const TIE_MARGIN = 32;

/**
 * The full-text table: title, tags and summary from the frontmatter, the headings, the body; case and
 * diacritics folded by the tokenizer; bm25 weights per column in lib/search/results.ts. Created by the index
 * itself, not by a migration (schema/migrations/0007_search.sql says why).
 */
export const SEARCH_FTS_DDL =
  "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(title, tags, summary, headings, body, tokenize = 'unicode61 remove_diacritics 2')";
/** search_docs as migration 0007 makes it: a database of full-text rows alone (Node's files) gets it here. */
const SEARCH_DOCS_DDL = `CREATE TABLE IF NOT EXISTS search_docs (
  id INTEGER PRIMARY KEY, repo_id TEXT NOT NULL, path TEXT NOT NULL, blob TEXT NOT NULL,
  title TEXT, type TEXT, tags TEXT, tag_key TEXT, UNIQUE (repo_id, path))`;
/**
 * The commit (`seq` and `sha` in git_commits) the repository's rows are level with: every page at that commit
 * has its row and there is no other. From there, a catch-up looks only at the pages changed since.
 */
const SEARCH_LEVEL_DDL = 'CREATE TABLE IF NOT EXISTS search_level (repo_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, sha TEXT NOT NULL)';

/** Reads of one repository's full-text rows (they may run on another thread). */
export interface TextReader {
  all<T = Row>(sql: string, args?: SqlArgs): Promise<T[]>;
}

/** Where each repository's full-text rows live. */
export interface TextStore {
  /**
   * Each database holds one repository's rows and nothing else: a count needs no look at search_docs. False
   * for a database shared by several repositories, whose queries then filter by repo_id.
   */
  readonly perRepository: boolean;
  /** Runs `fn` with the database of `repo`'s rows, to read and write (callers hold the repository's lock). */
  write<T>(repo: string, fn: (db: Database) => Promise<T>): Promise<T>;
  /** Runs `fn` with a reader of `repo`'s rows: the queries of a search. */
  read<T>(repo: string, fn: (reader: TextReader) => Promise<T>): Promise<T>;
  /** Deletes every full-text row of `repo` (its repository is gone). */
  drop(repo: string): Promise<void>;
  /** Closes what the store opened. */
  close(): Promise<void>;
}

/**
 * The rows in one database, the index's own: a Durable Object's, which holds one repository
 * (`oneRepository`: its queries need not filter by repository), or every repository's (tests, measurements).
 */
export function sharedTextStore(db: Database, opts: { oneRepository?: boolean } = {}): TextStore {
  return {
    perRepository: opts.oneRepository === true,
    write: (_repo, fn) => fn(db),
    read: (_repo, fn) => fn(db),
    async drop(repo) {
      await db.batch([
        { sql: 'DELETE FROM search_fts WHERE rowid IN (SELECT id FROM search_docs WHERE repo_id = ?)', args: [repo] },
        { sql: 'DELETE FROM search_docs WHERE repo_id = ?', args: [repo] },
        { sql: 'DELETE FROM search_level WHERE repo_id = ?', args: [repo] },
      ]);
    },
    close: async () => undefined,
  };
}

export class FullTextIndex {
  /** Databases whose full-text tables exist (made at most once per database object; see ensureTables). */
  private readonly tables = new WeakMap<Database, Promise<void>>();
  /** Repositories whose rows' database this process has already set up (a search needs no write first). */
  private readonly prepared = new Set<string>();

  /**
   * `meta` holds the commit rows (git_head, git_commits, git_changes) the full-text rows are compared with;
   * `text` the full-text rows themselves (by default the same database, shared by every repository).
   */
  constructor(
    private readonly meta: Database,
    readonly text: TextStore = sharedTextStore(meta),
  ) {}

  /**
   * Creates the full-text tables where they are missing: a new file, a database from before they existed, one
   * whose FTS5 table was lost. Rows that nothing describes any more go in the same batch (a lost search_fts
   * leaves search_docs describing nothing; the next catch-up indexes every page again). Once per database:
   * concurrent uses wait for the same creation.
   */
  private ensureTables(db: Database): Promise<void> {
    let made = this.tables.get(db);
    if (!made) {
      made = (async () => {
        const names = new Set(
          (
            await db.all<Row>(
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('search_fts', 'search_docs', 'search_level')",
            )
          ).map((r) => String(r.name)),
        );
        if (names.size === 3) return;
        const stmts: Stmt[] = [{ sql: SEARCH_DOCS_DDL }, { sql: SEARCH_LEVEL_DDL }];
        if (!names.has('search_fts')) {
          stmts.push({ sql: SEARCH_FTS_DDL }, { sql: 'DELETE FROM search_docs' }, { sql: 'DELETE FROM search_level' });
        } else if (!names.has('search_docs')) {
          stmts.push({ sql: 'DELETE FROM search_fts' }, { sql: 'DELETE FROM search_level' });
        }
        await db.batch(stmts);
      })();
      this.tables.set(db, made);
      made.catch(() => {
        if (this.tables.get(db) === made) this.tables.delete(db);
      });
    }
    return made;
  }

  /** Runs `fn` with `repo`'s full-text database, its tables made. */
  private write<T>(repo: string, fn: (db: Database) => Promise<T>): Promise<T> {
    return this.text.write(repo, async (db) => {
      await this.ensureTables(db);
      this.prepared.add(repo);
      return fn(db);
    });
  }

  /**
   * Levels `repo`'s full-text rows with the indexed head: a page whose indexed blob is not its blob at head
   * (or that has no row) is indexed from its blob; a row whose page is gone is deleted. The pages looked at
   * are those changed since the commit the rows are level with (search_level; nothing when that is head),
   * with `paths` besides; every page when that commit is unknown (a new or lost file, a database from before
   * search_level, an index cut back to another history). The rows are then level with head. Its batches do
   * not wait for the disk (`durable: false`): rows a crash loses are behind head again, and the next sync
   * makes them. Callers hold the repository's lock.
   */
  async catchUp(repo: string, readBlob: (blob: string) => Promise<Uint8Array>, paths?: readonly string[]): Promise<void> {
    const head = await this.meta.get<Row>('SELECT seq, sha FROM git_commits WHERE repo_id = ? ORDER BY seq DESC LIMIT 1', [repo]);
    // The read side answers a repository this process has not written yet (every one at a restart) without
    // opening its write connection; once written here, the write side's own check below is as cheap and
    // saves a round trip to a read thread (a push's catch-up is never level: its commit moved head).
    if (head !== undefined && !this.prepared.has(repo) && (await this.levelWithHead(repo, head))) {
      this.prepared.add(repo);
      return;
    }
    await this.write(repo, async (db) => {
      const level = await db.get<Row>('SELECT seq, sha FROM search_level WHERE repo_id = ?', [repo]);
      const known =
        level !== undefined &&
        (await this.meta.get<Row>('SELECT 1 AS x FROM git_commits WHERE repo_id = ? AND seq = ? AND sha = ?', [repo, Number(level.seq), String(level.sha)])) !==
          undefined;
      let behind: { stale: Array<{ path: string; blob: string }>; gone: string[] };
      if (known && head !== undefined && Number(level!.seq) === Number(head.seq)) return;
      if (known) {
        const changed = await this.meta.all<Row>('SELECT DISTINCT path FROM git_changes WHERE repo_id = ? AND seq > ?', [repo, Number(level!.seq)]);
        const some = new Set([...changed.map((r) => String(r.path)), ...(paths ?? [])]);
        behind = await this.compareSome(db, repo, [...some].sort());
      } else {
        behind = await this.compareAll(db, repo);
      }
      const levelStmt: Stmt = head
        ? {
            sql: 'INSERT INTO search_level (repo_id, seq, sha) VALUES (?, ?, ?) ON CONFLICT (repo_id) DO UPDATE SET seq = excluded.seq, sha = excluded.sha',
            args: [repo, Number(head.seq), String(head.sha)],
          }
        : { sql: 'DELETE FROM search_level WHERE repo_id = ?', args: [repo] };
      await this.reindex(db, repo, behind, readBlob, levelStmt);
    });
  }

  /**
   * Whether `repo`'s rows are level with `head` already, asked of the read side (the case of every
   * repository at a restart: no write connection is opened for it). Any failure (no file yet, a table
   * missing: the statement names all three) says no, and the catch-up looks for itself.
   */
  private async levelWithHead(repo: string, head: Row): Promise<boolean> {
    try {
      const rows = await this.text.read(repo, (r) =>
        r.all<Row>(
          `SELECT seq, sha FROM search_level WHERE repo_id = ?
             AND NOT EXISTS (SELECT 1 FROM search_fts WHERE rowid = 0) AND NOT EXISTS (SELECT 1 FROM search_docs WHERE id = 0)`,
          [repo],
        ),
      );
      return rows.length === 1 && Number(rows[0]!.seq) === Number(head.seq) && String(rows[0]!.sha) === String(head.sha);
    } catch {
      return false;
    }
  }

  /** Of `paths` (sorted), the pages whose row is missing or old, and the rows whose page is gone. */
  private async compareSome(db: Database, repo: string, paths: string[]) {
    const stale: Array<{ path: string; blob: string }> = [];
    const gone: string[] = [];
    // 10,000 paths are two queries per 90 of them, on this thread: other requests get turns between slices.
    const slice = new TimeSlice();
    for (let i = 0; i < paths.length; i += IDS_PER_QUERY) {
      if (slice.due) await slice.next();
      const some = paths.slice(i, i + IDS_PER_QUERY);
      const list = some.map(() => '?').join(', ');
      const heads = await this.meta.all<Row>(`SELECT path, blob FROM git_head WHERE repo_id = ? AND path IN (${list})`, [repo, ...some]);
      const docs = await db.all<Row>(`SELECT path, blob FROM search_docs WHERE repo_id = ? AND path IN (${list})`, [repo, ...some]);
      diff(heads, docs, stale, gone);
    }
    return { stale, gone };
  }

  /**
   * Every page against every row, COMPARE_CHUNK pages of git_head at a time with the rows of the same range of
   * paths (both in SQLite's order of paths), the event loop free between steps.
   */
  private async compareAll(db: Database, repo: string) {
    const stale: Array<{ path: string; blob: string }> = [];
    const gone: string[] = [];
    let after = '';
    for (;;) {
      const heads = await this.meta.all<Row>('SELECT path, blob FROM git_head WHERE repo_id = ? AND path > ? ORDER BY path LIMIT ?', [
        repo,
        after,
        COMPARE_CHUNK,
      ]);
      const last = heads.length === COMPARE_CHUNK ? String(heads[heads.length - 1]!.path) : null;
      const docs =
        last === null
          ? await db.all<Row>('SELECT path, blob FROM search_docs WHERE repo_id = ? AND path > ?', [repo, after])
          : await db.all<Row>('SELECT path, blob FROM search_docs WHERE repo_id = ? AND path > ? AND path <= ?', [repo, after, last]);
      diff(heads, docs, stale, gone);
      if (last === null) break;
      after = last;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    return { stale, gone };
  }

  /** Deletes the rows of `gone`, indexes `stale` from their blobs, and records the level last. */
  private async reindex(
    db: Database,
    repo: string,
    { stale, gone }: { stale: Array<{ path: string; blob: string }>; gone: string[] },
    readBlob: (blob: string) => Promise<Uint8Array>,
    levelStmt: Stmt,
  ): Promise<void> {
    const batches: Array<() => Promise<Stmt[]>> = [];
    for (let i = 0; i < gone.length; i += CHUNK) {
      const some = gone.slice(i, i + CHUNK);
      batches.push(async () => some.flatMap((path) => searchStmts(repo, path, null)));
    }
    for (let i = 0; i < stale.length; i += CHUNK) {
      const chunk = stale.slice(i, i + CHUNK);
      batches.push(async () => {
        const docs: Array<{ path: string; blob: string; doc: SearchDocument }> = new Array(chunk.length);
        let next = 0;
        const worker = async () => {
          while (next < chunk.length) {
            const k = next++;
            const { path, blob } = chunk[k]!;
            docs[k] = { path, blob, doc: searchDocument(path, await readBlob(blob)) };
          }
        };
        await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, chunk.length) }, worker));
        return docs.flatMap((d) => searchStmts(repo, d.path, { blob: d.blob, doc: d.doc }));
      });
    }
    if (batches.length === 0) batches.push(async () => []);
    for (let i = 0; i < batches.length; i++) {
      const stmts = await batches[i]!();
      // The level goes with the last rows: a crash before it leaves the rows to be looked at again.
      if (i === batches.length - 1) stmts.push(levelStmt);
      await db.batch(stmts, { durable: false });
      // A batch runs on this thread (200 pages' rows, tens of ms): other requests get a turn after each, or
      // a catch-up of 10,000 pages would hold them for seconds.
      if (i < batches.length - 1) await nextTurn();
    }
  }

  /**
   * Replaces the rows of pages a commit just changed (`docs`: the document of each new page, null for a
   * deleted one or one whose content was not at hand, whose row then goes: the next catch-up makes it).
   * The level goes: these rows may be ahead of it, which only a comparison of every page sorts out if the
   * commit is later cut back (an index ahead of git).
   */
  async record(repo: string, docs: ReadonlyMap<string, { blob: string; doc: SearchDocument | null } | null>): Promise<void> {
    if (docs.size === 0) return;
    await this.write(repo, (db) =>
      db.batch([
        ...[...docs].flatMap(([path, page]) => searchStmts(repo, path, page)),
        { sql: 'DELETE FROM search_level WHERE repo_id = ?', args: [repo] },
      ]),
    );
  }

  /** Every full-text row of `repo` goes (its repository is deleted). */
  async drop(repo: string): Promise<void> {
    this.prepared.delete(repo);
    await this.text.drop(repo);
  }

  /**
   * Full-text search over the pages at head (lib/core/search-query.ts for `q`, lib/search/results.ts for the
   * ranking and the snippet), reading `repo`'s rows only. SearchQueryError (400) for a query that cannot be
   * searched. The results' last commits come from the index's own database.
   */
  async search(repo: string, q: string, opts: SearchOptions): Promise<SearchPage> {
    const { match } = parseQuery(q);
    if (!this.prepared.has(repo)) await this.write(repo, async () => undefined);
    const filters: string[] = [];
    const filterArgs: string[] = [];
    if (opts.type !== undefined) {
      filters.push('AND d.type = ?');
      filterArgs.push(normalizeField(opts.type));
    }
    if (opts.tag !== undefined) {
      filters.push('AND instr(d.tag_key, ?) > 0');
      filterArgs.push(tagNeedle(opts.tag));
    }
    // The full-text table drives (CROSS JOIN keeps SQLite from starting at search_docs); bm25 is computed
    // for every match, the snippet only for the page of results.
    const from = `FROM search_fts CROSS JOIN search_docs d ON d.id = search_fts.rowid
       WHERE search_fts MATCH ? AND d.repo_id = ? ${filters.join(' ')}`;
    const args = [match, repo, ...filterArgs];
    const found = await this.text.read(repo, async (r) => {
      // A database of one repository counts its matches from the full-text table alone.
      const count = async () =>
        Number(
          (this.text.perRepository && filters.length === 0
            ? await r.all<Row>('SELECT count(*) AS n FROM search_fts WHERE search_fts MATCH ?', [match])
            : await r.all<Row>(`SELECT count(*) AS n ${from}`, args))[0]?.n ?? 0,
        );
      if (opts.limit <= 0) return { top: [] as Row[], total: await count(), snippets: new Map<number, string>() };
      const end = opts.offset + opts.limit;
      let top: Row[] | null = null;
      let total: number | null = null;
      if (this.text.perRepository && filters.length === 0) {
        // The full-text table ranks alone and hands on its best `want` rows; only those are joined with their
        // pages (joining every match first was a third of a common word's search at 100,000 pages). The order
        // is rank then path: the rows past `end` are there so that a run of equal ranks at the cut is seen
        // whole. Were the last row handed on still equal to the one at the cut, the run may go on beyond it,
        // and the query below, which orders every match, answers instead.
        const want = end + TIE_MARGIN;
        const ranked = await r.all<Row>(
          `SELECT d.id, d.path, d.title, d.type, d.tags, m.rank FROM
             (SELECT rowid AS id, bm25(search_fts, ${BM25_ARGS}) AS rank FROM search_fts WHERE search_fts MATCH ? ORDER BY rank LIMIT ?) m
           CROSS JOIN search_docs d ON d.id = m.id ORDER BY m.rank, d.path`,
          [match, want],
        );
        const cutRank = ranked[end - 1]?.rank;
        const lastRank = ranked[ranked.length - 1]?.rank;
        if (ranked.length < want || cutRank === undefined || Number(cutRank) !== Number(lastRank)) {
          top = ranked.slice(opts.offset, end);
          // Fewer than asked for: those were every match.
          if (ranked.length < want) total = ranked.length;
        }
      }
      top ??= await r.all<Row>(
        `SELECT d.id, d.path, d.title, d.type, d.tags, bm25(search_fts, ${BM25_ARGS}) AS rank ${from}
         ORDER BY rank, d.path LIMIT ? OFFSET ?`,
        [...args, opts.limit, opts.offset],
      );
      // A short page says how many there are; only a full one (or an empty one past the start) needs counting.
      total ??=
        top.length > 0 && top.length < opts.limit ? opts.offset + top.length : top.length === 0 && opts.offset === 0 ? 0 : await count();
      const snippets = new Map<number, string>();
      const ids = top.map((t) => Number(t.id));
      for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
        const chunk = ids.slice(i, i + IDS_PER_QUERY);
        for (const s of await r.all<Row>(
          `SELECT rowid AS id, snippet(search_fts, -1, ?, ?, ?, ${SNIPPET_TOKENS}) AS snippet FROM search_fts
           WHERE search_fts MATCH ? AND rowid IN (${chunk.map(() => '?').join(', ')})`,
          [SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, match, ...chunk],
        )) {
          snippets.set(Number(s.id), String(s.snippet ?? ''));
        }
      }
      return { top, total, snippets };
    });
    const { top, total, snippets } = found;
    if (top.length === 0) return { hits: [], total };
    const shas = await this.lastCommits(repo, top.map((t) => String(t.path)));
    const hits = top.map((t) => ({
      path: String(t.path),
      title: t.title === null || t.title === undefined ? null : String(t.title),
      type: t.type === null || t.type === undefined ? null : String(t.type),
      tags: t.tags ? (JSON.parse(String(t.tags)) as string[]) : [],
      snippet: shapeSnippet(snippets.get(Number(t.id)) ?? ''),
      score: scoreOf(Number(t.rank)),
      sha: shas.get(String(t.path)) ?? '',
    }));
    return { hits, total };
  }

  /** The last commit of each page at head (indexed lookups by repository and path, at most 100 of them). */
  private async lastCommits(repo: string, paths: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < paths.length; i += IDS_PER_QUERY) {
      const some = paths.slice(i, i + IDS_PER_QUERY);
      for (const r of await this.meta.all<Row>(
        `SELECT h.path, c.sha FROM git_head h JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
         WHERE h.repo_id = ? AND h.path IN (${some.map(() => '?').join(', ')})`,
        [repo, ...some],
      )) {
        out.set(String(r.path), String(r.sha));
      }
    }
    return out;
  }
}

/** Pages at head against their rows, for the same paths: into `stale` (no row, or an old one) and `gone`. */
function diff(heads: Row[], docs: Row[], stale: Array<{ path: string; blob: string }>, gone: string[]): void {
  const indexed = new Map(docs.map((d) => [String(d.path), String(d.blob)]));
  for (const h of heads) {
    const path = String(h.path);
    const blob = String(h.blob);
    if (indexed.get(path) !== blob) stale.push({ path, blob });
    indexed.delete(path);
  }
  for (const path of indexed.keys()) gone.push(path);
}

/**
 * Statements replacing the full-text rows of one path: the old ones go; with `page`, its row is written
 * (no row when the document could not be made: the catch-up of the next sync writes it).
 */
export function searchStmts(repo: string, path: string, page: { blob: string; doc: SearchDocument | null } | null): Stmt[] {
  const stmts: Stmt[] = [
    {
      sql: 'DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE repo_id = ? AND path = ?)',
      args: [repo, path],
    },
    { sql: 'DELETE FROM search_docs WHERE repo_id = ? AND path = ?', args: [repo, path] },
  ];
  if (page?.doc) {
    const { doc } = page;
    stmts.push(
      {
        sql: 'INSERT INTO search_docs (repo_id, path, blob, title, type, tags, tag_key) VALUES (?, ?, ?, ?, ?, ?, ?)',
        args: [repo, path, page.blob, doc.title, doc.type, doc.tags.length ? JSON.stringify(doc.tags) : null, tagKey(doc.tags)],
      },
      {
        sql: `INSERT INTO search_fts (rowid, title, tags, summary, headings, body)
              SELECT id, ?, ?, ?, ?, ? FROM search_docs WHERE repo_id = ? AND path = ?`,
        args: [doc.title ?? '', doc.tags.join('\n'), doc.summary, doc.headings, doc.body, repo, path],
      },
    );
  }
  return stmts;
}
