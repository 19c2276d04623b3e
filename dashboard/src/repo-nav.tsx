/** The navigation of a repository's views: its tabs, and the breadcrumb trail of a view about one page. */
import { pageName } from './content.ts';
import { href } from './route.ts';
import { Crumbs } from './ui.tsx';

/** The breadcrumb trail of a view about one page: repositories, the repository, the page, then `here`. */
export function PageCrumbs({ repo, path, here, title }: { repo: string; path: string; here: string; title?: string }) {
  return (
    <Crumbs
      items={[
        { label: 'Repositories', to: '#/' },
        { label: repo, to: href({ name: 'repo', repo }) },
        { label: title ?? pageName(path), to: href({ name: 'page', repo, path }) },
        { label: here },
      ]}
    />
  );
}

/** The sections of one repository: its pages, its team, its activity, its settings. */
export function RepoTabs({ repo, current }: { repo: string; current: 'pages' | 'team' | 'activity' | 'settings' }) {
  const tabs = [
    { key: 'pages', label: 'Pages', to: href({ name: 'repo', repo }) },
    { key: 'team', label: 'Team', to: href({ name: 'team', repo }) },
    { key: 'activity', label: 'Activity', to: href({ name: 'activity', repo }) },
    { key: 'settings', label: 'Settings', to: href({ name: 'settings', repo }) },
  ] as const;
  return (
    <nav class="tabs" aria-label="Repository">
      {tabs.map((t) => (
        <a key={t.key} href={t.to} aria-current={t.key === current ? 'page' : undefined}>
          {t.label}
        </a>
      ))}
    </nav>
  );
}
