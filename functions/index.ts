import type { RouteDef } from '../lib/framework/route.ts';
import type { Config } from '../lib/framework/config.ts';
import { hostedRoutes } from './hosted/index.ts';
import health from './health.ts';
import { openApiRoute } from './openapi.ts';
import authIdp from './auth/idp.ts';
import me from './me.ts';
import limits from './limits.ts';
import patsCreate from './pats/create.ts';
import patsList from './pats/list.ts';
import patsRevoke from './pats/revoke.ts';
import reposCreate from './repos/create.ts';
import reposCreateLegacy from './repos/create-legacy.ts';
import membersList from './members/list.ts';
import membersRemove from './members/remove.ts';
import membersRole from './members/role.ts';
import invitesCreate from './invites/create.ts';
import invitesList from './invites/list.ts';
import invitesRevoke from './invites/revoke.ts';
import invitesJoin from './invites/join.ts';
import reposList from './repos/list.ts';
import reposExport from './repos/export.ts';
import reposImport from './repos/import.ts';
import reposDelete from './repos/delete.ts';
import pagesList from './pages/list.ts';
import pagesRead from './pages/read.ts';
import pagesLinks from './pages/links.ts';
import syncPush from './sync/push.ts';
import syncPull from './sync/pull.ts';
import historyTimeline from './history/timeline.ts';
import historyPage from './history/page.ts';
import diffPage from './diff/diff.ts';
import diffEvolution from './diff/evolution.ts';
import activityList from './activity/list.ts';
import searchRepo from './search/repo.ts';
import searchAll from './search/all.ts';
import eventsStream from './events/stream.ts';
import webhooksCreate from './webhooks/create.ts';
import webhooksList from './webhooks/list.ts';
import webhooksRemove from './webhooks/remove.ts';
import webhooksTest from './webhooks/test.ts';
import webhooksDeliveries from './webhooks/deliveries.ts';
import gitInfoRefs from './git/info-refs.ts';
import gitUploadPack from './git/upload-pack.ts';
import gitReceivePack from './git/receive-pack.ts';
import clientTgz from './client/tgz.ts';
import clientMjs from './client/mjs.ts';

/** Every endpoint of both builds, in one list (the hosted build adds hostedRoutes: see routesFor). */
export const routes: RouteDef[] = [
  health,
  // Describes this list and hostedRoutes, read on its first request (both are complete by then).
  openApiRoute(() => ({ routes, hostedRoutes })),
  authIdp,
  limits,
  me,
  patsCreate,
  patsList,
  patsRevoke,
  reposList,
  reposCreate,
  // Before POST /v1/repos/:id, which would otherwise take `join` for a repository id.
  invitesJoin,
  reposCreateLegacy,
  membersList,
  membersRemove,
  membersRole,
  invitesCreate,
  invitesList,
  invitesRevoke,
  pagesList,
  pagesRead,
  pagesLinks,
  syncPush,
  syncPull,
  historyTimeline,
  historyPage,
  diffPage,
  diffEvolution,
  activityList,
  reposExport,
  reposImport,
  reposDelete,
  searchRepo,
  searchAll,
  eventsStream,
  webhooksCreate,
  webhooksList,
  webhooksRemove,
  webhooksTest,
  webhooksDeliveries,
  gitInfoRefs,
  gitUploadPack,
  gitReceivePack,
  clientTgz,
  clientMjs,
];

export { hostedRoutes };

/**
 * The routes a build mounts: every endpoint above, plus functions/hosted/ (billing, admin) when the build
 * is hosted (SERVICE_HOSTED=1 on Node; the Workers entry). server.ts and the tests' servers use this.
 */
export function routesFor(config: Pick<Config, 'hosted'>): RouteDef[] {
  return config.hosted ? [...routes, ...hostedRoutes] : routes;
}
