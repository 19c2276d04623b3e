/** `kr search <query...>`: full-text search on the server, in one repository (`--repo`) or every one of yours. */
import { connect } from '../../client/config.ts';
import { usageError } from '../../client/errors.ts';
import { clean, out, paint, printJson, shortSha, type Paint } from '../../client/output.ts';
import { parseQuery, SearchQueryError } from '../../lib/core/search-query.ts';
import type { SearchResponse } from '../../schema/wire/search.ts';

export interface SearchOptions {
  repo?: string;
  type?: string;
  tag?: string;
  limit?: string;
  offset?: string;
  json?: boolean;
}

function count(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw usageError(`--${name} must be an integer${min === 1 ? ' greater than zero' : ' of at least 0'}, not ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** « » of the server's snippet in bold on a terminal (the marks themselves are kept without colour). */
const highlight = (snippet: string, p: Paint): string => clean(snippet).replace(/«([^»]*)»/g, (_m, w: string) => p.bold(p.yellow(`«${w}»`)));

export async function search(words: string[], opts: SearchOptions): Promise<void> {
  const q = words.join(' ');
  // The server's own rules, checked here first: a query it would refuse is bad usage, and nothing is sent.
  try {
    parseQuery(q);
  } catch (e) {
    if (e instanceof SearchQueryError) throw usageError(e.problem === null ? 'a search query is required' : e.message);
    throw e;
  }
  const limit = count('limit', opts.limit, 1);
  const offset = count('offset', opts.offset, 0);
  const session = await connect();
  const res: SearchResponse = await session.api.search({ q, repo: opts.repo, type: opts.type, tag: opts.tag, limit, offset });
  if (opts.json) return printJson(res);
  if (res.results.length === 0) {
    return out(res.total === 0 ? 'No page matches.' : `No more results (${res.total} in all).`);
  }
  const p = paint();
  // Relevance is shown as the rank, best first. The server's score (bm25, negated) only orders results:
  // its size depends on the query and on every page of the repositories (0.00000176 in one, 4.2 in
  // another), so a number would suggest a comparison it cannot make. --json keeps the score.
  const from = (offset ?? 0) + 1;
  const width = String(from + res.results.length - 1).length;
  res.results.forEach((r, i) => {
    const where = opts.repo ? r.path : `${r.repo_id}/${r.path}`;
    const title = r.title ? `  ${p.bold(clean(r.title))}` : '';
    out(`${`${from + i}.`.padStart(width + 1)} ${p.cyan(clean(where))}${title}  ${p.dim(shortSha(r.sha))}`);
    if (r.snippet) out(`${' '.repeat(width + 2)}${highlight(r.snippet, p)}`);
  });
  out(p.dim(`${from}–${from + res.results.length - 1} of ${res.total}, best first`));
}
