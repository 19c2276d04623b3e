/**
 * What the admin command works on: the server's own data root (SERVICE_DATA_ROOT, read by the same
 * loadConfig as the server), its database file through the same lib/db modules, and its repositories
 * through the same git store, read only. Never HTTP: the server may be down.
 *
 * Safe while the server runs: the database is libSQL in WAL mode with a busy timeout on every connection
 * (lib/db/open-node.ts), every write here is one atomic batch, and the repositories are only read (a ref
 * file is replaced by rename and objects never change, so a concurrent push is seen whole or not at all).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock, type Clock } from '../lib/clock.ts';
import { ConfigError, loadConfig } from '../lib/config.ts';
import type { LibsqlDatabase } from '../lib/db/database.ts';
import { Members } from '../lib/db/members.ts';
import { openDatabaseFile } from '../lib/db/open-node.ts';
import { Pats } from '../lib/db/pats.ts';
import { Users } from '../lib/db/users.ts';
import { nodeStoreFs } from '../lib/git/node-fs.ts';
import { GitStore } from '../lib/git/store.ts';

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

export interface AdminContext {
  dataRoot: string;
  clock: Clock;
  db: LibsqlDatabase;
  users: Users;
  pats: Pats;
  members: Members;
  git: GitStore;
  close(): Promise<void>;
}

/** Opens the data root the server uses; refuses one that does not exist (a wrong SERVICE_DATA_ROOT). */
export async function openContext(env: NodeJS.ProcessEnv, cwd: string): Promise<AdminContext> {
  let dataRoot: string;
  try {
    dataRoot = loadConfig(env, cwd).config.dataRoot;
  } catch (e) {
    if (e instanceof ConfigError) throw new AdminError(`configuration: ${e.message}`);
    throw e;
  }
  const st = await stat(dataRoot).catch(() => null);
  if (!st?.isDirectory()) {
    throw new AdminError(
      `data root ${dataRoot} does not exist: set SERVICE_DATA_ROOT to the server's (the server creates it when it first starts)`,
    );
  }
  const clock = systemClock;
  const db = await openDatabaseFile(join(dataRoot, 'service.db'), Math.floor(clock.now() / 1000));
  return {
    dataRoot,
    clock,
    db,
    users: new Users(db, clock),
    pats: new Pats(db, clock),
    members: new Members(db, clock),
    git: new GitStore({ fs: nodeStoreFs(), root: join(dataRoot, 'repos') }),
    close: () => db.close(),
  };
}
