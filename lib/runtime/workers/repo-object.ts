import { DurableObject, type DurableObjectState } from 'cloudflare:workers';
import { systemClock } from '../../util/clock.ts';
import { DoSqlDatabase } from './do-sql.ts';
import { migrate } from '../../db/migrate.ts';
import { BUNDLED_MIGRATIONS } from './migrations.ts';
import { errorToWire, LockTimeoutError, RepoBusyError, RepoNotFoundError, type WireError, refuse } from '../../core/errors.ts';
import { R } from '../../core/refusals.ts';
import { DoFs } from './store-fs.ts';
import { doImportRuntime } from './import-spool.ts';
import type { ImportCheckOptions } from '../../repo/import-store.ts';
import { PathIndex, type HeadEntry } from '../../repo/path-index.ts';
import { RepoStore, type PushFile } from '../../repo/repo-store.ts';
import { GitStore } from '../../git/store.ts';
import type { FetchRequest } from '../../git/upload-request.ts';
import type { SearchOptions } from '../../search/results.ts';
import { sharedTextStore } from '../../search/fts.ts';
import { loadConfig, type Config } from '../../framework/config.ts';
import { jsonLogger } from '../../framework/log.ts';
import { D1Database, type D1Like } from './d1.ts';
import { Members } from '../../db/members.ts';
import { Pats } from '../../db/pats.ts';
import { Users } from '../../db/users.ts';
import { Hub } from '../../events/hub.ts';
import { LocalLive, REPO_DELETED } from '../../events/live.ts';
import { accessLost, credentialsLost } from '../../events/access.ts';
import type { GrantMatch } from '../../events/hub.ts';
import { durableSlots, type StreamSlotsNamespace } from './stream-slots.ts';
import { Deliverer } from '../../events/deliver.ts';
import { fetchSender } from './webhook-sender.ts';
import { MAX_WEBHOOKS } from '../../../schema/wire/webhooks.ts';
import type { EventKind, MemberEventData } from '../../../schema/wire/events.ts';
import { logStreamEnd } from '../../framework/http/stream.ts';
import { sealBody } from './sealed-body.ts';
import {
  BODY_ERROR_HEADER,
  BODY_PARAMS_HEADER,
  PAGES_HEADER,
  SENDS_HEADER,
  STREAM_PARAMS_HEADER,
  type BodyParams,
  type Outcome,
  type RepoObjectRpc,
  type StreamParams,
} from './rpc.ts';

/**
 * The hosted build's repository: one Durable Object per repository id holds that repository's git
 * objects and refs (lib/runtime/workers/store-fs.ts, in the object's own SQLite storage) and its derived index, and runs
 * the same RepoStore as the Node build over them — the same object format, one commit per push, the
 * check-and-set of the branch and the index kept level with git. The object's single-threaded execution
 * serialises its writes, as the per-repository lock does on Node (and that lock still runs inside).
 *
 * The Worker calls its public methods directly on its stub, by native RPC (lib/runtime/workers/rpc.ts,
 * remote-repos.ts): the methods of Repo, RepoIndex (as `index…`) and Live, with the same names and arguments
 * but no repository id: the object holds one repository, the one its name (`ctx.id.name`) is the id of.
 * Each answers an Outcome: the value, or a named error by its code (lib/core/errors.ts), which the Worker rebuilds as
 * the same class; any other error is thrown, and the Worker answers 500. A pull's and an export's bodies, and
 * event streams, are answers to its `fetch` (a response body is cancelled here when the Worker's client goes
 * away; a stream returned by an RPC method is not), their refusals the error's wire form.
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

/** How long a deletion waits for the pulls' and exports' bodies being streamed (then 503, nothing deleted). */
export const BODY_WAIT_MS = 60_000;

/** The storage key of the tombstone a deleted repository leaves (its value: when, in ms). */
const TOMBSTONE = 'kr:deleted';

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

export class RepoObject extends DurableObject implements RepoObjectRpc {
  /** The repository this object holds: its name (idFromName of the repository id). */
  readonly #id: string;
  #store: RepoStore | null = null;
  /** The repository was deleted and not created again (the tombstone is in storage). */
  #deleted = false;
  /** The repository is known to be made in this storage (made, or found, once in this object's life). */
  #made = false;
  #live: LocalLive | null = null;
  #deliverer: Deliverer | null = null;
  /** The pulls' and exports' bodies being streamed now, each settled when its stream ends (`destroy` waits for them). */
  readonly #bodies = new Set<Promise<void>>();
  /** A deletion under way: bodies asked for meanwhile wait for it (and then find no repository). */
  #deletion: Promise<unknown> | null = null;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    const name = (ctx.id as { name?: string }).name;
    // Reached only by name (RemoteRepos, RemoteLive): an object without one is no repository's.
    if (name === undefined) throw new Error('a repository object is reached by its name (idFromName)');
    this.#id = name;
    void ctx.blockConcurrencyWhile(async () => {
      this.#store = await this.#open();
      this.#deleted = (await ctx.storage.get(TOMBSTONE)) !== undefined;
      // Deliveries left pending by an earlier life of this object (evicted, restarted, crashed between a push
      // and its release) are looked at by an alarm now, if none is set already.
      if (await this.#store.webhooks.anyPending()) await this.#deliverSoon();
    });
  }

  /**
   * The repository store over this object's storage, its tables made where missing, with its live side: the
   * event hub of its streams and the webhook deliverer.
   */
  async #open(): Promise<RepoStore> {
    const db = new DoSqlDatabase(this.ctx.storage);
    // The index tables come from the same numbered migrations as everywhere (the rest of them stay empty).
    await migrate(db, BUNDLED_MIGRATIONS, Math.floor(Date.now() / 1000));
    const git = new GitStore({ fs: new DoFs(this.ctx.storage).storeFs(), root: REPO_ROOT, cacheBytes: 16 * 1024 * 1024 });
    // An object holds one repository (idFromName of its id): its full-text rows need no filter by repository.
    const env = this.env as Record<string, unknown>;
    const config = objectConfig(env);
    const store = new RepoStore(git, new PathIndex(db, { text: sharedTextStore(db, { oneRepository: true }) }), systemClock, {
      maxPendingDeliveries: config.webhookMaxPending,
      imports: doImportRuntime(this.ctx.storage),
    });
    // Accounts, tokens and membership are in D1: a stream's caller is re-checked there at each ping.
    const d1 = new D1Database((env as { DB: D1Like }).DB);
    const clock = systemClock;
    const access = { config, clock, users: new Users(d1, clock), pats: new Pats(d1, clock), members: new Members(d1, clock) };
    const hub = new Hub({
      log: store.events,
      logger: log,
      exclusive: (id, fn) => store.exclusive(id, fn, 'event stream'),
      recheck: (repoId, grant) => accessLost(access, repoId, grant),
      // Disabled users and revoked PATs are looked for in D1 every second (the admin command tells no one).
      sweep: (userIds, patIds) => credentialsLost(access, userIds, patIds),
      // The cap per identity across repositories is kept by the identity's own object (stream-slots.ts).
      slots: env.STREAM_SLOTS ? durableSlots(env.STREAM_SLOTS as StreamSlotsNamespace) : undefined,
      maxStreams: config.eventsMaxStreams,
      pingMs: config.eventsPingMs,
      // workerd tells the object that a client went away only when it writes to the stream.
      probe: true,
    });
    this.#deliverer = new Deliverer({
      store: store.webhooks,
      send: fetchSender({ allowHttp: config.webhookAllowHttp, allowPrivate: config.webhookAllowPrivate }, config.webhookTimeoutMs),
      clock,
      logger: log,
      releaseHeld: (id) => store.releaseHeld(id),
      retryMs: config.webhookRetryMs,
      // Every webhook of the repository may have its attempt under way: one that never answers delays none
      // of the others.
      slots: MAX_WEBHOOKS,
    });
    const deliverer = this.#deliverer;
    // Queued deliveries start at once (an alarm running for a slow receiver would not look before that
    // attempt ends); the alarm, set too, outlives an eviction and waits for the attempts under way.
    this.#live = new LocalLive(store, hub, () => (void deliverer.pump(), void this.#deliverSoon()), log);
    return store;
  }

  /** An alarm now, unless one is due sooner: deliveries were queued. */
  async #deliverSoon(): Promise<void> {
    const now = Date.now();
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > now) await this.ctx.storage.setAlarm(now);
  }

  /**
   * Runs `fn` on the object's repository, answering its outcome: the value, or a named error by its code; any other error
   * is thrown. A deleted repository is not found; any other is made on first use (the registry row in D1 is what
   * says it exists, and a creation that died between writing that row and calling `create` must not leave it
   * unusable): once per life of the object, the first call making sure of it.
   */
  async #serve<T>(fn: (store: RepoStore, live: LocalLive) => Promise<T>): Promise<Outcome<T>> {
    try {
      if (this.#deleted) throw new RepoNotFoundError(this.#id);
      if (!this.#made) {
        await this.#store!.create(this.#id);
        this.#made = true;
      }
      return { ok: true, value: await fn(this.#store!, this.#live!) };
    } catch (e) {
      return failed(e);
    }
  }

  async create(creator?: string): Promise<Outcome<boolean>> {
    try {
      if (this.#deleted) {
        // D1 registered the id again: a new repository, in the storage destroy emptied.
        await this.ctx.storage.delete(TOMBSTONE);
        this.#deleted = false;
      }
      const created = await this.#store!.create(this.#id, creator);
      this.#made = true;
      return { ok: true, value: created };
    } catch (e) {
      return failed(e);
    }
  }

  /**
   * Deletes the repository: once no pull's or export's body is being streamed (`#destroy`) and no push or
   * index work is in flight (the store's lock), the object's whole storage goes (events, webhooks and pending
   * deliveries with it), its streams end, the tombstone is written, and a fresh store starts over the empty
   * storage. Calls that waited behind the lock with the old store find no repository (404).
   */
  async destroy(): Promise<Outcome<null>> {
    const deletion = this.#destroy(this.#id);
    this.#deletion = deletion;
    try {
      return await deletion;
    } finally {
      if (this.#deletion === deletion) this.#deletion = null;
    }
  }

  /**
   * destroy, once the bodies being streamed have ended: workerd ends a response whose stream fails as if it
   * were whole (its chunked terminator sent), so a deletion under an export or a full pull would hand the
   * client a clean 200 cut short. It waits for them at most BODY_WAIT_MS (a reader that stalls), then gives up
   * with RepoBusyError (503 `repository busy, retry`), the repository untouched.
   */
  async #destroy(id: string): Promise<Outcome<null>> {
    const old = this.#store!;
    try {
      if (this.#bodies.size > 0) {
        const started = Date.now();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), BODY_WAIT_MS)));
        const ended = await Promise.race([Promise.all([...this.#bodies]).then(() => true), timeout]);
        clearTimeout(timer);
        if (!ended) {
          throw new RepoBusyError(new LockTimeoutError(id, Date.now() - started, { owner: 'export or pull', step: 'streaming', heldMs: Date.now() - started }));
        }
      }
      await old.whileQuiet(id, async () => {
        // The old store forgets the repository, so that its waiters see it gone.
        if (await old.git.exists(id)) await old.git.retire(id);
        this.#live?.hub.endRepo(id, REPO_DELETED);
        this.#live?.hub.close();
        // Attempts under way record nothing (their rows are going); the new store gets a deliverer of its own.
        void this.#deliverer?.halt();
        await this.ctx.storage.deleteAlarm();
        await this.ctx.storage.deleteAll();
        await this.ctx.storage.put(TOMBSTONE, Date.now());
        this.#deleted = true;
        this.#made = false;
        this.#store = await this.#open();
      });
      return { ok: true, value: null };
    } catch (e) {
      return failed(e);
    }
  }

  // Repo, by the same names and arguments (the repository is the object's own: its name).
  ready() {
    return this.#serve((s) => s.ready(this.#id));
  }
  head() {
    return this.#serve((s) => s.head(this.#id));
  }
  resolve(sha: string) {
    return this.#serve((s) => s.resolve(this.#id, sha));
  }
  page(path: string) {
    return this.#serve((s) => s.page(this.#id, path));
  }
  fileAt(sha: string, path: string) {
    return this.#serve((s) => s.fileAt(this.#id, sha, path));
  }
  pages(): Promise<Outcome<HeadEntry[]>> {
    return this.#serve((s) => s.pages(this.#id));
  }
  history(path: string, limit: number, beforeSeq?: number) {
    return this.#serve((s) => s.history(this.#id, path, limit, beforeSeq));
  }
  timeline(limit: number) {
    return this.#serve((s) => s.timeline(this.#id, limit));
  }
  summary() {
    return this.#serve((s) => s.summary(this.#id));
  }
  search(q: string, opts: SearchOptions) {
    return this.#serve((s) => s.search(this.#id, q, opts));
  }
  links(path: string) {
    return this.#serve((s) => s.links(this.#id, path));
  }
  commitFiles(files: PushFile[], author: { name: string; email: string }, message: string, opts?: { owner?: string }) {
    return this.#serve((s) => s.commitFiles(this.#id, files, author, message, opts));
  }
  readBlob(oid: string) {
    return this.#serve((s) => s.readBlob(this.#id, oid));
  }

  // An import's spool lives here before the repository exists (its body is checked whole first), so these
  // neither make the repository nor mind a tombstone; `importFinish` is an ordinary call on the repository
  // the Worker has registered by then.
  async #spooling<T>(fn: (store: RepoStore) => Promise<T>): Promise<Outcome<T>> {
    try {
      return { ok: true, value: await fn(this.#store!) };
    } catch (e) {
      return failed(e);
    }
  }
  importBegin() {
    return this.#spooling((s) => s.importBegin(this.#id));
  }
  importAppend(token: string, chunk: Uint8Array) {
    return this.#spooling((s) => s.importAppend(this.#id, token, chunk));
  }
  importCheck(token: string, opts: ImportCheckOptions) {
    return this.#spooling((s) => s.importCheck(this.#id, token, opts));
  }
  importFinish(token: string) {
    return this.#serve((s) => s.importFinish(this.#id, token));
  }
  importDiscard(token: string) {
    return this.#spooling((s) => s.importDiscard(this.#id, token));
  }

  // RepoIndex, as `index` + its name; the index first catches up with git.
  indexResolve(value: string) {
    return this.#serve(async (s) => (await s.ready(this.#id), s.index.resolve(this.#id, value)));
  }
  indexHistory(path: string, limit: number, beforeSeq?: number) {
    return this.#serve(async (s) => (await s.ready(this.#id), s.index.history(this.#id, path, limit, beforeSeq)));
  }
  indexTouches(path: string, limit: number, beforeSeq?: number) {
    return this.#serve(async (s) => (await s.ready(this.#id), s.index.touches(this.#id, path, limit, beforeSeq)));
  }
  indexLastTouch(path: string, atSeq: number) {
    return this.#serve(async (s) => (await s.ready(this.#id), s.index.lastTouch(this.#id, path, atSeq)));
  }

  // Live, by the same names and arguments.
  member(data: MemberEventData) {
    return this.#serve((_, live) => live.member(this.#id, data));
  }
  createWebhook(url: string, events: EventKind[]) {
    return this.#serve((_, live) => live.createWebhook(this.#id, url, events));
  }
  listWebhooks() {
    return this.#serve((_, live) => live.listWebhooks(this.#id));
  }
  deleteWebhook(webhookId: string) {
    return this.#serve((_, live) => live.deleteWebhook(this.#id, webhookId));
  }
  testWebhook(webhookId: string) {
    return this.#serve((_, live) => live.testWebhook(this.#id, webhookId));
  }
  deliveries(webhookId: string, limit: number) {
    return this.#serve((_, live) => live.deliveries(this.#id, webhookId, limit));
  }
  /** Ends the streams of a disabled user or of revoked PATs (RemoteLive.endStreams asks each repository). */
  async endStreams(match: GrantMatch, reason: string): Promise<Outcome<null>> {
    this.#live?.hub.endGrants(match, reason);
    return { ok: true, value: null };
  }

  /** Webhook deliveries: everything due now, until no attempt is under way, then an alarm for the next one. */
  override async alarm(): Promise<void> {
    if (!this.#deliverer) return;
    const next = await this.#deliverer.drain();
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  /**
   * Opens an event stream of the repository (the Worker has authenticated and authorised the caller): its
   * response is the stream, or a refusal whose body is the named error's wire form (RemoteLive.stream). Or
   * serves a pull's or an export's body (BODY_PARAMS_HEADER: `#body`).
   */
  override async fetch(request: Request): Promise<Response> {
    const wanted = request.headers.get(BODY_PARAMS_HEADER);
    if (wanted) return this.#body(JSON.parse(wanted) as BodyParams, request);
    const header = request.headers.get(STREAM_PARAMS_HEADER);
    if (!header) return refusal(errorToWire(refuse(R.not_found))!);
    const params = JSON.parse(header) as StreamParams;
    const r = await this.#serve((_, live) => live.stream(this.#id, params.grant, params.after));
    if (!r.ok) return refusal(r.error);
    return new Response(r.value, { headers: { 'Content-Type': 'text/event-stream' } });
  }

  /**
   * A pull's or an export's body as the response to the Worker's `fetch`: 200 with the stream (a pull's
   * PAGES_HEADER says whether it holds any page), 204 for an export of a repository with no commit, or the
   * error's wire form (BODY_ERROR_HEADER set). The pages are read only as fast as the client takes them;
   * `requestId` names the Worker's request in this object's log lines about the stream. A body is sealed
   * (sealed-body.ts): its stream failing here (the repository deleted meanwhile) does not reach the Worker as
   * an error, its missing end mark does.
   */
  async #body(p: BodyParams, request: Request): Promise<Response> {
    // Asked for while a deletion runs: after it (then the repository is gone, unless the deletion gave up).
    while (this.#deletion) await this.#deletion.catch(() => undefined);
    let ended!: () => void;
    const streaming = new Promise<void>((resolve) => (ended = resolve));
    this.#bodies.add(streaming);
    void streaming.then(() => this.#bodies.delete(streaming));
    let body: ReadableStream<Uint8Array> | null = null;
    try {
      const onEnd = logStreamEnd(log, { id: p.requestId, repo: this.#id, what: p.method });
      if (p.method === 'upload-pack') {
        const req = (await request.json()) as FetchRequest;
        const r = await this.#serve((s) => s.uploadPack(this.#id, req, { onEnd }));
        if (!r.ok) return Response.json(r.error, { headers: { [BODY_ERROR_HEADER]: '1' } });
        body = sealBody(r.value.body, ended);
        return new Response(body, { headers: { [SENDS_HEADER]: r.value.sends ? '1' : '0' } });
      }
      if (p.method === 'pull') {
        const r = await this.#serve((s) => s.pullBody(this.#id, p.since, { onEnd }));
        if (!r.ok) return Response.json(r.error, { headers: { [BODY_ERROR_HEADER]: '1' } });
        body = sealBody(r.value.body, ended);
        return new Response(body, { headers: { [PAGES_HEADER]: r.value.pages ? '1' : '0' } });
      }
      const r = await this.#serve((s) => s.exportBody(this.#id, { onEnd }));
      if (!r.ok) return Response.json(r.error, { headers: { [BODY_ERROR_HEADER]: '1' } });
      if (!r.value) return new Response(null, { status: 204 });
      body = sealBody(r.value, ended);
      return new Response(body);
    } finally {
      // Nothing streams (a refusal, a 204, a failure): nothing for a deletion to wait for.
      if (!body) ended();
    }
  }
}

/** The outcome of a failed call
: a named error by its code; any other error is thrown on. */
function failed(e: unknown): Outcome<never> {
  const error = errorToWire(e);
  if (!error) throw e;
  return { ok: false, error };
}

/** A refused stream: the error's wire form as the body (its status says only that it was refused). */
const refusal = (error: WireError) => Response.json(error, { status: 400 });
