/**
 * The full-text rows of the derived index (schema/migrations/0007_search.sql): `search_docs`, one row per
 * page at head, and the FTS5 table `search_fts` sharing its ids. PathIndex (lib/git/path-index.ts) keeps
 * them in step — `searchStmts` go into the batch that records a commit, `catchUp` levels them with
 * git_head on every sync — and answers `search` through here. Plain SQL over the Database interface: the
 * same on libSQL (Node) and in a Durable Object's SQLite (Workers).
 */
import type { Database, Stmt } from '../db/database.ts';
import { normalizeField, searchDocument, tagKey, tagNeedle, type SearchDocument } from './document.ts';
import { parseQuery } from './query.ts';
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

/** Pages re-indexed per batch when catchUp levels the full-text rows with head. */
const CHUNK = 200;
/** Blob reads catchUp keeps in flight. */
const READS_IN_FLIGHT = 16;
/**
 * Ids per `rowid IN (...)` of the snippet query, whose other parameters are 4: a Durable Object's SQLite and D1
 * refuse a statement with more than 100 bound parameters.
 */
const IDS_PER_QUERY = 90;

/**
 * The full-text table: title, tags and summary from the frontmatter, the headings, the body; case and
 * diacritics folded by the tokenizer; bm25 weights per column in lib/search/results.ts. Created by the index
 * itself, not by a migration (schema/migrations/0007_search.sql says why).
 */
export const SEARCH_FTS_DDL =
  "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(title, tags, summary, headings, body, tokenize = 'unicode61 remove_diacritics 2')";

export class FullTextIndex {
  /** search_fts exists (made once per process; see ensureTable). */
  private table: Promise<void> | null = null;

  constructor(private readonly db: Database) {}

  /**
   * Creates search_fts where it is missing: a new database, or one whose full-text table was lost. Its
   * search_docs rows then describe nothing and go in the same batch, so that every repository's next sync
   * indexes its pages again. Once per process: concurrent syncs of different repositories wait for the same
   * creation (a second one would delete rows the first sync's catch-up had written meanwhile).
   */
  ensureTable(): Promise<void> {
    if (!this.table) {
      const made = (async () => {
        const found = await this.db.get<Row>("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'search_fts'");
        if (!found) await this.db.batch([{ sql: SEARCH_FTS_DDL }, { sql: 'DELETE FROM search_docs' }]);
      })();
      this.table = made;
      made.catch(() => {
        if (this.table === made) this.table = null;
      });
    }
    return this.table;
  }

  /**
   * Levels the full-text rows with git_head: a page whose indexed blob is not its blob at head (or that has
   * no row: a rebuilt database, a database from before migration 0007, commits replayed from git, pushes
   * whose rows were left for later) is indexed from its blob; a row whose page is gone is deleted. Two
   * indexed queries when nothing is behind. With `paths`, only those pages are looked at (a query per
   * IDS_PER_QUERY of them), whatever the size of the repository. Its batches do not wait for the disk
   * (`durable: false`): rows a crash loses are behind head again, and the next sync makes them.
   */
  async catchUp(repo: string, readBlob: (blob: string) => Promise<Uint8Array>, paths?: readonly string[]): Promise<void> {
    await this.ensureTable();
    const stale: Row[] = [];
    const gone: Row[] = [];
    const sorted = paths ? [...paths].sort() : undefined;
    for (let i = 0; i < (sorted?.length ?? 1); i += IDS_PER_QUERY) {
      const some = sorted?.slice(i, i + IDS_PER_QUERY);
      const only = (column: string) => (some ? `AND ${column} IN (${some.map(() => '?').join(', ')})` : '');
      stale.push(
        ...(await this.db.all<Row>(
          `SELECT h.path, h.blob FROM git_head h LEFT JOIN search_docs d ON d.repo_id = h.repo_id AND d.path = h.path
           WHERE h.repo_id = ? ${only('h.path')} AND (d.blob IS NULL OR d.blob <> h.blob) ORDER BY h.path`,
          [repo, ...(some ?? [])],
        )),
      );
      gone.push(
        ...(await this.db.all<Row>(
          `SELECT d.path FROM search_docs d WHERE d.repo_id = ? ${only('d.path')}
           AND NOT EXISTS (SELECT 1 FROM git_head h WHERE h.repo_id = d.repo_id AND h.path = d.path)`,
          [repo, ...(some ?? [])],
        )),
      );
    }
    if (gone.length > 0) {
      for (let i = 0; i < gone.length; i += CHUNK) {
        await this.db.batch(gone.slice(i, i + CHUNK).flatMap((r) => searchStmts(repo, String(r.path), null)), { durable: false });
      }
    }
    for (let i = 0; i < stale.length; i += CHUNK) {
      const chunk = stale.slice(i, i + CHUNK).map((r) => ({ path: String(r.path), blob: String(r.blob) }));
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
      await this.db.batch(docs.flatMap((d) => searchStmts(repo, d.path, { blob: d.blob, doc: d.doc })), { durable: false });
    }
  }

  /**
   * Full-text search over the pages at head (lib/search/query.ts for `q`, lib/search/results.ts for the
   * ranking and the snippet). SearchQueryError (400) for a query that cannot be searched.
   */
  async search(repo: string, q: string, opts: SearchOptions): Promise<SearchPage> {
    const { match } = parseQuery(q);
    await this.ensureTable();
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
    const count = async () => Number((await this.db.get<Row>(`SELECT count(*) AS n ${from}`, args))?.n ?? 0);
    if (opts.limit <= 0) return { hits: [], total: await count() };
    // The page of results with each page's last commit (joined after the limit: 20 lookups, not one per match).
    const top = await this.db.all<Row>(
      `SELECT t.id, t.path, t.title, t.type, t.tags, t.rank, c.sha FROM (
         SELECT d.id, d.path, d.title, d.type, d.tags, bm25(search_fts, ${BM25_ARGS}) AS rank ${from}
         ORDER BY rank, d.path LIMIT ? OFFSET ?
       ) t
       LEFT JOIN git_head h ON h.repo_id = ? AND h.path = t.path
       LEFT JOIN git_commits c ON c.repo_id = h.repo_id AND c.seq = h.seq
       ORDER BY t.rank, t.path`,
      [...args, opts.limit, opts.offset, repo],
    );
    // A short page says how many there are; only a full one (or an empty one past the start) needs counting.
    const total =
      top.length > 0 && top.length < opts.limit ? opts.offset + top.length : top.length === 0 && opts.offset === 0 ? 0 : await count();
    if (top.length === 0) return { hits: [], total };
    const ids = top.map((r) => Number(r.id));
    const snippets = new Map<number, string>();
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const chunk = ids.slice(i, i + IDS_PER_QUERY);
      for (const r of await this.db.all<Row>(
        `SELECT rowid AS id, snippet(search_fts, -1, ?, ?, ?, ${SNIPPET_TOKENS}) AS snippet FROM search_fts
         WHERE search_fts MATCH ? AND rowid IN (${chunk.map(() => '?').join(', ')})`,
        [SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, match, ...chunk],
      )) {
        snippets.set(Number(r.id), String(r.snippet ?? ''));
      }
    }
    const hits = top.map((r) => ({
      path: String(r.path),
      title: r.title === null || r.title === undefined ? null : String(r.title),
      type: r.type === null || r.type === undefined ? null : String(r.type),
      tags: r.tags ? (JSON.parse(String(r.tags)) as string[]) : [],
      snippet: shapeSnippet(snippets.get(Number(r.id)) ?? ''),
      score: scoreOf(Number(r.rank)),
      sha: r.sha === null || r.sha === undefined ? '' : String(r.sha),
    }));
    return { hits, total };
  }
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
