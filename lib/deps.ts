import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { RepoStore } from './git/repo-store.ts';
import type { Logger } from './log.ts';
import type { Members } from './db/members.ts';

/**
 * Everything a handler may use, injected: no module-level singletons. The Node entry builds these from
 * the environment (lib/runtime/node.ts); tests build them on temporary directories.
 */
export interface Deps {
  config: Config;
  clock: Clock;
  db: Database;
  repos: RepoStore;
  log: Logger;
  members: Members;
}
