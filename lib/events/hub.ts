import type { Logger } from '../log.ts';
import { HttpError } from '../errors.ts';
import type { EventLog, StoredEvent } from './log.ts';
import { EventStream, sseEvent, type StreamGrant } from './stream.ts';

/**
 * The open event streams of the repositories one process (Node) or one Durable Object (Workers) holds, and
 * what reaches them: the events of each commit once it is published and of each member change (`announce`,
 * called under the repository's lock, so events reach streams in id order and never before they count),
 * a ping every `pingMs` with a re-check of each stream's credential and membership, and the end of a
 * removed member's streams.
 *
 * Per repository the hub remembers the newest event id it has announced (`published`): a stream replays
 * from the log only up to it, so it never sees an event whose commit is not published yet, and goes live
 * once it has caught up.
 */

/** Open streams per identity per repository (API.md): the next one is refused with 429. */
export const MAX_STREAMS_PER_HOLDER = 10;
/** At most this often a ping (API.md: "at least every 15 s"). */
export const PING_MS = 15_000;
/** Events read from the log per announcement step. */
const ANNOUNCE_PAGE = 256;
/** Access re-checks of one ping run at once. */
const RECHECKS_IN_FLIGHT = 8;

export const TOO_MANY_STREAMS = 'too many event streams';
export const UNKNOWN_EVENT_ID = 'unknown event id';

export interface HubOptions {
  log: EventLog;
  logger: Logger;
  /** Runs `fn` under the repository's write lock, with its index level with git (RepoStore.exclusive). */
  exclusive<T>(repoId: string, fn: () => Promise<T>): Promise<T>;
  /** Why `grant` may no longer read the repository, or null while it may (lib/events/access.ts). */
  recheck(repoId: string, grant: StreamGrant): Promise<string | null>;
  pingMs?: number;
  /** Buffer of each stream (STREAM_BUFFER_BYTES by default). */
  bufferBytes?: number;
}

interface RepoStreams {
  /** Newest event id announced; -1 until read under the repository's lock. */
  published: number;
  /** Read under the lock once, by the first stream of the repository. */
  ready: Promise<void> | null;
  streams: Set<EventStream>;
  holders: Map<string, number>;
}

/** The id a client resumes after (`Last-Event-ID` or `?after=`): our ids are positive integers. */
function parseEventId(text: string | null): number | null {
  if (text === null) return null;
  const t = text.trim();
  if (!/^[1-9][0-9]{0,15}$/.test(t)) return 0;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : 0;
}

export class Hub {
  private readonly repos = new Map<string, RepoStreams>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private rechecking = false;
  private closed = false;
  readonly pingMs: number;

  constructor(private readonly opts: HubOptions) {
    this.pingMs = opts.pingMs ?? PING_MS;
  }

  /** Streams open now, in every repository. */
  get size(): number {
    let n = 0;
    for (const r of this.repos.values()) n += r.streams.size;
    return n;
  }

  /**
   * Opens a stream of the repository for `grant`, resuming after `after` (an event id, or null: from now).
   * 429 `too many event streams` past MAX_STREAMS_PER_HOLDER for the identity.
   */
  async open(repoId: string, grant: StreamGrant, after: string | null): Promise<ReadableStream<Uint8Array>> {
    if (this.closed) throw new HttpError(503, 'server stopping');
    const repo = this.repoState(repoId);
    const held = repo.holders.get(grant.holder) ?? 0;
    if (held >= MAX_STREAMS_PER_HOLDER) throw new HttpError(429, TOO_MANY_STREAMS);
    // The slot is taken before anything is awaited, so that racing opens cannot pass the cap together.
    repo.holders.set(grant.holder, held + 1);
    let stream: EventStream;
    try {
      await this.ready(repoId, repo);
      const wanted = parseEventId(after);
      const known = wanted !== null && wanted > 0 && wanted <= repo.published && (await this.opts.log.has(repoId, wanted));
      // Read now, after every await: from here to the stream joining the set nothing else runs.
      const from = known ? wanted : repo.published;
      stream = new EventStream(this.host(repoId, repo), grant, {
        cursor: from,
        live: !known,
        first: wanted !== null && !known ? sseEvent('reset', JSON.stringify({ reason: UNKNOWN_EVENT_ID })) : undefined,
        bufferBytes: this.opts.bufferBytes,
        dropAfterMs: Math.max(2 * this.pingMs, 1000),
      });
    } catch (e) {
      this.release(repoId, repo, grant.holder);
      throw e;
    }
    if (this.closed) {
      this.release(repoId, repo, grant.holder);
      throw new HttpError(503, 'server stopping');
    }
    repo.streams.add(stream);
    this.startPings();
    return stream.body;
  }

  /**
   * Sends the repository's events after the last announced one to its live streams. Called under the
   * repository's lock once the events count (after a push's commit is published, after a member event).
   */
  async announce(repoId: string): Promise<void> {
    const repo = this.repos.get(repoId);
    if (!repo || repo.published < 0) return;
    for (;;) {
      const events = await this.opts.log.page(repoId, repo.published, Number.MAX_SAFE_INTEGER, ANNOUNCE_PAGE);
      if (events.length === 0) return;
      this.fanOut(repo, events);
      if (events.length < ANNOUNCE_PAGE) return;
    }
  }

  /** Ends a user's streams of the repository with `event: revoked` (they were removed from it). */
  endUser(repoId: string, userId: string, reason: string): void {
    const repo = this.repos.get(repoId);
    if (!repo) return;
    for (const s of [...repo.streams]) if (s.grant.userId === userId) s.end('revoked', reason);
  }

  /** Ends every stream of the repository with `event: revoked` (the repository was deleted). */
  endRepo(repoId: string, reason: string): void {
    const repo = this.repos.get(repoId);
    if (!repo) return;
    for (const s of [...repo.streams]) s.end('revoked', reason);
  }

  /** Ends every stream (the server is stopping); no stream opens afterwards. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const repo of [...this.repos.values()]) for (const s of [...repo.streams]) s.close();
    this.repos.clear();
  }

  private fanOut(repo: RepoStreams, events: StoredEvent[]): void {
    // `published` moves with the offer, in one synchronous step: a replaying stream that reads the log up to
    // it never misses what live streams are offered.
    repo.published = events[events.length - 1]!.id;
    for (const s of repo.streams) if (s.live) s.offer(events);
  }

  private repoState(repoId: string): RepoStreams {
    let repo = this.repos.get(repoId);
    if (!repo) this.repos.set(repoId, (repo = { published: -1, ready: null, streams: new Set(), holders: new Map() }));
    return repo;
  }

  /** The repository's newest event id, read once under its lock (no commit is between index and branch then). */
  private ready(repoId: string, repo: RepoStreams): Promise<void> {
    if (repo.published >= 0) return Promise.resolve();
    repo.ready ??= this.opts
      .exclusive(repoId, async () => {
        const last = await this.opts.log.lastId(repoId);
        if (repo.published < 0) repo.published = last;
      })
      .catch((e: unknown) => {
        repo.ready = null;
        throw e;
      });
    return repo.ready;
  }

  private host(repoId: string, repo: RepoStreams) {
    return {
      published: () => repo.published,
      page: (after: number, upto: number, limit: number) => this.opts.log.page(repoId, after, upto, limit),
      left: (s: EventStream) => {
        if (repo.streams.delete(s)) this.release(repoId, repo, s.grant.holder);
      },
      failed: (e: unknown) => this.opts.logger.warn('event_stream', { repo: repoId, error: String(e) }),
    };
  }

  private release(repoId: string, repo: RepoStreams, holder: string): void {
    const n = (repo.holders.get(holder) ?? 1) - 1;
    if (n > 0) repo.holders.set(holder, n);
    else repo.holders.delete(holder);
    if (repo.streams.size === 0 && repo.holders.size === 0 && this.repos.get(repoId) === repo) this.repos.delete(repoId);
    if (this.repos.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private startPings(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setInterval(() => this.tick(), this.pingMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Pings every stream, then re-checks each (repository, token) once; a lost access ends its streams. */
  private tick(): void {
    const checks = new Map<string, { repoId: string; grant: StreamGrant; streams: EventStream[] }>();
    for (const [repoId, repo] of this.repos) {
      for (const s of repo.streams) {
        s.ping();
        if (s.grant.token === null) continue;
        const key = `${repoId}\u0000${s.grant.token}`;
        const c = checks.get(key);
        if (c) c.streams.push(s);
        else checks.set(key, { repoId, grant: s.grant, streams: [s] });
      }
    }
    if (this.rechecking || checks.size === 0) return;
    this.rechecking = true;
    void this.recheckAll([...checks.values()]).finally(() => {
      this.rechecking = false;
    });
  }

  private async recheckAll(checks: Array<{ repoId: string; grant: StreamGrant; streams: EventStream[] }>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < checks.length) {
        const c = checks[next++]!;
        let reason: string | null;
        try {
          reason = await this.opts.recheck(c.repoId, c.grant);
        } catch (e) {
          // Not known now (the database is busy or closing): the stream stays, the next ping asks again.
          this.opts.logger.warn('event_stream_recheck', { repo: c.repoId, error: String(e) });
          continue;
        }
        if (reason !== null) for (const s of c.streams) s.end('revoked', reason);
      }
    };
    await Promise.all(Array.from({ length: Math.min(RECHECKS_IN_FLIGHT, checks.length) }, worker));
  }
}
