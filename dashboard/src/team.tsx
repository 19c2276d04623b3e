/** A repository's team (members, invite keys) and the signed-in user's personal access tokens. */
import type { Api } from './api.ts';
import { Crumbs } from './ui.tsx';
import { RepoTabs } from './views.tsx';
import { href } from './route.ts';

export function TeamView({ api: _api, repo }: { api: Api; repo: string }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'Team' }]} />
      <h1 tabIndex={-1}>Team of {repo}</h1>
      <RepoTabs repo={repo} current="team" />
    </section>
  );
}

export function TokensView({ api: _api }: { api: Api }) {
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Access tokens' }]} />
      <h1 tabIndex={-1}>Personal access tokens</h1>
    </section>
  );
}
