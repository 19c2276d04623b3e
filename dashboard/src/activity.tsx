/** A repository's activity feed with a chart of pushes per day by person, and a page's evolution timeline. */
import type { Api } from './api.ts';
import { Crumbs } from './ui.tsx';
import { RepoTabs } from './views.tsx';
import { href } from './route.ts';
import { pageName } from './content.ts';

export function ActivityView({ api: _api, repo }: { api: Api; repo: string }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'Activity' }]} />
      <h1 tabIndex={-1}>Activity in {repo}</h1>
      <RepoTabs repo={repo} current="activity" />
    </section>
  );
}

export function EvolutionView({ api: _api, repo, path }: { api: Api; repo: string; path: string }) {
  return (
    <section>
      <Crumbs
        items={[
          { label: 'Repositories', to: '#/' },
          { label: repo, to: href({ name: 'repo', repo }) },
          { label: pageName(path), to: href({ name: 'page', repo, path }) },
          { label: 'Evolution' },
        ]}
      />
      <h1 tabIndex={-1}>Evolution of {pageName(path)}</h1>
    </section>
  );
}
