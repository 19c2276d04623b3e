import type { Clock } from '../util/clock.ts';
import type { SqlDatabase, Stmt } from '../db/sql.ts';
import { rfc3339 } from '../usecases/shape.ts';
import { PUSH_EVENT_PATHS, type EventKind, type MemberEventData, type PathStatus, type PushEventData } from '../../schema/wire/events.ts';
import { deliveryStmts, MAX_PENDING_DELIVERIES } from './webhook-store.ts';

/**
 * The event log of every repository (table `repo_events`, migration 0011): what `GET /v1/repos/:id/events`
 * replays and what webhooks are sent. It lives in the database of the repository's index — the server's
 * database on Node, the repository's Durable Object on Workers — so that a push's event and its webhook
 * deliveries are written in the transaction that records its commit (RepoStore.commitGroup).
 *
 * An event's id is its `seq` (migration 0013): the repository's own sequence, 1, 2, 3, …, counted in
 * `repo_event_seq` (the events logged before that migration kept their server-wide id as their seq, and a
 * repository's counter went on from its newest), so the ids a stream carries reveal nothing about other
 * repositories. An id is never given twice, even after the events of commits git never reached are cut back.
 */

/** Events kept per repository (at least): the newest 1,000 (docs/limits.md "Storage"). */
export const EVENT_RETENTION = 1000;
/** Text fields of event data (author, email, message) are cut at this many characters. */
export const EVENT_TEXT_CHARS = 1000;

/** An event as stored: its id, kind and the JSON of its data. */
export interface StoredEvent {
  id: number;
  kind: EventKind;
  data: string;
}

/** A commit as a push event describes it. */
export interface CommitForEvent {
  sha: string;
  author: string;
  email: string;
  /** Unix seconds. */
  time: number;
  message: string;
}

const cut = (s: string) => (s.length > EVENT_TEXT_CHARS ? s.slice(0, EVENT_TEXT_CHARS) : s);

/** The data of a push event: at most PUSH_EVENT_PATHS paths (then `more`), and the merged paths if any. */
export function pushEventData(
  repoId: string,
  commit: CommitForEvent,
  paths: ReadonlyArray<{ path: string; status: PathStatus }>,
  merged: readonly string[],
): PushEventData {
  const data: PushEventData = {
    repo_id: repoId,
    sha: commit.sha,
    author: cut(commit.author),
    email: cut(commit.email),
    time: rfc3339(commit.time),
    message: cut(commit.message),
    paths: paths.slice(0, PUSH_EVENT_PATHS).map((p) => ({ path: p.path, status: p.status })),
  };
  if (paths.length > PUSH_EVENT_PATHS) data.more = paths.length - PUSH_EVENT_PATHS;
  if (merged.length > 0) data.merged = [...merged];
  return data;
}

type Row = Record<string, unknown>;
const toEvent = (r: Row): StoredEvent => ({ id: Number(r.id), kind: String(r.kind) as EventKind, data: String(r.data) });

export class EventLog {
  constructor(
    private readonly db: SqlDatabase,
    private readonly clock: Clock,
    private readonly retention = EVENT_RETENTION,
    /** Pending deliveries kept per webhook (config.webhookMaxPending). */
    private readonly maxPending = MAX_PENDING_DELIVERIES,
  ) {}

  /**
   * Statements that append an event, one outbox row per webhook of the repository that wants its kind, and
   * prune the log to the newest `retention`. A push's rows name its commit (`commitSha`) and are held until
   * the commit is published (see WebhookStore.release).
   */
  appendStmts(repoId: string, kind: EventKind, data: PushEventData | MemberEventData, opts: { commitSha?: string } = {}): Stmt[] {
    const json = JSON.stringify(data);
    const now = this.clock.now();
    return [
      {
        sql: `INSERT INTO repo_event_seq (repo_id, last)
              VALUES (?, COALESCE((SELECT MAX(seq) FROM repo_events WHERE repo_id = ?), 0) + 1)
              ON CONFLICT (repo_id) DO UPDATE SET last = last + 1`,
        args: [repoId, repoId],
      },
      {
        sql: `INSERT INTO repo_events (repo_id, seq, kind, data, commit_sha, created_at)
              VALUES (?, (SELECT last FROM repo_event_seq WHERE repo_id = ?), ?, ?, ?, ?)`,
        args: [repoId, repoId, kind, json, opts.commitSha ?? null, Math.floor(now / 1000)],
      },
      ...deliveryStmts(repoId, kind, json, { commitSha: opts.commitSha, nowMs: now, held: opts.commitSha !== undefined, maxPending: this.maxPending }),
      {
        sql: `DELETE FROM repo_events WHERE repo_id = ? AND seq <= (
                SELECT seq FROM repo_events WHERE repo_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
        args: [repoId, repoId, this.retention],
      },
    ];
  }

  /** Appends an event on its own (a member event); returns how many deliveries it queued. */
  async append(repoId: string, kind: EventKind, data: PushEventData | MemberEventData): Promise<number> {
    const stmts = this.appendStmts(repoId, kind, data);
    const results = await this.db.batch(stmts);
    return deliveriesQueued(stmts, results);
  }

  /** The newest event id of the repository, 0 when it has none. */
  async lastId(repoId: string): Promise<number> {
    const r = await this.db.get<Row>('SELECT MAX(seq) AS id FROM repo_events WHERE repo_id = ?', [repoId]);
    return r?.id === null || r?.id === undefined ? 0 : Number(r.id);
  }

  /** Whether the repository still holds the event `id`. */
  async has(repoId: string, id: number): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM repo_events WHERE repo_id = ? AND seq = ?', [repoId, id])) !== undefined;
  }

  /** The events after `after` and up to `upto`, oldest first, at most `limit`. */
  async page(repoId: string, after: number, upto: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.db.all<Row>(
      'SELECT seq AS id, kind, data FROM repo_events WHERE repo_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?',
      [repoId, after, upto, limit],
    );
    return rows.map(toEvent);
  }
}

/** How many outbox rows the delivery statements among `stmts` inserted, from the batch's results. */
export function deliveriesQueued(stmts: readonly Stmt[], results: ReadonlyArray<{ changes: number }>): number {
  let n = 0;
  stmts.forEach((s, i) => {
    if (isDeliveryInsert(s)) n += results[i]?.changes ?? 0;
  });
  return n;
}

export const isDeliveryInsert = (s: Stmt): boolean => s.sql.startsWith('INSERT INTO webhook_deliveries');
