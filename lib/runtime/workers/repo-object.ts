import { DurableObject, type DurableObjectState } from 'cloudflare:workers';
import { systemClock } from '../../clock.ts';
import { DoSqlDatabase } from './do-sql.ts';
import { migrate } from '../../db/migrate.ts';
import { BUNDLED_MIGRATIONS } from './migrations.ts';
import { toHttpError } from '../../errors.ts';
import { DoFs } from './store-fs.ts';
import { PathIndex } from '../../git/path-index.ts';
import { RepoStore } from '../../git/repo-store.ts';
import { GitStore } from '../../git/store.ts';
import type { SearchOptions } from '../../search/results.ts';
import { loadConfig, type Config } from '../../config.ts';
import { jsonLogger } from '../../log.ts';
import { D1Database, type D1Like } from './d1.ts';
import { Members } from '../../db/members.ts';
import { Pats } from '../../db/pats.ts';
import { Users } from '../../db/users.ts';
import { Hub } from '../../events/hub.ts';
import { LocalLive, REPO_DELETED, type Live } from '../../events/live.ts';
import { accessLost } from '../../events/access.ts';
import { Deliverer } from '../../events/deliver.ts';
import { fetchSender } from './webhook-sender.ts';
import type { StreamGrant } from '../../events/stream.ts';

/**
 * The hosted build's repository: one Durable Object per repository id holds that repository's git
 * objects and refs (lib/runtime/workers/store-fs.ts, in the object's own SQLite storage) and its derived index, and runs
 * the same RepoStore as the Node build over them — the same object format, one commit per push, the
 * check-and-set of the branch and the index kept level with git. The object's single-threaded execution
 * serialises its writes, as the per-repository lock does on Node (and that lock still runs inside).
 *
 * The Worker reaches it through `call` (lib/runtime/workers/remote-repos.ts). Errors cross as their HTTP form
 * (`toHttpError`), which is all the Worker side does with them.
 *
 * Deleting the repository (`destroy`) wipes the object's whole storage (`deleteAll`) and leaves a tombstone:
 * from then on a call answers 404 `repo not found` instead of making the repository on first use, so a
 * Worker isolate that still takes the id for an existing one cannot bring it back. Only `create` (called
 * once D1 has registered the id again) lifts it.
 *
 * It also holds the repository's live events and webhooks (lib/events/, reached through RemoteLive in
 * lib/runtime/workers/remote-live.ts): the event log and outbox in its SQLite beside the index, so that a push's
 * event and deliveries are written with its commit; the repository's open event streams (`fetch`, whose
 * response is the stream), fed as commits publish and members change, re-checked against D1 at each ping;
 * and webhook delivery, run by its alarm.
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
  pull: (s: RepoStore, id: string, since?: string) => s.pull(id, since),
  commitFiles: (s: RepoStore, ...a: Parameters<RepoStore['commitFiles']>) => s.commitFiles(...a),
  readBlob: (s: RepoStore, id: string, oid: string) => s.readBlob(id, oid),
  bundle: (s: RepoStore, id: string) => s.bundle(id),
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

/** The storage key of the tombstone a deleted repository leaves (its value: when, in ms). */
const TOMBSTONE = 'kr:deleted';

/** A call's outcome as it crosses to the Worker: the value, or the error's HTTP form. */
export type RpcResult =
  | { ok: true; value: unknown }
  | { ok: false; status: number; error: string; extra?: Record<string, unknown>; headers?: Record<string, string> };

/** The request header that carries an event stream's parameters from the Worker (RemoteLive.stream). */
export const STREAM_PARAMS_HEADER = 'x-kr-stream';

/** What the Worker asks for when it opens an event stream. */
export interface StreamParams {
  repo: string;
  grant: StreamGrant;
  after: string | null;
}

/** The live-event methods `call` takes, by name (`live.<name>`): each takes the repository id first. */
const LIVE_METHODS = ['member', 'createWebhook', 'listWebhooks', 'deleteWebhook', 'testWebhook', 'deliveries'] as const satisfies ReadonlyArray<keyof Live>;
export type LiveMethod = (typeof LIVE_METHODS)[number];

const log = jsonLogger(
  (line) => console.log(line),
  (line) => console.error(line),
);

/** The Worker's configuration, read from the same bindings (the object shares the Worker's). */
function objectConfig(env: Record<string, unknown>): Config {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') vars[k] = v;
  try {
    return loadConfig(vars, '/').config;
  } catch {
    // A configuration the Worker refuses (it answers 503 and never calls here): the defaults, unused.
    return loadConfig({}, '/').config;
  }
}

export class RepoObject extends DurableObject {
  private store: RepoStore | null = null;
  /** The repository was deleted and not created again (the tombstone is in storage). */
  private deleted = false;
  private live: LocalLive | null = null;
  private deliverer: Deliverer | null = null;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.store = await this.open();
      this.deleted = (await ctx.storage.get(TOMBSTONE)) !== undefined;
      // Deliveries left pending by an earlier life of this object (evicted, restarted, crashed between a push
      // and its release) are looked at by an alarm now, if none is set already.
      if (await this.store.webhooks.anyPending()) await this.deliverSoon();
    });
  }

  /**
   * The repository store over this object's storage, its tables made where missing, with its live side: the
   * event hub of its streams and the webhook deliverer.
   */
  private async open(): Promise<RepoStore> {
    const db = new DoSqlDatabase(this.ctx.storage);
    // The index tables come from the same numbered migrations as everywhere (the rest of them stay empty).
    await migrate(db, BUNDLED_MIGRATIONS, Math.floor(Date.now() / 1000));
    const git = new GitStore({ fs: new DoFs(this.ctx.storage).storeFs(), root: REPO_ROOT, cacheBytes: 16 * 1024 * 1024 });
    const store = new RepoStore(git, new PathIndex(db), systemClock);
    const env = this.env as Record<string, unknown>;
    const config = objectConfig(env);
    // Accounts, tokens and membership are in D1: a stream's caller is re-checked there at each ping.
    const d1 = new D1Database((env as { DB: D1Like }).DB);
    const clock = systemClock;
    const access = { config, clock, users: new Users(d1, clock), pats: new Pats(d1, clock), members: new Members(d1, clock) };
    const hub = new Hub({
      log: store.events,
      logger: log,
      exclusive: (id, fn) => store.exclusive(id, fn, 'event stream'),
      recheck: (repoId, grant) => accessLost(access, repoId, grant),
      pingMs: config.eventsPingMs,
    });
    this.deliverer = new Deliverer({
      store: store.webhooks,
      send: fetchSender({ allowHttp: config.webhookAllowHttp, allowPrivate: config.webhookAllowPrivate }),
      clock,
      logger: log,
      releaseHeld: (id) => store.releaseHeld(id),
      retryMs: config.webhookRetryMs,
    });
    this.live = new LocalLive(store, hub, () => void this.deliverSoon(), log);
    return store;
  }

  /**
   * Deletes the repository: once no push or index work is in flight (the store's lock), the object's whole
   * storage goes (events, webhooks and pending deliveries with it), its streams end, the tombstone is written,
   * and a fresh store starts over the empty storage. Calls that waited behind the lock with the old store find
   * no repository (404).
   */
  private async destroy(id: string): Promise<void> {
    const old = this.store!;
    await old.whileQuiet(id, async () => {
      // The old store forgets the repository, so that its waiters see it gone.
      if (await old.git.exists(id)) await old.git.retire(id);
      this.live?.hub.endRepo(id, REPO_DELETED);
      this.live?.hub.close();
      await this.ctx.storage.deleteAlarm();
      await this.ctx.storage.deleteAll();
      await this.ctx.storage.put(TOMBSTONE, Date.now());
      this.deleted = true;
      this.store = await this.open();
    });
  }

  /** An alarm now, unless one is due sooner: deliveries were queued. */
  private async deliverSoon(): Promise<void> {
    const now = Date.now();
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > now) await this.ctx.storage.setAlarm(now);
  }

  /** Webhook deliveries: everything due now, then an alarm for the next one. */
  override async alarm(): Promise<void> {
    if (!this.deliverer) return;
    const next = await this.deliverer.run();
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  /** Opens an event stream of the repository (the Worker has authenticated and authorised the caller). */
  override async fetch(request: Request): Promise<Response> {
    const header = request.headers.get(STREAM_PARAMS_HEADER);
    if (!header || !this.live || !this.store) return Response.json({ error: 'not found' }, { status: 404 });
    const params = JSON.parse(header) as StreamParams;
    if (this.deleted) return Response.json({ error: 'repo not found' }, { status: 404 });
    try {
      await this.store.create(params.repo);
      const body = await this.live.stream(params.repo, params.grant, params.after);
      return new Response(body, { headers: { 'Content-Type': 'text/event-stream' } });
    } catch (e) {
      const http = toHttpError(e);
      if (!http) throw e;
      return Response.json(http.body(), { status: http.status, headers: http.headers });
    }
  }

  async call(method: string, args: unknown[]): Promise<RpcResult> {
    const live = this.live;
    const liveName = method.startsWith('live.') ? method.slice(5) : null;
    const fn =
      liveName !== null
        ? (LIVE_METHODS as readonly string[]).includes(liveName) && live
          ? (_: RepoStore, ...a: unknown[]) => (live[liveName as LiveMethod] as (...x: unknown[]) => Promise<unknown>).apply(live, a)
          : null
        : Object.hasOwn(METHODS, method)
          ? (METHODS[method as keyof typeof METHODS] as (s: RepoStore, ...a: unknown[]) => Promise<unknown>)
          : null;
    if ((!fn && method !== 'destroy') || !this.store) return { ok: false, status: 500, error: `no such repository method: ${method}` };
    try {
      const id = String(args[0]);
      if (method === 'destroy') {
        await this.destroy(id);
        return { ok: true, value: null };
      }
      if (method === 'create' && this.deleted) {
        // D1 registered the id again: a new repository, in the storage destroy emptied.
        await this.ctx.storage.delete(TOMBSTONE);
        this.deleted = false;
      }
      if (this.deleted) return { ok: false, status: 404, error: 'repo not found' };
      // The repository is made on first use too: the registry row in D1 is what says it exists, and a
      // creation that died between writing that row and calling `create` here must not leave it unusable.
      if (method !== 'create') await this.store.create(id);
      return { ok: true, value: await fn!(this.store, ...args) };
    } catch (e) {
      const http = toHttpError(e);
      if (!http) throw e;
      return { ok: false, status: http.status, error: http.message, extra: http.extra, headers: http.headers };
    }
  }
}
