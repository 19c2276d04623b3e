/**
 * Search as the two routes answer it: the request's parameters, one repository, or every repository the
 * caller may read merged by score. Both go through `Repos.search` (RepoStore on Node, the repository's
 * Durable Object on Workers): one code path on both builds.
 */
import type { Context } from 'hono';
import type { Identity } from '../auth/identity.ts';
import type { Deps } from '../framework/deps.ts';
import { limitQuery, offsetQuery } from '../framework/http/params.ts';
import type { AppEnv } from '../framework/route.ts';
import { parseQuery } from '../core/search-query.ts';
import type { Repo } from '../repo/repos.ts';
import {
  compareHits,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_LIMIT_MAX,
  SEARCH_OFFSET_MAX,
  type SearchHit,
  type SearchOptions,
} from './results.ts';
import type { SearchResponse, SearchResult } from '../../schema/wire/search.ts';

export interface SearchParams {
  q: string;
  type?: string;
  tag?: string;
  limit: number;
  offset: number;
}

/** Repositories searched at once by a cross-repository search. */
const FAN_OUT = 8;

/**
 * The query string of a search route; SearchQueryError (400) when `q` cannot be searched. `type` and `tag`
 * given empty mean no filter.
 */
export function searchParams(c: Context<AppEnv>): SearchParams {
  const q = c.req.query('q');
  parseQuery(q);
  const type = c.req.query('type') || undefined;
  const tag = c.req.query('tag') || undefined;
  return {
    q: q!,
    type,
    tag,
    limit: limitQuery(c, 'limit', SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX),
    offset: offsetQuery(c, 'offset'),
  };
}

/** A hit as the wire shows it, keys in docs/api.md's order ("Search"); absent fields left out. */
const toResult = (repoId: string, h: SearchHit): SearchResult => ({
  repo_id: repoId,
  path: h.path,
  ...(h.title !== null && { title: h.title }),
  ...(h.type !== null && { type: h.type }),
  ...(h.tags.length > 0 && { tags: h.tags }),
  snippet: h.snippet,
  score: h.score,
  sha: h.sha,
});

/** One repository (the caller was authorised for it). */
export async function searchRepo(repo: Repo, p: SearchParams): Promise<SearchResponse> {
  const deep = p.offset >= SEARCH_OFFSET_MAX;
  const page = await repo.search(p.q, { type: p.type, tag: p.tag, limit: deep ? 0 : p.limit, offset: deep ? 0 : p.offset });
  return { results: page.hits.map((h) => toResult(repo.id, h)), total: page.total };
}

/** The repositories a cross-repository search covers: the legacy key every one, a user those they belong to. */
async function readableRepos(deps: Deps, identity: Identity): Promise<string[]> {
  if (identity.kind !== 'user') return deps.repos.list();
  const mine = await deps.members.reposOf(identity.userId);
  const existing = await Promise.all(mine.map(async (m) => ((await deps.repos.exists(m.repo_id)) ? m.repo_id : null)));
  return existing.filter((id): id is string => id !== null).sort();
}

/**
 * Every repository the caller may read: each answers its best `offset + limit`, and the merge keeps the
 * page asked for, best first (score, then repository and path); `total` adds up every repository's.
 */
export async function searchAll(deps: Deps, identity: Identity, p: SearchParams): Promise<SearchResponse> {
  const ids = await readableRepos(deps, identity);
  const deep = p.offset >= SEARCH_OFFSET_MAX;
  const opts: SearchOptions = { type: p.type, tag: p.tag, limit: deep ? 0 : p.offset + p.limit, offset: 0 };
  const merged: SearchResult[] = [];
  let total = 0;
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      const page = await deps.repos.open(id).search(p.q, opts);
      total += page.total;
      for (const h of page.hits) merged.push(toResult(id, h));
    }
  };
  await Promise.all(Array.from({ length: Math.min(FAN_OUT, ids.length) }, worker));
  merged.sort(compareHits);
  return { results: deep ? [] : merged.slice(p.offset, p.offset + p.limit), total };
}
