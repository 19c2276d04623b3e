/** Search across the user's repositories, and the result snippet the repository's own search shows too. */
import { useMemo } from 'preact/hooks';
import type { Api } from './api.ts';
import { pageName, renderSnippet, type RenderContext } from './content.ts';
import { href } from './route.ts';
import { Crumbs, Empty, ErrorMessage, Loading, useLoad } from './ui.tsx';

/** A search result's snippet: matches marked, links as in the page view (content.ts renderSnippet). */
export function Snippet({ snippet, ctx }: { snippet: string; ctx?: RenderContext }) {
  const html = useMemo(() => renderSnippet(snippet, ctx), [snippet, ctx?.repo, ctx?.path, ctx?.pages]);
  return <p class="snippet" dangerouslySetInnerHTML={{ __html: html }} />;
}

/** Results of the header's search box: every repository the user belongs to (GET /v1/search). */
export function SearchView({ api, q }: { api: Api; q: string }) {
  const query = q.trim();
  const results = useLoad(() => (query ? api.search({ q: query, limit: 50 }) : Promise.resolve(null)), [api, query]);
  // Each repository's pages at head, for the links in its snippets (a repository whose pages cannot be read: none).
  const repoIds = [...new Set((results.data?.results ?? []).map((r) => r.repo_id))].sort();
  const sets = useLoad(
    async () =>
      new Map(
        await Promise.all(
          repoIds.map(async (id) => [id, new Set((await api.pages(id).then((r) => r.pages).catch(() => [])).map((p) => p.path))] as const),
        ),
      ),
    [api, repoIds.join('\n')],
  );
  const pageSets: Map<string, ReadonlySet<string>> | undefined = sets.data;
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Search' }]} />
      <h1 tabIndex={-1}>{query ? `Search: ${query}` : 'Search'}</h1>
      {!query && <Empty>Type words in the search box at the top to search the pages of every repository you belong to.</Empty>}
      <ErrorMessage message={results.error} />
      {results.loading && query && <Loading what="results" />}
      {results.data && (
        <>
          <p role="status">
            {results.data.total} {results.data.total === 1 ? 'page matches' : 'pages match'} “{query}” across your repositories.
          </p>
          {results.data.results.length === 0 ? (
            <Empty>No page matches. Try fewer words, or a prefix such as stor*.</Empty>
          ) : (
            <ul class="list" aria-label="Search results">
              {results.data.results.map((r) => (
                <li key={`${r.repo_id}\n${r.path}`}>
                  <a class="title" href={href({ name: 'page', repo: r.repo_id, path: r.path })}>
                    {r.title || pageName(r.path)}
                  </a>
                  <span class="badge">{r.repo_id}</span>
                  {r.type && <span class="badge">{r.type}</span>}
                  <div class="meta">
                    <code>{r.path}</code>
                  </div>
                  <Snippet snippet={r.snippet} ctx={pageSets?.has(r.repo_id) ? { repo: r.repo_id, path: r.path, pages: pageSets.get(r.repo_id)! } : undefined} />
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
