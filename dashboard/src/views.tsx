/** The repository navigation (repo-nav.tsx) under the module name activity.tsx imports it by. */
export { PageCrumbs, RepoTabs } from './repo-nav.tsx';
