import type { Logger } from '../framework/log.ts';
import { refuse, refuseWith } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import type { EventLog, StoredEvent } from './event-log.ts';
import { encodeEvent, EventStream, sseEvent, type StreamGrant } from './stream.ts';
import { MemorySlots, type StreamSlots } from './slots.ts';

/**
 * The open event streams of the repositories one process (Node) or one Durable Object (Workers) holds, and
 * what reaches them: the events of each commit once it is published and of each member change (`announce`,
 * called under the repository's lock, so events reach streams in id order and never before they count),
 * a ping every `pingMs` with a re-check of each stream's credential and membership, a sweep every second for
 * users disabled and PATs revoked, and the end of a removed member's or a revoked credential's streams.
 *
 * Per repository the hub remembers the newest event id it has announced (`published`): a stream replays
 * from the log only up to it, so it never sees an event whose commit is not published yet, and goes live
 * once it has caught up.
 *
 * Bounds (docs/api.md "Live events"): 10 streams per identity per repository and 50 per identity across all
 * repositories (`slots`: the process's count on Node, an object per identity on Workers) → 429; `maxStreams`
 * in this hub → 503 `server busy`. Each stream's slots are given back the moment it leaves the hub.
 */

/** Open streams per identity per repository (docs/limits.md "Live events and webhooks"): the next one is refused with 429. */
export const MAX_STREAMS_PER_HOLDER = 10;
/** At most this often a ping (docs/limits.md: a ping at least every 15 s). */
export const PING_MS = 15_000;
/** How often users disabled and PATs revoked are looked for, and ending streams past their time are cut. */
export const SWEEP_MS = 1_000;
/** Retry-After of a 503 `server busy` (the hub holds the most streams it may). */
export const BUSY_RETRY_AFTER_S = 5;
/** Events read from the log per announcement step. */
const ANNOUNCE_PAGE = 256;
/** Access re-checks of one ping run at once. */
const RECHECKS_IN_FLIGHT = 8;

export const UNKNOWN_EVENT_ID = 'unknown event id';
/** Why a stream ends when its caller's token no longer resolves (lib/events/access.ts), or was revoked. */
export const CREDENTIAL_LOST = 'credential no longer valid';

/** What a sweep found gone: users disabled or deleted, and PATs revoked (deleted). */
export interface LostCredentials {
  users: Set<string>;
  pats: Set<string>;
}

export interface HubOptions {
  log: EventLog;
  logger: Logger;
  /** Runs `fn` under the repository's write lock, with its index level with git (RepoStore.exclusive). */
  exclusive<T>(repoId: string, fn: () => Promise<T>): Promise<T>;
  /** Why `grant` may no longer read the repository, or null while it may (lib/events/access.ts). */
  recheck(repoId: string, grant: StreamGrant): Promise<string | null>;
  /** Which of these users and PATs are gone (disabled, deleted, revoked): lib/events/access.ts credentialsLost. */
  sweep?(users: readonly string[], pats: readonly string[]): Promise<LostCredentials>;
  /** The per-identity cap across repositories (MemorySlots, this hub's own count, by default). */
  slots?: StreamSlots;
  /** Streams this hub holds at most (SERVICE_EVENTS_MAX_STREAMS). */
  maxStreams?: number;
  pingMs?: number;
  sweepMs?: number;
  /**
   * Probe every idle stream at each sweep (EventStream.probe): where the runtime learns that a client went
   * away only by writing to it (Workers), so that a closed stream's slot is freed within a second.
   */
  probe?: boolean;
  /** Buffer of each stream (STREAM_BUFFER_BYTES by default). */
  bufferBytes?: number;
}

interface RepoStreams {
  /** Newest event id announced; -1 until read under the repository's lock. */
  published: number;
  /** Read under the lock once, by the first stream of the repository. */
  ready: Promise<void> | null;
  /** The open streams, each with its slot's key. */
  streams: Map<EventStream, string>;
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

/** What `open` may be given besides the repository, grant and resume point. */
export interface OpenOptions {
  /** Cuts the client's connection at once (the runtime's; see EventStream). */
  onCut?: () => void;
}

/** Which streams `endGrants` ends: a user's, or only those opened with some of their PATs. */
export interface GrantMatch {
  userId: string;
  /** Only the streams opened with one of these PATs (absent: every stream of the user). */
  patIds?: readonly string[];
}

export class Hub {
  private readonly repos = new Map<string, RepoStreams>();
  /** Streams ended with a notice their client has not read yet, cut past their deadline. */
  private readonly ending = new Set<EventStream>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastPing = 0;
  private rechecking = false;
  private sweeping = false;
  private closed = false;
  /** Streams open or being opened: what `maxStreams` counts. */
  private count = 0;
  private keySeq = 0;
  private readonly slots: StreamSlots;
  private readonly maxStreams: number;
  readonly pingMs: number;
  private readonly sweepMs: number;

  constructor(private readonly opts: HubOptions) {
    this.pingMs = opts.pingMs ?? PING_MS;
    this.sweepMs = Math.min(opts.sweepMs ?? SWEEP_MS, this.pingMs);
    this.slots = opts.slots ?? new MemorySlots();
    this.maxStreams = opts.maxStreams ?? Number.MAX_SAFE_INTEGER;
  }

  /** Streams open now, in every repository. */
  get size(): number {
    let n = 0;
    for (const r of this.repos.values()) n += r.streams.size;
    return n;
  }

  /**
   * Opens a stream of the repository for `grant`, resuming after `after` (an event id, or null: from now).
   * 429 `too many event streams` past MAX_STREAMS_PER_HOLDER for the identity in this repository or past
   * the slots it may hold in all; 503 `server busy` past `maxStreams`.
   */
  async open(repoId: string, grant: StreamGrant, after: string | null, options: OpenOptions = {}): Promise<ReadableStream<Uint8Array>> {
    if (this.closed) throw refuse(R.server_stopping);
    if (this.count >= this.maxStreams) {
      throw refuseWith(R.server_busy, { headers: { 'Retry-After': String(BUSY_RETRY_AFTER_S) } });
    }
    const repo = this.repoState(repoId);
    const held = repo.holders.get(grant.holder) ?? 0;
    if (held >= MAX_STREAMS_PER_HOLDER) throw refuse(R.too_many_streams);
    // The places are taken before anything is awaited, so that racing opens cannot pass the caps together.
    repo.holders.set(grant.holder, held + 1);
    this.count++;
    const key = `${globalThis.crypto.randomUUID()}.${++this.keySeq}`;
    let slot = false;
    let stream: EventStream;
    try {
      try {
        slot = await this.slots.take(grant.holder, key, repoId);
      } catch (e) {
        // The count cannot be reached (Workers: the identity's object is being reset): let the stream in,
        // as the rate limiters do; the cap of this repository still holds.
        this.opts.logger.warn('event_stream_slot', { repo: repoId, error: String(e) });
        slot = true;
      }
      if (!slot) throw refuse(R.too_many_streams);
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
        onCut: options.onCut,
      });
      if (this.closed) throw refuse(R.server_stopping);
    } catch (e) {
      this.release(repoId, repo, grant.holder, slot ? key : null);
      throw e;
    }
    repo.streams.set(stream, key);
    this.startTimer();
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
    for (const s of [...repo.streams.keys()]) if (s.grant.userId === userId) s.end('revoked', reason);
  }

  /**
   * Ends, in every repository, the streams of a user (disabled) or of some of their PATs (revoked) with
   * `event: revoked`. Returns how many ended.
   */
  endGrants(match: GrantMatch, reason: string): number {
    const pats = match.patIds ? new Set(match.patIds) : null;
    let n = 0;
    for (const repo of [...this.repos.values()]) {
      for (const s of [...repo.streams.keys()]) {
        if (s.grant.userId !== match.userId) continue;
        if (pats && (s.grant.patId === null || !pats.has(s.grant.patId))) continue;
        s.end('revoked', reason);
        n++;
      }
    }
    return n;
  }

  /** Ends every stream of the repository with `event: revoked` (the repository was deleted). */
  endRepo(repoId: string, reason: string): void {
    const repo = this.repos.get(repoId);
    if (!repo) return;
    for (const s of [...repo.streams.keys()]) s.end('revoked', reason);
  }

  /** Ends every stream (the server is stopping); no stream opens afterwards. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const repo of [...this.repos.values()]) for (const s of [...repo.streams.keys()]) s.close();
    // Streams that just ended with a notice send it first, if their client is reading (their pull runs
    // before a timer does); the others are cut.
    const ending = [...this.ending];
    this.ending.clear();
    if (ending.length > 0) setTimeout(() => ending.forEach((s) => s.close()), 0);
    this.repos.clear();
  }

  private fanOut(repo: RepoStreams, events: StoredEvent[]): void {
    // `published` moves with the offer, in one synchronous step: a replaying stream that reads the log up to
    // it never misses what live streams are offered.
    repo.published = events[events.length - 1]!.id;
    if (repo.streams.size === 0) return;
    // Each event's text is encoded once, and the same bytes are queued on every stream.
    const encoded = events.map(encodeEvent);
    for (const s of [...repo.streams.keys()]) if (s.live) s.offer(encoded);
  }

  private repoState(repoId: string): RepoStreams {
    let repo = this.repos.get(repoId);
    if (!repo) this.repos.set(repoId, (repo = { published: -1, ready: null, streams: new Map(), holders: new Map() }));
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
        const key = repo.streams.get(s);
        if (key !== undefined && repo.streams.delete(s)) this.release(repoId, repo, s.grant.holder, key);
      },
      ending: (s: EventStream) => {
        if (this.closed) {
          setTimeout(() => s.close(), 0);
          return;
        }
        // A client that has not read its last notice by then has its connection cut.
        s.deadline = Date.now() + Math.max(2 * this.pingMs, 1000);
        this.ending.add(s);
        this.startTimer();
      },
      failed: (e: unknown) => this.opts.logger.warn('event_stream', { repo: repoId, error: String(e) }),
    };
  }

  private release(repoId: string, repo: RepoStreams, holder: string, key: string | null): void {
    this.count--;
    if (key !== null) {
      this.slots.give(holder, key).catch((e: unknown) => this.opts.logger.warn('event_stream_slot', { repo: repoId, error: String(e) }));
    }
    const n = (repo.holders.get(holder) ?? 1) - 1;
    if (n > 0) repo.holders.set(holder, n);
    else repo.holders.delete(holder);
    if (repo.streams.size === 0 && repo.holders.size === 0 && this.repos.get(repoId) === repo) this.repos.delete(repoId);
    this.stopTimerIfIdle();
  }

  private stopTimerIfIdle(): void {
    if (this.repos.size === 0 && this.ending.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** The hub's one timer: pings, re-checks, sweeps and cuts for every stream it holds. */
  private startTimer(): void {
    if (this.timer !== null || this.closed) return;
    this.lastPing = Date.now();
    this.timer = setInterval(() => this.tick(), this.sweepMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private tick(): void {
    const now = Date.now();
    for (const s of [...this.ending]) {
      if (!s.ending) this.ending.delete(s);
      else if (now >= s.deadline) {
        this.ending.delete(s);
        s.close();
      }
    }
    // A tick may come a little early: a ping is due once 9/10 of its interval has passed.
    if (now - this.lastPing >= this.pingMs * 0.9) {
      this.lastPing = now;
      this.pingAll();
    } else {
      if (this.opts.probe) for (const repo of this.repos.values()) for (const s of repo.streams.keys()) s.probe();
      this.sweepCredentials();
    }
    this.stopTimerIfIdle();
  }

  /** Users disabled and PATs revoked since the last look: their streams end (`revoked`). */
  private sweepCredentials(): void {
    const sweep = this.opts.sweep;
    if (!sweep || this.sweeping) return;
    const users = new Set<string>();
    const pats = new Set<string>();
    for (const repo of this.repos.values()) {
      for (const s of repo.streams.keys()) {
        if (s.grant.userId !== null) users.add(s.grant.userId);
        if (s.grant.patId !== null) pats.add(s.grant.patId);
      }
    }
    if (users.size === 0 && pats.size === 0) return;
    this.sweeping = true;
    sweep
      .call(this.opts, [...users], [...pats])
      .then((lost) => {
        if (lost.users.size === 0 && lost.pats.size === 0) return;
        for (const repo of [...this.repos.values()]) {
          for (const s of [...repo.streams.keys()]) {
            const gone = (s.grant.userId !== null && lost.users.has(s.grant.userId)) || (s.grant.patId !== null && lost.pats.has(s.grant.patId));
            if (gone) s.end('revoked', CREDENTIAL_LOST);
          }
        }
      })
      .catch((e: unknown) => this.opts.logger.warn('event_stream_sweep', { error: String(e) }))
      .finally(() => {
        this.sweeping = false;
      });
  }

  /**
   * Pings every stream, renews the slots of the open ones, then re-checks each (repository, token) once; a
   * lost access ends its streams.
   */
  private pingAll(): void {
    const checks = new Map<string, { repoId: string; grant: StreamGrant; streams: EventStream[] }>();
    const leases = new Map<string, { holder: string; repoId: string; keys: string[] }>();
    for (const [repoId, repo] of this.repos) {
      for (const [s, key] of repo.streams) {
        s.ping();
        const lk = `${repoId}\u0000${s.grant.holder}`;
        const l = leases.get(lk);
        if (l) l.keys.push(key);
        else leases.set(lk, { holder: s.grant.holder, repoId, keys: [key] });
        if (s.grant.token === null) continue;
        const ck = `${repoId}\u0000${s.grant.token}`;
        const c = checks.get(ck);
        if (c) c.streams.push(s);
        else checks.set(ck, { repoId, grant: s.grant, streams: [s] });
      }
    }
    for (const l of leases.values()) {
      this.slots.renew(l.holder, l.keys, l.repoId).catch((e: unknown) => this.opts.logger.warn('event_stream_slot', { repo: l.repoId, error: String(e) }));
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
