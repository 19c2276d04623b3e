import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { checkBundle, type ImportPlan, type IndexedPack, type ObjectInflater, type Spool } from '../git/import.ts';
import { webCodec } from '../git/objects.ts';
import type { GitStore } from '../git/store.ts';

/**
 * Imports as the repository store runs them (Repos `import…`, lib/import.ts drives them): a body is stored as
 * it arrives in a spool (`begin`, `append`), checked whole (`check`: lib/git/import.ts), and only then kept
 * (`finish`: the objects, then the branch, then the index) or thrown away (`discard`). Each import is known
 * by a token until it is finished or discarded; its spool is never left behind.
 */

/** A spool being filled: what the runtime stores an import's body in. */
export interface ImportSpool extends Spool {
  append(chunk: Uint8Array): Promise<void>;
  /** Every byte is in; flushed where that means something. */
  seal(): Promise<void>;
  /** Optional (Node): bytes `start` to `end` as a new file, flushed: the pack kept as it is. */
  copyRange?(start: number, end: number, to: string): Promise<void>;
  /** Removes the spool, whatever state it is in. */
  discard(): Promise<void>;
}

/** What a runtime gives imports: where bodies go, and a zlib inflate that says where a stream ended. */
export interface ImportRuntime {
  spool(): Promise<ImportSpool>;
  inflater: ObjectInflater;
}

export interface ImportCheckOptions {
  branch?: string;
  /** The largest file a commit may hold. */
  maxFileBytes: number;
}

interface Session {
  id: string;
  spool: ImportSpool;
  checked: { plan: ImportPlan; pack: IndexedPack } | null;
}

export class ImportSessions {
  readonly #sessions = new Map<string, Session>();
  constructor(
    private readonly runtime: ImportRuntime,
    private readonly git: GitStore,
  ) {}

  async begin(id: string): Promise<string> {
    this.git.gitdir(id);
    const token = crypto.randomUUID();
    this.#sessions.set(token, { id, spool: await this.runtime.spool(), checked: null });
    return token;
  }

  #get(id: string, token: string): Session {
    const s = this.#sessions.get(token);
    if (!s || s.id !== id) throw refuse(R.import_discarded);
    return s;
  }

  async append(id: string, token: string, chunk: Uint8Array): Promise<void> {
    const s = this.#get(id, token);
    if (s.checked) throw refuse(R.import_already_checked);
    await s.spool.append(chunk);
  }

  async check(id: string, token: string, opts: ImportCheckOptions): Promise<ImportPlan> {
    const s = this.#get(id, token);
    await s.spool.seal();
    s.checked = await checkBundle(s.spool, {
      branch: opts.branch,
      inflater: this.runtime.inflater,
      codec: this.git.fs.codec ?? webCodec,
      limits: { maxFileBytes: opts.maxFileBytes },
    });
    return s.checked.plan;
  }

  /**
   * Keeps a checked import's objects and starts the branch at its head (callers hold the repository's lock):
   * 409 `repository is not empty` when the branch exists.
   */
  async keep(id: string, token: string): Promise<ImportPlan> {
    const s = this.#get(id, token);
    if (!s.checked) throw refuse(R.import_not_checked);
    if ((await this.git.head(id)) !== null) throw refuse(R.repo_not_empty);
    const { pack, plan } = s.checked;
    const spool = s.spool;
    await this.git.keepImported(id, pack, spool.copyRange ? (to) => spool.copyRange!(pack.start, pack.end, to) : undefined);
    await this.git.startBranch(id, plan.head);
    return plan;
  }

  async discard(id: string, token: string): Promise<void> {
    const s = this.#sessions.get(token);
    if (!s || s.id !== id) return;
    this.#sessions.delete(token);
    await s.spool.discard();
  }
}
