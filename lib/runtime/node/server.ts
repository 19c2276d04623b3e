import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server, ServerResponse } from 'node:http';
import { serve } from '@hono/node-server';
import type { Clock } from '../../util/clock.ts';
import { systemClock } from '../../util/clock.ts';
import { cacheBudget, type Config } from '../../framework/config.ts';
import type { Deps } from '../../framework/deps.ts';
import type { LibsqlDatabase } from './libsql.ts';
import type { Logger } from '../../framework/log.ts';
import { openDatabaseFile } from './open-db.ts';
import { GitStore, LOCK_WAIT_MS } from '../../git/store.ts';
import { nodeImportRuntime } from './import-spool.ts';
import { nodeStoreFs } from './store-fs.ts';
import { PathIndex } from '../../repo/path-index.ts';
import { RepoStore } from '../../repo/repo-store.ts';
import { dropSharedRows, IndexFiles } from './search-files.ts';
import { Members } from '../../db/members.ts';
import { Users } from '../../db/users.ts';
import { Pats } from '../../db/pats.ts';
import { remoteIdpKeys } from '../../auth/idp.ts';
import { Activity } from '../../db/activity.ts';
import { Invites } from '../../db/invites.ts';
import type { QuotaPolicy } from '../../usecases/quota.ts';
import { quotaFor } from '../../hosted/quota.ts';
import { ParseCache } from '../../usecases/diff.ts';
import { buildApp, type InflightRequest } from '../../framework/app.ts';
import { nodeClientIp } from './client-ip.ts';
import { nodeBodySource } from './body.ts';
import { memoryLimiters } from '../../framework/http/rate-limit.ts';
import type { RouteDef } from '../../framework/route.ts';
import { Hub } from '../../events/hub.ts';
import { LocalLive } from '../../events/live.ts';
import { accessLost, credentialsLost } from '../../events/access.ts';
import { Deliverer, DeliveryLoop } from '../../events/deliver.ts';
import { nodeResolveHost, nodeWebhookSender } from './webhook-sender.ts';
import { ExportThreads } from './export-threads.ts';

/** Exports made at once at most, each on a worker thread of its own; more wait for one (export-threads.ts). */
export const EXPORT_THREADS = 2;
/**
 * The git store cache of an export's thread (at most; SERVICE_CACHE_MB's share for the git store when
 * smaller): an export reads each object once, so what it keeps is the packs' index pages (an eighth of it).
 */
export const EXPORT_CACHE_BYTES = 16 * 1024 * 1024;
import { diskClientFiles } from './client-files.ts';

/** The Node build's dependencies, with their concrete stores (the watchdog and tests look inside them). */
export type NodeDeps = Deps & {
  db: LibsqlDatabase;
  repos: RepoStore;
  live: LocalLive;
  /** Webhook deliveries in this process: started by startServer, stopped before the database closes. */
  deliveries: DeliveryLoop;
  /** The export threads: stopped when the server closes. */
  exports: ExportThreads;
};

/**
 * The Node runtime: data root on disk, libSQL file `service.db` in it, bare repositories under
 * `repos/`. Used by server.ts and by the end-to-end tests.
 */
export async function openNodeDeps(
  config: Config,
  opts: { clock?: Clock; log: Logger; quota?: QuotaPolicy; lockWaitMs?: number; clientDir?: string },
): Promise<NodeDeps> {
  const clock = opts.clock ?? systemClock;
  await mkdir(config.dataRoot, { recursive: true });
  await mkdir(join(config.dataRoot, 'repos'), { recursive: true });
  const db = await openDatabaseFile(join(config.dataRoot, 'service.db'), Math.floor(clock.now() / 1000));
  // One memory budget for every cache (SERVICE_CACHE_MB), split by cacheBudget (lib/framework/config.ts).
  const budget = cacheBudget(config.cacheBytes);
  const git = new GitStore({
    fs: nodeStoreFs(),
    root: join(config.dataRoot, 'repos'),
    lockWaitMs: opts.lockWaitMs,
    cacheBytes: budget.gitStore,
  });
  // Nothing else writes these repositories: leftovers of a crash are safe to clear. Each repository's are
  // cleared before its first write and by a background pass, so that a boot does not grow with their number.
  await git.recoverLater();
  const startedSweep = performance.now();
  void git.sweepRecovery().then((repos) => opts.log.info('recovered', { repos, ms: Math.round(performance.now() - startedSweep) }));
  // Each repository's full-text rows in a file of its own, searched on worker threads (lib/runtime/node/search-files.ts).
  await mkdir(join(config.dataRoot, 'search'), { recursive: true });
  await dropSharedRows(db);
  const repos = new RepoStore(git, new PathIndex(db, { text: new IndexFiles(join(config.dataRoot, 'search')) }), clock, {
    maxPendingDeliveries: config.webhookMaxPending,
    imports: nodeImportRuntime(join(config.dataRoot, 'repos')),
  });
  // Exports are made on worker threads, each with a git store of its own over the same files.
  const exports = new ExportThreads({ root: git.root, cacheBytes: Math.min(budget.gitStore, EXPORT_CACHE_BYTES), threads: EXPORT_THREADS });
  repos.bundler = (id, o) => exports.bundle(id, o);
  // A repository deletion that a crash cut short is finished (rows and directory) before serving.
  await repos.finishRemovals();
  const members = new Members(db, clock);
  const users = new Users(db, clock);
  const pats = new Pats(db, clock);
  // Live events: the streams this process holds, fed as pushes publish and members change, their callers
  // re-checked at each ping; webhook deliveries from the outbox in the same database.
  const hub = new Hub({
    log: repos.events,
    logger: opts.log,
    exclusive: (id, fn) => repos.exclusive(id, fn, 'event stream'),
    recheck: (repoId, grant) => accessLost({ config, clock, users, pats, members }, repoId, grant),
    sweep: (userIds, patIds) => credentialsLost({ users, pats }, userIds, patIds),
    maxStreams: config.eventsMaxStreams,
    pingMs: config.eventsPingMs,
  });
  const policy = { allowHttp: config.webhookAllowHttp, allowPrivate: config.webhookAllowPrivate };
  const deliverer = new Deliverer({
    store: repos.webhooks,
    send: nodeWebhookSender(policy, config.webhookTimeoutMs),
    clock,
    logger: opts.log,
    releaseHeld: (id) => repos.releaseHeld(id),
    retryMs: config.webhookRetryMs,
  });
  const deliveries = new DeliveryLoop(deliverer, clock);
  return {
    config,
    clock,
    db,
    repos,
    log: opts.log,
    members,
    users,
    pats,
    idpKeys: remoteIdpKeys(new URL(config.idpJwksUrl), { clock }),
    activity: new Activity(db, clock),
    invites: new Invites(db, clock),
    // Plan caps when SERVICE_HOSTED=1, none otherwise: a self-hosted server has no caps (docs/concepts.md "The hosted build").
    quota: opts.quota ?? quotaFor(config),
    parsedPages: new ParseCache(budget.parsedPages, budget.outlines, budget.blames),
    live: new LocalLive(repos, hub, () => deliveries.kick(), opts.log),
    deliveries,
    exports,
    resolveHost: nodeResolveHost,
    // The client package the bundle step wrote (dist/client/ of this installation, unless told otherwise).
    clientFiles: diskClientFiles(opts.clientDir),
  };
}

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
}

/** A request in flight longer than this is reported (once) as a `slow_request` warning. */
const SLOW_REQUEST_MS = 30_000;

/**
 * Node's own limits on receiving a request (checked every 30 s, so they bite up to 30 s late): its headers
 * within 30 s (Node: 60 s), the whole of it within 120 s (Node: 300 s). The body guard (lib/framework/http/body-limit.ts)
 * cuts a body that goes silent for 30 s; this bounds one that trickles in a byte at a time while holding its
 * share of the in-flight ceiling. 120 s is an 8 MiB push at about 0.6 Mbit/s.
 */
export const HEADERS_TIMEOUT_MS = 30_000;
export const REQUEST_TIMEOUT_MS = 120_000;
/** A repository lock held longer than this is reported (once) as a `lock_held` warning. */
const LOCK_HELD_MS = 10_000;

export interface WatchOptions {
  /** How often the watchdog looks (ms). */
  slowCheckMs?: number;
  /** `lock_held` warning past this (ms). */
  lockHeldMs?: number;
  /**
   * `lock_held` error (`stuck: true`) past this (ms): from then on writers are turned away with 503. Match
   * the git store's lock wait (LOCK_WAIT_MS by default).
   */
  lockStuckMs?: number;
}

/**
 * Repository locks held too long (the write lock, and the creation lock every push also takes): a
 * `lock_held` warning once past `lockHeldMs`, an error once past `lockStuckMs`, each with the repository,
 * which lock, the holder (`id`: its request id), the step it is at, how long it has held the lock and
 * been at that step, how many wait behind it, and the database's write queue.
 */
function lockWatch(deps: NodeDeps, heldMs: number, stuckMs: number): () => void {
  const reported = new Map<string, number>();
  return () => {
    const seen = new Set<string>();
    const held = [
      ...deps.repos.git.locks().map((l) => ({ ...l, lock: 'write' })),
      ...deps.repos.creationLocks().map((l) => ({ ...l, lock: 'creation' })),
    ];
    for (const l of held) {
      const key = `${l.lock}\u0000${l.key}\u0000${l.owner}\u0000${l.since}`;
      seen.add(key);
      const level = l.heldMs >= stuckMs ? 2 : l.heldMs >= heldMs ? 1 : 0;
      if (level <= (reported.get(key) ?? 0)) continue;
      reported.set(key, level);
      const q = deps.db.writeQueue();
      const fields = {
        repo: l.key,
        lock: l.lock,
        id: l.owner,
        step: l.step,
        ms: Math.round(l.heldMs),
        step_ms: Math.round(l.stepMs),
        waiting: l.waiting,
        db_writes_queued: q.queued,
        db_write_running_ms: q.runningMs === null ? null : Math.round(q.runningMs),
      };
      if (level === 2) deps.log.error('lock_held', { ...fields, stuck: true });
      else deps.log.warn('lock_held', fields);
    }
    for (const key of reported.keys()) if (!seen.has(key)) reported.delete(key);
  };
}

export async function startServer(deps: NodeDeps, routes: RouteDef[], opts: WatchOptions = {}): Promise<RunningServer> {
  const inflight = new Map<string, InflightRequest>();
  const app = buildApp(deps, {
    routes,
    inflight,
    clientIp: nodeClientIp(deps.config.trustedProxies),
    limiters: memoryLimiters(deps.clock),
    bodySource: nodeBodySource,
    connectionCutter: (c) => {
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      return outgoing ? () => outgoing.destroy() : undefined;
    },
  });
  const reported = new Set<string>();
  const locks = lockWatch(deps, opts.lockHeldMs ?? LOCK_HELD_MS, opts.lockStuckMs ?? LOCK_WAIT_MS);
  const watch = setInterval(() => {
    const now = deps.clock.now();
    for (const [id, r] of inflight) {
      if (now - r.started < SLOW_REQUEST_MS || reported.has(id)) continue;
      reported.add(id);
      deps.log.warn('slow_request', { id, method: r.method, path: r.path, ms: now - r.started });
    }
    for (const id of reported) if (!inflight.has(id)) reported.delete(id);
    locks();
  }, opts.slowCheckMs ?? 5_000);
  watch.unref();
  // Deliveries left pending by the last run (a restart, a crash) go out now.
  deps.deliveries.kick();
  const { config } = deps;
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: config.listenPort,
        hostname: config.listenHost,
        serverOptions: { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
      },
      () => resolve(s as Server),
    ) as Server;
    s.once('error', reject);
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address === '::' ? '::1' : addr.address}]` : addr.address === '0.0.0.0' ? '127.0.0.1' : addr.address;
  let closing: Promise<void> | null = null;
  return {
    server,
    port: addr.port,
    url: `http://${host}:${addr.port}`,
    close() {
      closing ??= (async () => {
        clearInterval(watch);
        // Open event streams end (a client that is behind has its connection cut), so none holds the close.
        deps.live.hub.close();
        await new Promise<void>((resolve) => {
          // Idle keep-alive sockets would hold close() open; busy ones finish their request first and
          // are closed as soon as they fall idle.
          const sweep = setInterval(() => server.closeIdleConnections(), 25);
          server.close(() => {
            clearInterval(sweep);
            resolve();
          });
          server.closeIdleConnections();
        });
        // The last pushes' full-text rows are made, and a pack merge they queued finishes (work cut short is
        // safe: the next start's sync makes the rows, a merge cut short leaves files behind).
        await deps.repos.searchSettled();
        await deps.repos.git.packMerges();
        // A delivery under way finishes and is recorded; the rest stay pending for the next start.
        await deps.deliveries.stop();
        await deps.exports.close();
        await deps.repos.index.close();
        await deps.db.close();
      })();
      return closing;
    },
  };
}
