/**
 * The link rows of the derived index (schema/migrations/0012_links.sql): `page_link_sources`, one row per
 * page at head (the blob its rows were made from, and its title), and `page_links`, the links each page
 * makes as written (lib/links/extract.ts), unresolved. PathIndex (lib/repo/path-index.ts) keeps them in
 * step — a push's pages are looked at right after it (`catchUpPaths`, lib/repo/derived-later.ts), before any
 * links request answers; `catchUp` levels them with git_head on every sync, like the full-text rows — and
 * answers the links route through `forPage`.
 *
 * Links are resolved when asked, against the pages at head then: a page created later is linked to by the
 * pages that named it before. Outgoing: one lookup of the candidate paths per 90 links. Incoming: indexed
 * lookups by the page's path and by its slug (page_links_path, page_links_slug), never a scan of the
 * repository. Plain SQL over the Database interface: the same on libSQL (Node) and in a Durable Object's
 * SQLite (Workers).
 */
import type { SqlDatabase as Database, Stmt } from '../db/sql.ts';
import { PAGE_TYPES, pagePathFor, pageRefOfPath, parsePage, type PageType } from '../core/page/parse.ts';
import { extractLinks, MAX_SCANNED_CHARS, type LinkRef } from './extract.ts';
import type { IncomingLink, LinksResponse, OutgoingLink } from '../../schema/wire/links.ts';
import { nextTurn } from '../core/differ/budget.ts';

/** Incoming links listed at most; `incoming_more` counts the rest. */
export const MAX_INCOMING = 1000;
/** Links per INSERT (one JSON parameter each, under a Durable Object's 2 MB per value). */
const LINKS_PER_INSERT = 100;
/** Pages re-indexed per batch when catchUp levels the rows with head. */
const CHUNK = 200;
/** Blob reads catchUp keeps in flight. */
const READS_IN_FLIGHT = 16;
/** Paths per `IN (...)`: under the 100 bound parameters a Durable Object's SQLite allows. */
const PATHS_PER_QUERY = 90;

type Row = Record<string, unknown>;

/** What the index keeps of one page: its title and its links. */
export interface LinkDocument {
  title: string | null;
  links: LinkRef[];
}

const decoder = new TextDecoder();
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** A page's title (frontmatter `title`, control characters as spaces) and links, from its bytes. */
export function linkDocument(path: string, content: Uint8Array): LinkDocument {
  let text = decoder.decode(content);
  if (text.length > MAX_SCANNED_CHARS) text = text.slice(0, MAX_SCANNED_CHARS);
  const fm = parsePage(text).frontmatter;
  const title = typeof fm?.title === 'string' ? fm.title.normalize('NFC').replace(CONTROL, ' ').trim() || null : null;
  return { title, links: extractLinks(path, text) };
}

/**
 * Statements replacing the link rows of one path: the old ones go; with `page`, its rows are written (a
 * page without links still gets its source row: it says the page was looked at).
 */
export function linkStmts(repo: string, path: string, page: { blob: string; doc: LinkDocument } | null): Stmt[] {
  const stmts: Stmt[] = [
    { sql: 'DELETE FROM page_links WHERE repo_id = ? AND source = ?', args: [repo, path] },
    { sql: 'DELETE FROM page_link_sources WHERE repo_id = ? AND path = ?', args: [repo, path] },
  ];
  if (!page) return stmts;
  stmts.push({
    sql: 'INSERT INTO page_link_sources (repo_id, path, blob, title) VALUES (?, ?, ?, ?)',
    args: [repo, path, page.blob, page.doc.title],
  });
  const { links } = page.doc;
  for (let i = 0; i < links.length; i += LINKS_PER_INSERT) {
    const rows = links.slice(i, i + LINKS_PER_INSERT).map((l, k) => [i + k, l.target, l.slug ?? null, l.type ?? null, l.path ?? null]);
    stmts.push({
      sql: `INSERT INTO page_links (repo_id, source, ord, target, slug, type, path)
            SELECT ?, ?, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
                   json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]')
            FROM json_each(?) j`,
      args: [repo, path, JSON.stringify(rows)],
    });
  }
  return stmts;
}

/** The layout paths a slug may name, one per type whose layout can hold it. */
function candidates(slug: string, types: readonly PageType[] = PAGE_TYPES): string[] {
  const out: string[] = [];
  for (const t of types) {
    try {
      out.push(pagePathFor(t, slug));
    } catch {
      // a slug this type's layout cannot hold
    }
  }
  return out;
}

export class LinkIndex {
  constructor(private readonly db: Database) {}

  /** Which of `paths` are pages at head. */
  private async atHead(repo: string, paths: Iterable<string>): Promise<Set<string>> {
    const unique = [...new Set(paths)];
    const found = new Set<string>();
    for (let i = 0; i < unique.length; i += PATHS_PER_QUERY) {
      const chunk = unique.slice(i, i + PATHS_PER_QUERY);
      const rows = await this.db.all<Row>(
        `SELECT path FROM git_head WHERE repo_id = ? AND path IN (${chunk.map(() => '?').join(', ')})`,
        [repo, ...chunk],
      );
      for (const r of rows) found.add(String(r.path));
    }
    return found;
  }

  /**
   * The links of the page at `path` (which the caller found at head): what it links to, resolved against
   * the pages at head, in document order; and the pages at head that link to it, sorted by path, at most
   * MAX_INCOMING of them (`incoming_more` counts the rest).
   */
  async forPage(repo: string, path: string): Promise<LinksResponse> {
    return { path, outgoing: await this.outgoing(repo, path), ...(await this.incoming(repo, path)) };
  }

  private async outgoing(repo: string, path: string): Promise<OutgoingLink[]> {
    const rows = await this.db.all<Row>(
      'SELECT target, slug, type, path FROM page_links WHERE repo_id = ? AND source = ? ORDER BY ord',
      [repo, path],
    );
    const links = rows.map((r) => ({
      target: String(r.target),
      slug: r.slug === null || r.slug === undefined ? null : String(r.slug),
      type: r.type === null || r.type === undefined ? null : (String(r.type) as PageType),
      path: r.path === null || r.path === undefined ? null : String(r.path),
    }));
    const wanted = links.map((l) => (l.path !== null ? [l.path] : l.slug !== null ? candidates(l.slug, l.type ? [l.type] : PAGE_TYPES) : []));
    const present = await this.atHead(repo, wanted.flat());
    return links.map((l, i) => {
      const hits = wanted[i]!.filter((p) => present.has(p));
      if (hits.length === 1) return { target: l.target, path: hits[0]! };
      return hits.length > 1 ? { target: l.target, ambiguous: true as const } : { target: l.target };
    });
  }

  private async incoming(repo: string, path: string): Promise<{ incoming: IncomingLink[]; incoming_more?: number }> {
    const ref = pageRefOfPath(path);
    // `[[slug]]` without a type names this page only while no other type has a page of that slug.
    const untyped = ref !== null && (await this.atHead(repo, candidates(ref.slug).filter((p) => p !== path))).size === 0;
    // The linking pages drive (CROSS JOIN keeps SQLite from starting at page_link_sources): two index lookups.
    const from = `FROM (SELECT source FROM page_links WHERE repo_id = ? AND path = ?
         UNION SELECT source FROM page_links WHERE repo_id = ? AND slug = ? AND (type = ? OR (? = 1 AND type IS NULL))) l
       CROSS JOIN page_link_sources s ON s.repo_id = ? AND s.path = l.source`;
    const args = [repo, path, repo, ref?.slug ?? null, ref?.type ?? null, untyped ? 1 : 0, repo];
    const rows = await this.db.all<Row>(`SELECT s.path, s.title ${from} ORDER BY s.path LIMIT ?`, [...args, MAX_INCOMING + 1]);
    const incoming = rows.slice(0, MAX_INCOMING).map((r) => {
      const title = r.title === null || r.title === undefined ? null : String(r.title);
      return title ? { path: String(r.path), title } : { path: String(r.path) };
    });
    if (rows.length <= MAX_INCOMING) return { incoming };
    const all = await this.db.get<Row>(`SELECT COUNT(*) AS n ${from}`, args);
    return { incoming, incoming_more: Number(all?.n ?? 0) - MAX_INCOMING };
  }

  /**
   * Levels the link rows with git_head: a page whose rows were made from another blob than its blob at
   * head (or that has none: a rebuilt database, one from before migration 0012, commits replayed from git)
   * is looked at again; the rows of a page that is gone are deleted. Pages are taken CHUNK at a time in path
   * order, so memory does not grow with the repository. Its batches do not wait for the disk
   * (`durable: false`): rows a crash loses are behind head again, and the next sync makes them.
   */
  async catchUp(repo: string, readBlob: (blob: string) => Promise<Uint8Array>): Promise<void> {
    for (let after = ''; ; ) {
      const gone = await this.db.all<Row>(
        `SELECT s.path FROM page_link_sources s WHERE s.repo_id = ? AND s.path > ?
           AND NOT EXISTS (SELECT 1 FROM git_head h WHERE h.repo_id = s.repo_id AND h.path = s.path)
         ORDER BY s.path LIMIT ?`,
        [repo, after, CHUNK],
      );
      if (gone.length === 0) break;
      await this.db.batch(gone.flatMap((r) => linkStmts(repo, String(r.path), null)), { durable: false });
      after = String(gone[gone.length - 1]!.path);
      // Each batch runs on this thread: other requests get a turn between them.
      await nextTurn();
    }
    for (let after = ''; ; ) {
      const stale = await this.db.all<Row>(
        `SELECT h.path, h.blob FROM git_head h LEFT JOIN page_link_sources s ON s.repo_id = h.repo_id AND s.path = h.path
         WHERE h.repo_id = ? AND h.path > ? AND (s.blob IS NULL OR s.blob <> h.blob) ORDER BY h.path LIMIT ?`,
        [repo, after, CHUNK],
      );
      if (stale.length === 0) break;
      const pages = stale.map((r) => ({ path: String(r.path), blob: String(r.blob) }));
      const docs: LinkDocument[] = new Array(pages.length);
      let next = 0;
      const worker = async () => {
        while (next < pages.length) {
          const k = next++;
          docs[k] = linkDocument(pages[k]!.path, await readBlob(pages[k]!.blob));
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, pages.length) }, worker));
      await this.db.batch(pages.flatMap((p, k) => linkStmts(repo, p.path, { blob: p.blob, doc: docs[k]! })), { durable: false });
      after = pages[pages.length - 1]!.path;
      await nextTurn();
    }
  }

  /**
   * Levels the link rows of `paths` alone with git_head, as `catchUp` does for every page: the rows a push
   * left for later (PathIndex.recordMany with `derived: false`). Two indexed lookups per PATHS_PER_QUERY paths,
   * whatever the size of the repository.
   */
  async catchUpPaths(repo: string, paths: readonly string[], readBlob: (blob: string) => Promise<Uint8Array>): Promise<void> {
    const unique = [...new Set(paths)];
    for (let i = 0; i < unique.length; i += PATHS_PER_QUERY) {
      const some = unique.slice(i, i + PATHS_PER_QUERY);
      const list = some.map(() => '?').join(', ');
      const heads = await this.db.all<Row>(`SELECT path, blob FROM git_head WHERE repo_id = ? AND path IN (${list})`, [repo, ...some]);
      const sources = await this.db.all<Row>(`SELECT path, blob FROM page_link_sources WHERE repo_id = ? AND path IN (${list})`, [repo, ...some]);
      const atHead = new Map(heads.map((r) => [String(r.path), String(r.blob)]));
      const made = new Map(sources.map((r) => [String(r.path), String(r.blob)]));
      const stmts: Stmt[] = [];
      const stale: Array<{ path: string; blob: string }> = [];
      for (const path of some) {
        const blob = atHead.get(path);
        if (blob === undefined) {
          if (made.has(path)) stmts.push(...linkStmts(repo, path, null));
        } else if (made.get(path) !== blob) stale.push({ path, blob });
      }
      // Read READS_IN_FLIGHT at a time, as catchUp does.
      const docs: LinkDocument[] = new Array(stale.length);
      let next = 0;
      const worker = async () => {
        while (next < stale.length) {
          const k = next++;
          docs[k] = linkDocument(stale[k]!.path, await readBlob(stale[k]!.blob));
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, stale.length) }, worker));
      stale.forEach((p, k) => stmts.push(...linkStmts(repo, p.path, { blob: p.blob, doc: docs[k]! })));
      if (stmts.length > 0) await this.db.batch(stmts, { durable: false });
      await nextTurn();
    }
  }

  /** Statements deleting every link row of a repository (its deletion). */
  static removalStmts(repo: string): Stmt[] {
    return [
      { sql: 'DELETE FROM page_links WHERE repo_id = ?', args: [repo] },
      { sql: 'DELETE FROM page_link_sources WHERE repo_id = ?', args: [repo] },
    ];
  }
}
