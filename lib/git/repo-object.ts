import { DurableObject, type DurableObjectState } from 'cloudflare:workers';
import { systemClock } from '../clock.ts';
import { DoSqlDatabase } from '../db/do-sql.ts';
import { migrate } from '../db/migrate.ts';
import { BUNDLED_MIGRATIONS } from '../db/migrations-bundled.ts';
import { toHttpError } from '../app.ts';
import { DoFs } from './do-fs.ts';
import { PathIndex } from './path-index.ts';
import { RepoStore } from './repo-store.ts';
import { GitStore } from './store.ts';
import type { SearchOptions } from '../search/results.ts';
import { jsonLogger } from '../log.ts';
import { logStreamEnd } from '../http/stream.ts';

/**
 * The hosted build's repository: one Durable Object per repository id holds that repository's git
 * objects and refs (lib/git/do-fs.ts, in the object's own SQLite storage) and its derived index, and runs
 * the same RepoStore as the Node build over them — the same object format, one commit per push, the
 * check-and-set of the branch and the index kept level with git. The object's single-threaded execution
 * serialises its writes, as the per-repository lock does on Node (and that lock still runs inside).
 *
 * The Worker reaches it through `call` (lib/runtime/workers-repos.ts), and through `pullBody` and
 * `exportBody`, which return byte streams (native RPC). Errors cross as their HTTP form (`toHttpError`),
 * which is all the Worker side does with them.
 *
 * Deleting the repository (`destroy`) wipes the object's whole storage (`deleteAll`) and leaves a tombstone:
 * from then on a call answers 404 `repo not found` instead of making the repository on first use, so a
 * Worker isolate that still takes the id for an existing one cannot bring it back. Only `create` (called
 * once D1 has registered the id again) lifts it.
 */

export const REPO_ROOT = '/repos';

/** What may be called, by name: each takes the repository id first. */
const METHODS = {
  create: (s: RepoStore, id: string, creator?: string) => s.create(id, creator),
  creatorOf: (s: RepoStore, id: string) => s.creatorOf(id),
  ready: (s: RepoStore, id: string) => s.ready(id),
  head: (s: RepoStore, id: string) => s.head(id),
  resolve: (s: RepoStore, id: string, sha: string) => s.resolve(id, sha),
  page: (s: RepoStore, id: string, path: string) => s.page(id, path),
  fileAt: (s: RepoStore, id: string, sha: string, path: string) => s.fileAt(id, sha, path),
  pages: (s: RepoStore, id: string) => s.pages(id),
  history: (s: RepoStore, id: string, path: string, limit: number, beforeSeq?: number) => s.history(id, path, limit, beforeSeq),
  timeline: (s: RepoStore, id: string, limit: number) => s.timeline(id, limit),
  summary: (s: RepoStore, id: string) => s.summary(id),
  search: (s: RepoStore, id: string, q: string, opts: SearchOptions) => s.search(id, q, opts),
  links: (s: RepoStore, id: string, path: string) => s.links(id, path),
  commitFiles: (s: RepoStore, ...a: Parameters<RepoStore['commitFiles']>) => s.commitFiles(...a),
  readBlob: (s: RepoStore, id: string, oid: string) => s.readBlob(id, oid),
  'index.resolve': async (s: RepoStore, id: string, value: string) => (await s.ready(id), s.index.resolve(id, value)),
  'index.history': async (s: RepoStore, id: string, path: string, limit: number, before?: number) =>
    (await s.ready(id), s.index.history(id, path, limit, before)),
  'index.touches': async (s: RepoStore, id: string, path: string, limit: number, before?: number) =>
    (await s.ready(id), s.index.touches(id, path, limit, before)),
  'index.lastTouch': async (s: RepoStore, id: string, path: string, atSeq: number) =>
    (await s.ready(id), s.index.lastTouch(id, path, atSeq)),
} as const;

/** `destroy` deletes the repository (RepoObject.destroy); the others are METHODS. */
export type RepoMethod = keyof typeof METHODS | 'destroy';

/** Lines about the streams this object serves (`stream_cancelled`, `stream_failed`), as the Worker logs its own. */
const log = jsonLogger(
  (line) => console.log(line),
  (line) => console.error(line),
);

/** The storage key of the tombstone a deleted repository leaves (its value: when, in ms). */
const TOMBSTONE = 'kr:deleted';

/** A call's outcome as it crosses to the Worker: the value, or the error's HTTP form. */
export type RpcResult =
  | { ok: true; value: unknown }
  | { ok: false; status: number; error: string; extra?: Record<string, unknown>; headers?: Record<string, string> };

export class RepoObject extends DurableObject {
  private store: RepoStore | null = null;
  /** The repository was deleted and not created again (the tombstone is in storage). */
  private deleted = false;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.store = await this.open();
      this.deleted = (await ctx.storage.get(TOMBSTONE)) !== undefined;
    });
  }

  /** The repository store over this object's storage, its tables made where missing. */
  private async open(): Promise<RepoStore> {
    const db = new DoSqlDatabase(this.ctx.storage);
    // The index tables come from the same numbered migrations as everywhere (the rest of them stay empty).
    await migrate(db, BUNDLED_MIGRATIONS, Math.floor(Date.now() / 1000));
    const git = new GitStore({ fs: new DoFs(this.ctx.storage).storeFs(), root: REPO_ROOT, cacheBytes: 16 * 1024 * 1024 });
    return new RepoStore(git, new PathIndex(db), systemClock);
  }

  /**
   * Deletes the repository: once no push or index work is in flight (the store's lock), the object's whole
   * storage goes, the tombstone is written, and a fresh store starts over the empty storage. Calls that
   * waited behind the lock with the old store find no repository (404).
   */
  private async destroy(id: string): Promise<void> {
    const old = this.store!;
    await old.whileQuiet(id, async () => {
      // The old store forgets the repository, so that its waiters see it gone.
      if (await old.git.exists(id)) await old.git.retire(id);
      await this.ctx.storage.deleteAll();
      await this.ctx.storage.put(TOMBSTONE, Date.now());
      this.deleted = true;
      this.store = await this.open();
    });
  }

  async call(method: string, args: unknown[]): Promise<RpcResult> {
    const fn = Object.hasOwn(METHODS, method) ? (METHODS[method as keyof typeof METHODS] as (s: RepoStore, ...a: unknown[]) => Promise<unknown>) : null;
    if (!fn && method !== 'destroy') return { ok: false, status: 500, error: `no such repository method: ${method}` };
    const id = String(args[0]);
    if (method === 'destroy') return this.guarded(method, id, () => this.destroy(id).then(() => null));
    return this.guarded(method, id, (store) => fn!(store, ...args));
  }

  /**
   * A pull's answer (RepoStore.pullBody) as `{ pages, body }`, `body` a byte stream that native RPC carries
   * to the Worker as it is read, with flow control: the pages are read here only as fast as the client takes
   * them, and when it goes away the stream is cancelled here and the reads stop. `requestId` names the
   * Worker's request in this object's log lines about the stream.
   */
  pullBody(id: string, since: string | undefined, requestId?: string): Promise<RpcResult> {
    return this.guarded('pullBody', id, (store) =>
      store.pullBody(id, since, { onEnd: logStreamEnd(log, { id: requestId, repo: id, what: 'pull' }) }),
    );
  }

  /** The repository's bundle (RepoStore.exportBody) as a byte stream, or null while it has no commit; as pullBody streams. */
  exportBody(id: string, requestId?: string): Promise<RpcResult> {
    return this.guarded('exportBody', id, (store) =>
      store.exportBody(id, { onEnd: logStreamEnd(log, { id: requestId, repo: id, what: 'export' }) }),
    );
  }

  /**
   * Runs `fn` on the store of repository `id`: after the tombstone's check (a deleted repository answers 404
   * until `create` lifts it) and the repository's creation on first use; its errors cross as their HTTP form.
   */
  private async guarded(method: string, id: string, fn: (store: RepoStore) => Promise<unknown>): Promise<RpcResult> {
    if (!this.store) return { ok: false, status: 500, error: `no such repository method: ${method}` };
    try {
      if (method === 'destroy') return { ok: true, value: await fn(this.store) };
      if (method === 'create' && this.deleted) {
        // D1 registered the id again: a new repository, in the storage destroy emptied.
        await this.ctx.storage.delete(TOMBSTONE);
        this.deleted = false;
      }
      if (this.deleted) return { ok: false, status: 404, error: 'repo not found' };
      // The repository is made on first use too: the registry row in D1 is what says it exists, and a
      // creation that died between writing that row and calling `create` here must not leave it unusable.
      if (method !== 'create') await this.store.create(id);
      return { ok: true, value: await fn(this.store) };
    } catch (e) {
      const http = toHttpError(e);
      if (!http) throw e;
      return { ok: false, status: http.status, error: http.message, extra: http.extra, headers: http.headers };
    }
  }
}
