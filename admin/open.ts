/**
 * Opens the admin command's target (admin/context.ts lists the three): the Node server's data root here, the
 * Workers targets through their own modules, loaded (with Miniflare) only when asked for.
 */
import { join } from 'node:path';
import { systemClock } from '../lib/util/clock.ts';
import { GitStore } from '../lib/git/store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { AdminError, configuredDataRoot, contextOver, isDirectory, type AdminContext, type AdminRepos, type TargetOptions } from './context.ts';

/** The Node server's data root: `service.db` (migrated, as the server does at boot) and `repos/`, read only. */
async function openNode(env: NodeJS.ProcessEnv, cwd: string): Promise<AdminContext> {
  const dataRoot = configuredDataRoot(env, cwd);
  if (!(await isDirectory(dataRoot))) {
    throw new AdminError(
      `data root ${dataRoot} does not exist: set SERVICE_DATA_ROOT to the server's (the server creates it when it first starts)`,
    );
  }
  const db = await openDatabaseFile(join(dataRoot, 'service.db'), Math.floor(systemClock.now() / 1000));
  const git = new GitStore({ fs: nodeStoreFs(), root: join(dataRoot, 'repos') });
  const repos: AdminRepos = {
    list: () => git.list(),
    exists: (id) => git.exists(id),
    caseVariant: (id) => git.caseVariant(id),
    // From git itself, not the server's derived index, which may lag behind.
    pageCount: async (id) => (await git.listFiles(id, await git.head(id))).size,
  };
  return contextOver('node', db, repos, () => db.close());
}

/** Opens the target; the Workers targets' modules (and Miniflare) are loaded only when asked for. */
export async function openContext(env: NodeJS.ProcessEnv, cwd: string, opts: TargetOptions = { target: 'node' }): Promise<AdminContext> {
  if (opts.databaseId !== undefined && opts.target !== 'worker-remote') {
    throw new AdminError('--database-id is for --target worker-remote only', 2);
  }
  switch (opts.target) {
    case 'node':
      return openNode(env, cwd);
    case 'worker-local':
      return (await import('./worker-local.ts')).openWorkerLocal(configuredDataRoot(env, cwd));
    case 'worker-remote':
      return (await import('./worker-remote.ts')).openWorkerRemote(env, cwd, opts.databaseId);
  }
}
