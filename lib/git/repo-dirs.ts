import { UnsafeNameError } from '../core/errors.ts';
import { isSafeRepoId } from '../core/page/path.ts';
import type { StoreFs } from './fs.ts';
import { REF } from './refs.ts';

/**
 * The repositories of a git store as directories: one bare repository per project at `<root>/<id>.git`,
 * readable by the plain `git` command. Their paths, listing, creation (whole or not at all), retirement
 * and the creator recorded in their config.
 */

/** Name prefix of a retired (deleted) repository's directory until it is removed (RepoDirs.retire). */
export const RETIRED_PREFIX = '.deleted-';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Repository ids hold ASCII only, so ASCII folding is the whole of "ignoring case" for them. */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase());

export class RepoDirs {
  private readonly known = new Set<string>();

  constructor(
    private readonly fs: StoreFs,
    /** Directory holding the `<id>.git` repositories. */
    readonly root: string,
  ) {}

  gitdir(id: string): string {
    if (!isSafeRepoId(id)) throw new UnsafeNameError(`invalid repo id: ${JSON.stringify(id)}`);
    return `${this.root}/${id}.git`;
  }

  async exists(id: string): Promise<boolean> {
    // A repository seen once stays known until it is retired (`retire`, under its lock).
    if (this.known.has(id)) return true;
    if (!(await this.fs.exists(`${this.gitdir(id)}/HEAD`))) return false;
    // On a case-insensitive filesystem `ACME.git/HEAD` opens `acme.git/HEAD`: only the exact spelling
    // among the directory's entries is this repository.
    if (!(await this.fs.readdir(this.root)).includes(`${id}.git`)) return false;
    this.known.add(id);
    return true;
  }

  /**
   * The id of an existing repository that equals `id` ignoring ASCII letter case (possibly `id` itself),
   * or null. Ids are unique ignoring case, because on case-insensitive filesystems two such ids would be
   * one directory.
   */
  async caseVariant(id: string): Promise<string | null> {
    const folded = asciiLower(id);
    for (const n of await this.fs.readdir(this.root)) {
      if (!n.endsWith('.git')) continue;
      const other = n.slice(0, -4);
      if (asciiLower(other) === folded && isSafeRepoId(other) && (await this.fs.exists(`${this.root}/${n}/HEAD`))) {
        return other;
      }
    }
    return null;
  }

  async list(): Promise<string[]> {
    const names = await this.fs.readdir(this.root);
    const ids: string[] = [];
    for (const n of names) {
      if (!n.endsWith('.git')) continue;
      const id = n.slice(0, -4);
      if (isSafeRepoId(id) && (await this.fs.exists(`${this.root}/${n}/HEAD`))) ids.push(id);
    }
    return ids.sort();
  }

  /**
   * Creates an empty bare repository. The repository is assembled in a temporary directory and renamed
   * into place, so it appears whole or not at all. Returns false when it already existed.
   */
  async init(id: string, opts: { creator?: string } = {}): Promise<boolean> {
    const gitdir = this.gitdir(id);
    if (await this.exists(id)) return false;
    await this.fs.mkdirp(this.root);
    const tmp = `${this.root}/.init-${id}-${Math.random().toString(36).slice(2)}`;
    try {
      for (const d of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info']) {
        await this.fs.mkdirp(`${tmp}/${d}`);
      }
      await this.fs.writeDurable(
        [
          { path: `${tmp}/HEAD`, data: encoder.encode(`ref: ${REF}\n`) },
          {
            path: `${tmp}/config`,
            data: encoder.encode(
              '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n' +
                (opts.creator && /^[A-Za-z0-9._:@-]{1,200}$/.test(opts.creator) ? `[kr]\n\tcreator = ${opts.creator}\n` : ''),
            ),
          },
          { path: `${tmp}/description`, data: encoder.encode(`Knowledge repository ${id}\n`) },
        ],
        tmp,
      );
      try {
        await this.fs.renameDurable(tmp, gitdir);
      } catch (e) {
        if (await this.exists(id)) return false;
        throw e;
      }
      return true;
    } finally {
      await this.fs.removeTree(tmp);
    }
  }

  /**
   * Takes a repository out of the store in one rename (the moment it stops existing): its directory becomes
   * `<root>/.deleted-<id>-<random>`, which no listing takes for a repository, and it is no longer known.
   * Returns that directory, for `reinstate` or removal. Callers hold the repository's lock.
   */
  async retire(id: string): Promise<string> {
    const gitdir = this.gitdir(id);
    const dir = `${this.root}/${RETIRED_PREFIX}${id}-${Math.random().toString(36).slice(2)}`;
    await this.fs.renameDurable(gitdir, dir);
    this.known.delete(id);
    return dir;
  }

  /** Puts back a repository `retire` took out (its deletion could not be completed). Callers hold the lock. */
  async reinstate(id: string, dir: string): Promise<void> {
    await this.fs.renameDurable(dir, this.gitdir(id));
  }

  /** The directories of retired repositories still on disk (a crash or a failure came before their removal). */
  async retired(): Promise<Array<{ id: string; dir: string }>> {
    const out: Array<{ id: string; dir: string }> = [];
    for (const n of await this.fs.readdir(this.root)) {
      if (!n.startsWith(RETIRED_PREFIX)) continue;
      const id = n.slice(RETIRED_PREFIX.length, n.lastIndexOf('-'));
      if (isSafeRepoId(id)) out.push({ id, dir: `${this.root}/${n}` });
    }
    return out;
  }

  /**
   * The user id recorded as the repository's creator when it was made (`kr.creator` in its config,
   * written atomically with the repository itself), or null.
   */
  async creatorOf(id: string): Promise<string | null> {
    const config = await this.fs.readFile(`${this.gitdir(id)}/config`);
    if (!config) return null;
    const m = /^\[kr\][^[]*?^\s*creator\s*=\s*(\S+)\s*$/m.exec(decoder.decode(config));
    return m ? m[1]! : null;
  }

  /** Removes what a process that died left of a repository being made, or of an import's body. */
  async removeLeftovers(): Promise<void> {
    for (const n of await this.fs.readdir(this.root)) {
      // A repository being made, or an import's body (lib/repo/import-store.ts), when the process died.
      if (n.startsWith('.init-') || n.startsWith('.import-')) await this.fs.removeTree(`${this.root}/${n}`);
    }
  }
}
