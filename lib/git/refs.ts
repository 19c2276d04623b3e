import { ConcurrentUpdateError, RepoNotFoundError } from '../core/errors.ts';
import { replacedName, type StoreFs } from './fs.ts';

/**
 * The branch of each repository (`refs/heads/main`, loose or in `packed-refs`): reading it, and moving it
 * by git's own lock-file protocol — `main.lock` taken with O_EXCL holding the new sha, then renamed over
 * the ref — and clearing what a process that died mid-write left behind (a stale lock, temporary object
 * and pack files).
 */

export const BRANCH = 'main';
export const REF = `refs/heads/${BRANCH}`;
const STALE_LOCK_MS = 30_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What the refs need of the repository directories (lib/git/repo-dirs.ts). */
export interface RefDirs {
  gitdir(id: string): string;
  exists(id: string): Promise<boolean>;
}

export class BranchRefs {
  /** `main.lock` files this store has created and not yet renamed or removed: never stale. */
  private readonly liveLocks = new Set<string>();

  constructor(
    private readonly fs: StoreFs,
    private readonly dirs: RefDirs,
  ) {}

  /** The sha `main` points at, or null for a repository with no commit yet. */
  async head(id: string): Promise<string | null> {
    const gitdir = this.dirs.gitdir(id);
    const loose = await this.fs.readFile(`${gitdir}/${REF}`);
    if (loose) {
      const sha = decoder.decode(loose).trim();
      if (/^[0-9a-f]{40}$/.test(sha)) return sha;
    }
    const packed = await this.fs.readFile(`${gitdir}/packed-refs`);
    if (packed) {
      for (const line of decoder.decode(packed).split('\n')) {
        const [sha, name] = line.split(' ');
        if (name === REF && sha && /^[0-9a-f]{40}$/.test(sha)) return sha;
      }
    }
    if (!(await this.dirs.exists(id))) throw new RepoNotFoundError(id);
    return null;
  }

  /**
   * Removes lock and temporary files left by a process that died mid-write: a `main.lock` older than
   * STALE_LOCK_MS (any age with `force`, at boot); with `force`, temporary object and pack files and the
   * ref's previous file if it still has its second name. A lock this store took itself and still holds is live
   * however old it is (its writer is slow, not dead) and is left alone.
   */
  async recover(id: string, force = false): Promise<void> {
    const gitdir = this.dirs.gitdir(id);
    const lock = `${gitdir}/${REF}.lock`;
    const mtime = this.liveLocks.has(lock) ? null : await this.fs.mtimeMs(lock);
    if (mtime !== null && (force || Date.now() - mtime > STALE_LOCK_MS)) await this.fs.unlink(lock);
    if (force) {
      // The ref's previous file, still linked when a crash came before it was freed (StoreFs.renameDurable).
      await this.fs.unlink(`${gitdir}/refs/heads/${replacedName(BRANCH)}`);
      for (const n of await this.fs.readdir(`${gitdir}/objects`)) {
        if (n.startsWith('tmp_obj_')) await this.fs.unlink(`${gitdir}/objects/${n}`);
      }
      // A pack being written (temporary files), or a merge cut short between its deletions (a .pack whose
      // .idx is gone: no reader can see it, and its objects are in the merged pack).
      const packDir = `${gitdir}/objects/pack`;
      const names = await this.fs.readdir(packDir);
      const idx = new Set(names.filter((n) => n.endsWith('.idx')).map((n) => n.slice(0, -4)));
      for (const n of names) {
        if (n.startsWith('tmp_pack_') || n.startsWith('tmp_idx_') || (n.startsWith('pack-') && n.endsWith('.pack') && !idx.has(n.slice(0, -5)))) {
          await this.fs.unlink(`${packDir}/${n}`);
        }
      }
    }
  }

  /**
   * Takes `main.lock` (O_EXCL), clearing a stale one left by a crash first if needed. Resolves once the
   * lock is held; `flushed` once its bytes are on disk too (where the filesystem can tell the two apart,
   * the holder goes on while the flush runs).
   */
  async takeLock(id: string, lockPath: string, sha: string): Promise<{ flushed: Promise<void> }> {
    const data = encoder.encode(`${sha}\n`);
    const create = async (): Promise<{ flushed: Promise<void> } | null> => {
      if (this.fs.createExclusiveEarly) return this.fs.createExclusiveEarly(lockPath, data);
      return (await this.fs.createExclusive(lockPath, data)) ? { flushed: Promise.resolve() } : null;
    };
    let made = await create();
    if (!made) {
      await this.recover(id);
      made = await create();
      if (!made) throw new ConcurrentUpdateError(`${REF} is locked by another writer`);
    }
    this.liveLocks.add(lockPath);
    return made;
  }

  /** Moves the branch: the held lock renamed over the ref (its directory flushed); the lock given back if that fails. */
  async moveTo(lockPath: string, refPath: string): Promise<void> {
    try {
      await this.fs.renameDurable(lockPath, refPath);
      this.liveLocks.delete(lockPath);
    } catch (e) {
      await this.dropLock(lockPath);
      throw e;
    }
  }

  /**
   * Points the branch of a repository that has none yet at `sha` (an import), by git's lock-file protocol:
   * ConcurrentUpdateError when the branch exists meanwhile. Callers hold the repository's lock.
   */
  async startBranch(id: string, sha: string): Promise<void> {
    const refPath = `${this.dirs.gitdir(id)}/${REF}`;
    const lockPath = `${refPath}.lock`;
    const { flushed } = await this.takeLock(id, lockPath, sha);
    try {
      await flushed;
      const current = await this.head(id);
      if (current !== null) throw new ConcurrentUpdateError(`${REF} moved from (none) to ${current}`);
      await this.fs.renameDurable(lockPath, refPath);
      this.liveLocks.delete(lockPath);
    } catch (e) {
      if (this.liveLocks.has(lockPath)) await this.dropLock(lockPath);
      throw e;
    }
  }

  /** Gives `main.lock` back without moving the branch. */
  async dropLock(lockPath: string): Promise<void> {
    try {
      await this.fs.unlink(lockPath);
    } finally {
      this.liveLocks.delete(lockPath);
    }
  }
}
