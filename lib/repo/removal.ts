import type { GitStore } from '../git/store.ts';
import { repositoryRowsDeletion } from '../db/repo-rows.ts';
import type { PathIndex } from './path-index.ts';

/** What a removal uses of the repository store (lib/repo/repo-store.ts). */
export interface RemovalHost {
  readonly git: GitStore;
  readonly index: PathIndex;
  whileQuiet<T>(id: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * Repos.remove on Node (RepoStore.remove). Under the repository's lock: its directory is renamed out of the repositories (the
 * moment it stops existing: GitStore.retire), then every row the database holds for it — accounts side
 * (lib/db/repo-rows.ts) and index — goes in one batch, then the directory is removed. A failed batch
 * renames the directory back (nothing happened); a crash after the rename is finished at the next start
 * (`finishRemovals`), before anything is served, so rows and directory never disagree for long: the id is
 * gone or whole. False when the repository does not exist (any more). Callers hold its creation lock.
 */
export function removeRepository(store: RemovalHost, id: string): Promise<boolean> {
  return store.whileQuiet(id, async () => {
    if (!(await store.git.exists(id))) return false;
    const dir = await store.git.retire(id);
    try {
      await dropRows(store, id);
    } catch (e) {
      await store.git.reinstate(id, dir);
      throw e;
    }
    // Left behind when it fails: the next start removes it (the repository is gone either way).
    await store.git.fs.removeTree(dir).catch(() => undefined);
    return true;
  });
}

/**
 * Every row of the database about the repository, accounts side and index, in one batch; then its
 * full-text rows, which live in a store of their own (derived: were that to fail, nothing refers to them,
 * and a repository created again under the id rebuilds them from its own git).
 */
async function dropRows(store: RemovalHost, id: string): Promise<void> {
  await store.index.database.batch([...repositoryRowsDeletion(id), ...store.index.removalStmts(id)]);
  await store.index.dropSearch(id);
}

/**
 * Finishes the deletions a crash (or a failed removal) left half-way: the rows of a retired repository
 * whose id has not been created again are deleted, and its directory removed. Call once at boot, before
 * serving.
 */
export async function finishRemovals(store: RemovalHost): Promise<void> {
  for (const { id, dir } of await store.git.retired()) {
    if (!(await store.git.exists(id))) await dropRows(store, id);
    await store.git.fs.removeTree(dir);
  }
}
