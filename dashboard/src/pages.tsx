/** One repository's Pages tab: its pages grouped by type, and a search within them. */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { groupPages, pageName } from './content.ts';
import { RepoTabs } from './repo-nav.tsx';
import { href } from './route.ts';
import { Snippet } from './search.tsx';
import { usePageMetas } from './titles.ts';
import { Change, Crumbs, Empty, ErrorMessage, Loading, useFlash, useLoad } from './ui.tsx';

export function RepoView({ api, repo, initialQuery }: { api: Api; repo: string; initialQuery?: string }) {
  const pages = useLoad(async () => (await api.pages(repo)).pages, [api, repo]);
  const [q, setQ] = useState(initialQuery ?? '');
  useEffect(() => setQ(initialQuery ?? ''), [initialQuery]);
  const search = useLoad(
    () => (initialQuery ? api.search({ q: initialQuery, repo, limit: 50 }) : Promise.resolve(null)),
    [api, repo, initialQuery],
  );
  const groups = useMemo(() => groupPages(pages.data ?? []), [pages.data]);
  const metas = usePageMetas(api, repo, pages.data);
  // The snippets' links resolve against the pages at head, as in the page view; until they are known, against none.
  const pageSet = useMemo(() => (pages.data || pages.error ? new Set((pages.data ?? []).map((p) => p.path)) : null), [pages.data, pages.error]);
  const flash = useFlash();

  const submit = (ev: Event) => {
    ev.preventDefault();
    location.hash = href({ name: 'repo', repo, q: q.trim() || undefined });
  };

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo }]} />
      <h1 tabIndex={-1}>{repo}</h1>
      <RepoTabs repo={repo} current="pages" />
      {flash && (
        <p class="ok" role="status">
          {flash}
        </p>
      )}
      <p class="toolbar">
        <a class="button" href={href({ name: 'new', repo })}>
          New page
        </a>
      </p>
      <form class="card inline" role="search" onSubmit={submit}>
        <label for="search">Search pages</label>
        <div class="row">
          <input
            id="search"
            type="search"
            value={q}
            placeholder='words, "a phrase", prefix*, -not'
            onInput={(e) => setQ((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Search</button>
        </div>
      </form>

      {initialQuery && (
        <section class="results" aria-labelledby="results-h">
          <h2 id="results-h">Search results</h2>
          <ErrorMessage message={search.error} />
          {search.loading && <Loading what="results" />}
          {search.data && (
            <>
              <p role="status">
                {search.data.total} {search.data.total === 1 ? 'page matches' : 'pages match'} “{initialQuery}”.{' '}
                <a href={href({ name: 'repo', repo })}>Clear the search</a>
              </p>
              {search.data.results.length === 0 ? (
                <Empty>No page matches. Try fewer words, or a prefix such as stor*.</Empty>
              ) : (
                <ul class="list" aria-label="Search results">
                  {search.data.results.map((r) => (
                    <li key={r.path}>
                      <a class="title" href={href({ name: 'page', repo, path: r.path })}>
                        {r.title || pageName(r.path)}
                      </a>
                      {r.type && <span class="badge">{r.type}</span>}
                      <div class="meta">
                        <code>{r.path}</code>
                      </div>
                      <Snippet snippet={r.snippet} ctx={pageSet ? { repo, path: r.path, pages: pageSet } : undefined} />
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
        </section>
      )}

      <ErrorMessage message={pages.error} />
      {pages.loading && !pages.data && <Loading what="pages" />}
      {pages.data && pages.data.length === 0 && (
        <div class="empty">
          <p class="flush">This repository has no pages yet. To start it from a project folder, run there:</p>
          <pre class="command">
            <code>kr init --repo {repo}</code>
          </pre>
          <p>
            then write pages and <code>kr push</code> them, or <a href={href({ name: 'new', repo })}>write the first page here</a>.
          </p>
        </div>
      )}
      {groups.map((g) => (
        <section class="group" key={g.type} aria-labelledby={`group-${g.type}`}>
          <h2 id={`group-${g.type}`}>
            {g.label} <span class="count">({g.pages.length})</span>
          </h2>
          <ul class="list">
            {g.pages.map((p) => (
              <li key={p.path}>
                <a class="title" href={href({ name: 'page', repo, path: p.path })}>
                  {metas.get(p.path)?.title ?? pageName(p.path)}
                </a>
                {metas.get(p.path)?.summary && <p class="summary">{metas.get(p.path)!.summary}</p>}
                <div class="meta">
                  <code>{p.path}</code>
                  <span>
                    <Change c={p} />
                  </span>
                </div>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </section>
  );
}
