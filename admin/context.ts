/**
 * What the admin command works on: the accounts, tokens and membership of one build, through the same
 * lib/db modules the server uses, and its repositories, read only. Never the service's HTTP API: the
 * server may be down. Three targets (`--target`):
 *
 * - `node` (default): the Node server's data root (SERVICE_DATA_ROOT, read by the same loadConfig as the
 *   server): its libSQL file `service.db` and the git repositories under `repos/`. Safe while the server
 *   runs: the database is in WAL mode with a busy timeout on every connection (lib/runtime/node/open-db.ts), every
 *   write here is one atomic batch, and the repositories are only read (a ref file is replaced by rename
 *   and objects never change, so a concurrent push is seen whole or not at all).
 * - `worker-local`: the hosted build as `npm run dev:worker` keeps it under the same data root
 *   (admin/worker-local.ts): its D1 and its repositories' Durable Objects, through the running dev:worker,
 *   or through Miniflare when it is stopped.
 * - `worker-remote`: a deployed Worker's D1 through Cloudflare's HTTP API (admin/worker-remote.ts). Its
 *   repositories' content lives in Durable Objects nothing outside the Worker can read.
 */
import { stat } from 'node:fs/promises';
import { systemClock, type Clock } from '../lib/util/clock.ts';
import { ConfigError, loadConfig } from '../lib/framework/config.ts';
import { Members } from '../lib/db/members.ts';
import { Pats } from '../lib/db/pats.ts';
import type { SqlDatabase } from '../lib/db/sql.ts';
import { Users } from '../lib/db/users.ts';
import { RemoteRepos, type RepoNamespace } from '../lib/runtime/workers/remote-repos.ts';

/** A refusal: printed as `error: <message>` (or `{"error"}` with --json), exit code 1 unless stated. */
export class AdminError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

export const TARGETS = ['node', 'worker-local', 'worker-remote'] as const;
export type Target = (typeof TARGETS)[number];

/** Where the command runs: the target, and for `worker-remote` the D1 database id when given as a flag. */
export interface TargetOptions {
  target: Target;
  databaseId?: string;
}

/** The repositories as the commands need them: which exist, and their pages. */
export interface AdminRepos {
  list(): Promise<string[]>;
  exists(id: string): Promise<boolean>;
  /** The existing id that differs from `id` only in ASCII case, or null. */
  caseVariant(id: string): Promise<string | null>;
  /**
   * Pages at head: from git itself, or from the repository's own Durable Object while `npm run dev:worker`
   * runs; null where the repository's content cannot be read from here (a deployed Worker's objects).
   */
  pageCount(id: string): Promise<number | null>;
}

export interface AdminContext {
  target: Target;
  clock: Clock;
  db: SqlDatabase;
  users: Users;
  pats: Pats;
  members: Members;
  repos: AdminRepos;
  close(): Promise<void>;
}

/** The data root as the server (and `npm run dev:worker`) resolve it: SERVICE_DATA_ROOT, by the same loadConfig. */
export function configuredDataRoot(env: NodeJS.ProcessEnv, cwd: string): string {
  try {
    return loadConfig(env, cwd).config.dataRoot;
  } catch (e) {
    if (e instanceof ConfigError) throw new AdminError(`configuration: ${e.message}`);
    throw e;
  }
}

export async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isDirectory() ?? false;
}

/** The users, tokens and membership over `db`, with the target's repositories. */
export function contextOver(target: Target, db: SqlDatabase, repos: AdminRepos, close: () => Promise<void>): AdminContext {
  const clock = systemClock;
  return {
    target,
    clock,
    db,
    users: new Users(db, clock),
    pats: new Pats(db, clock),
    members: new Members(db, clock),
    repos,
    close,
  };
}

/**
 * The hosted build's repositories: which exist is `repo_registry` in D1, read through the same RemoteRepos
 * the Worker uses (its exact and case-folded lookups); their pages through `pageCount`. Nothing here calls
 * a repository's Durable Object.
 */
export function registryRepos(db: SqlDatabase, pageCount: AdminRepos['pageCount']): AdminRepos {
  const unreachable = (): never => {
    throw new Error("the admin command does not call a repository's Durable Object");
  };
  const ns: RepoNamespace = { idFromName: unreachable, get: unreachable };
  const registry = new RemoteRepos(ns, db, systemClock);
  return {
    list: () => registry.list(),
    exists: (id) => registry.exists(id),
    caseVariant: (id) => registry.caseVariant(id),
    pageCount,
  };
}
