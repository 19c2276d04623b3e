/**
 * How a search answers: the ranking weights, the snippet's markers and the score as the wire shows them.
 *
 * Ranking is FTS5's bm25 with a weight per column (search_fts: title, tags, summary, headings, body): a
 * match in the title counts 10 times a match in the body, tags 8, summary and headings 5. `score` is
 * -bm25 (higher is better), to 6 significant digits; scores compare within one answer (bm25's word
 * statistics are those of the index that answered: the repository's, on both builds).
 *
 * The snippet is FTS5's snippet(): about SNIPPET_TOKENS words of the column that matched best, each match
 * between « and », `…` where the text was cut, whitespace (line breaks included) folded to single spaces.
 * FTS5 marks matches with U+0002/U+0003 here (control characters, which the index never holds:
 * lib/search/document.ts), and only then do they become « and »; a « or » of the page's own text shows as ‹
 * or ›, so that every « » pair in a snippet is a match.
 */

/** bm25 weights, in search_fts's column order. */
export const BM25_WEIGHTS = { title: 10, tags: 8, summary: 5, headings: 5, body: 1 } as const;
export const BM25_ARGS = [BM25_WEIGHTS.title, BM25_WEIGHTS.tags, BM25_WEIGHTS.summary, BM25_WEIGHTS.headings, BM25_WEIGHTS.body]
  .map((w) => w.toFixed(1))
  .join(', ');

export const SNIPPET_OPEN = '\u0002';
export const SNIPPET_CLOSE = '\u0003';
export const SNIPPET_ELLIPSIS = '…';
/** Words per snippet (FTS5 caps it at 64). */
export const SNIPPET_TOKENS = 16;

/** FTS5's snippet with control-character marks → the wire's «…» form. */
export function shapeSnippet(raw: string): string {
  return raw
    .replaceAll('«', '‹')
    .replaceAll('»', '›')
    .replaceAll(SNIPPET_OPEN, '«')
    .replaceAll(SNIPPET_CLOSE, '»')
    .replace(/\s+/gu, ' ')
    .trim();
}

/** bm25 (lower is better) → the wire's score (higher is better). */
export const scoreOf = (bm25: number): number => (bm25 === 0 ? 0 : Number((-bm25).toPrecision(6)));

/**
 * Default and largest `limit`; largest `offset` answered (at or beyond it the results are empty and `total`
 * still counts): deep pages cost a snippet per skipped result in every repository of a cross-repository
 * search.
 */
export const SEARCH_LIMIT_DEFAULT = 20;
export const SEARCH_LIMIT_MAX = 100;
export const SEARCH_OFFSET_MAX = 1_000;

/** One result as the repository returns it (the route adds `repo_id`). */
export interface SearchHit {
  path: string;
  title: string | null;
  type: string | null;
  tags: string[];
  snippet: string;
  score: number;
  /** The page's last commit. */
  sha: string;
}

export interface SearchOptions {
  /** Only pages of this type (exact). */
  type?: string;
  /** Only pages with this tag (exact). */
  tag?: string;
  /** 0: only `total`. */
  limit: number;
  offset: number;
}

export interface SearchPage {
  hits: SearchHit[];
  /** Every match, whatever limit and offset. */
  total: number;
}

/** Best first: by score, then by repository and path so that equal scores keep a stable order. */
export function compareHits(a: { score: number; path: string; repo_id?: string }, b: { score: number; path: string; repo_id?: string }): number {
  if (a.score !== b.score) return b.score - a.score;
  const ra = a.repo_id ?? '';
  const rb = b.repo_id ?? '';
  if (ra !== rb) return ra < rb ? -1 : 1;
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
