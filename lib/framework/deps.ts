import type { JWTVerifyGetKey } from 'jose';
import type { Clock } from '../util/clock.ts';
import type { Config } from './config.ts';
import type { SqlDatabase as Database } from '../db/sql.ts';
import type { Repos } from '../repo/repos.ts';
import type { Logger } from './log.ts';
import type { Members } from '../db/members.ts';
import type { Users } from '../db/users.ts';
import type { Pats } from '../db/pats.ts';
import type { Activity } from '../db/activity.ts';
import type { Invites } from '../db/invites.ts';
import type { QuotaPolicy } from '../usecases/quota.ts';
import type { ParseCache } from '../usecases/diff.ts';
import type { Live } from '../events/live.ts';
import type { HostResolver } from '../events/url.ts';
import type { ClientFiles } from '../usecases/client-package.ts';

/**
 * Where ID-token signing keys come from (lib/auth/idp.ts `remoteIdpKeys` in production). Injected as
 * `idpKeys`, so tests can use a loopback JWKS.
 */
export type IdpKeySource = JWTVerifyGetKey;

/**
 * Everything a handler may use, injected: no module-level singletons. The Node entry builds these from
 * the environment (lib/runtime/node/server.ts); tests build them on temporary directories.
 */
export interface Deps {
  config: Config;
  clock: Clock;
  db: Database;
  repos: Repos;
  log: Logger;
  members: Members;
  users: Users;
  pats: Pats;
  /** Signing keys of the identity provider (remote JWKS in production; tests may point it anywhere). */
  idpKeys: IdpKeySource;
  activity: Activity;
  invites: Invites;
  quota: QuotaPolicy;
  /** Parsed page revisions by (repository, blob id), shared by the diff and evolution endpoints. */
  parsedPages: ParseCache;
  /** Live events and webhooks (lib/events/): the Node server's own, or the repository's Durable Object's. */
  live: Live;
  /**
   * Resolves a webhook's host name to every address it has, for the check at creation (Node: DNS). Absent
   * where the runtime cannot resolve names (Workers): only the URL's own rules are checked there.
   */
  resolveHost?: HostResolver;
  /**
   * The client package `GET /client/kr.tgz` and `/client/kr.mjs` serve (lib/usecases/client-package.ts): dist/client/
   * on Node, the static assets on Workers. Absent: those routes answer 404.
   */
  clientFiles?: ClientFiles;
}
