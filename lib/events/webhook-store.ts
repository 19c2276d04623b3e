import type { Clock } from '../util/clock.ts';
import type { SqlDatabase, Stmt } from '../db/sql.ts';
import { randomToken } from '../auth/tokens.ts';
import { MAX_WEBHOOKS, type Delivery, type Webhook } from '../../schema/wire/webhooks.ts';
import type { EventKind } from '../../schema/wire/events.ts';

/**
 * Webhooks and their outbox (tables `webhooks` and `webhook_deliveries`, migration 0011), in the database
 * of the repository's index, like the event log (lib/events/event-log.ts). The secret of each webhook is kept as it
 * is: signing needs the key itself, so unlike tokens it cannot be stored as a hash.
 */

/** Prefix of webhook secrets. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Finished (delivered or failed) deliveries kept per webhook; pending ones up to MAX_PENDING_DELIVERIES. */
export const DELIVERY_RETENTION = 200;
/** Pending deliveries kept per webhook (docs/api.md: 1,000): beyond, the oldest pending one is dropped. */
export const MAX_PENDING_DELIVERIES = 1_000;
/** `last_error` of a delivery dropped for MAX_PENDING_DELIVERIES. */
export const DROPPED = 'dropped: too many pending deliveries';

/**
 * A new delivery id in SQL: a random UUID v4, made by the database so that a push's outbox rows need no
 * read of the webhooks before its batch (the rows are `INSERT … SELECT` over them).
 */
const SQL_UUID = `lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
  substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))`;

/**
 * The outbox rows of one event: one per webhook of the repository that receives `kind`. Held rows
 * (`next_attempt_ms` NULL) wait for WebhookStore.release; others are due at `nowMs`.
 */
export function deliveryStmts(
  repoId: string,
  kind: EventKind,
  data: string,
  opts: { commitSha?: string; nowMs: number; held: boolean; maxPending?: number },
): Stmt[] {
  return [
    {
      sql: `INSERT INTO webhook_deliveries
              (id, webhook_id, repo_id, event, data, commit_sha, status, attempts, next_attempt_ms, created_at)
            SELECT ${SQL_UUID}, id, repo_id, ?, ?, ?, 'pending', 0, ?, ?
            FROM webhooks WHERE repo_id = ? AND instr(',' || events || ',', ?) > 0`,
      args: [kind, data, opts.commitSha ?? null, opts.held ? null : opts.nowMs, Math.floor(opts.nowMs / 1000), repoId, `,${kind},`],
    },
    ...pendingCapStmts(repoId, opts.maxPending ?? MAX_PENDING_DELIVERIES),
  ];
}

/**
 * To follow an insert into the outbox (they act only when it inserted a row: `changes()` is the statement
 * before's): each webhook of the repository keeps its newest `maxPending` pending deliveries, the older ones
 * are marked `failed` (DROPPED), and its finished ones are pruned to DELIVERY_RETENTION, so that a receiver
 * that never succeeds holds a bounded number of rows however many events it misses. A drop of a delivery
 * whose attempt is under way stands: `record` changes only rows still pending.
 */
function pendingCapStmts(repoId: string, maxPending: number): Stmt[] {
  return [
    {
      sql: `WITH cut AS MATERIALIZED (
              SELECT w.id AS wid, (SELECT e.rowid FROM webhook_deliveries e WHERE e.webhook_id = w.id AND e.status = 'pending'
                                   ORDER BY e.created_at DESC, e.rowid DESC LIMIT 1 OFFSET ?) AS rid
              FROM webhooks w WHERE w.repo_id = ? AND changes() > 0)
            UPDATE webhook_deliveries SET status = 'failed', last_error = ?, next_attempt_ms = NULL
            WHERE rowid IN (
              SELECT d.rowid FROM cut JOIN webhook_deliveries c ON c.rowid = cut.rid
              JOIN webhook_deliveries d ON d.webhook_id = cut.wid AND d.status = 'pending' AND d.created_at <= c.created_at
              WHERE d.created_at < c.created_at OR d.rowid <= c.rowid)`,
      args: [maxPending, repoId, DROPPED],
    },
    {
      sql: `WITH cut AS MATERIALIZED (
              SELECT w.id AS wid, (SELECT e.rowid FROM webhook_deliveries e INDEXED BY webhook_deliveries_hook_status
                                   WHERE e.webhook_id = w.id AND e.status IN ('delivered', 'failed')
                                   ORDER BY e.created_at DESC, e.rowid DESC LIMIT 1 OFFSET ?) AS rid
              FROM webhooks w WHERE w.repo_id = ? AND changes() > 0)
            DELETE FROM webhook_deliveries
            WHERE rowid IN (
              SELECT d.rowid FROM cut JOIN webhook_deliveries c ON c.rowid = cut.rid
              JOIN webhook_deliveries d ON d.webhook_id = cut.wid AND d.status IN ('delivered', 'failed') AND d.created_at <= c.created_at
              WHERE d.created_at < c.created_at OR d.rowid <= c.rowid)`,
      args: [DELIVERY_RETENTION, repoId],
    },
  ];
}

/** A delivery as the deliverer needs it: where to, signed with what, carrying what. */
export interface DueDelivery {
  id: string;
  webhookId: string;
  repoId: string;
  event: string;
  data: string;
  attempts: number;
  firstAttemptMs: number | null;
  url: string;
  secret: string;
}

/** The outcome of one attempt, as recorded. */
export interface AttemptRecord {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  firstAttemptMs: number;
  nextAttemptMs: number | null;
}

type Row = Record<string, unknown>;

const toWebhook = (r: Row): Webhook => ({
  id: String(r.id),
  url: String(r.url),
  events: String(r.events).split(',') as EventKind[],
  created_at: Number(r.created_at),
});

/** A webhook with pending deliveries, and when its earliest one falls due. */
export interface DueWebhook {
  webhookId: string;
  repoId: string;
  dueMs: number;
}

const toDue = (r: Row): DueDelivery => ({
  id: String(r.id),
  webhookId: String(r.webhook_id),
  repoId: String(r.repo_id),
  event: String(r.event),
  data: String(r.data),
  attempts: Number(r.attempts),
  firstAttemptMs: r.first_attempt_ms === null || r.first_attempt_ms === undefined ? null : Number(r.first_attempt_ms),
  url: String(r.url),
  secret: String(r.secret),
});

export class WebhookStore {
  constructor(
    private readonly db: SqlDatabase,
    private readonly clock: Clock,
    /** Pending deliveries kept per webhook (config.webhookMaxPending). */
    private readonly maxPending = MAX_PENDING_DELIVERIES,
  ) {}

  private seconds(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  /**
   * Adds a webhook unless the repository has MAX_WEBHOOKS already (null then). The count and the insert are
   * one statement, so racing creations cannot pass the cap together.
   */
  async create(repoId: string, url: string, events: readonly EventKind[]): Promise<{ webhook: Webhook; secret: string } | null> {
    const id = crypto.randomUUID();
    const secret = randomToken(WEBHOOK_SECRET_PREFIX);
    const kinds = [...new Set(events)];
    const createdAt = this.seconds();
    const { changes } = await this.db.run(
      `INSERT INTO webhooks (id, repo_id, url, events, secret, created_at)
       SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM webhooks WHERE repo_id = ?) < ?`,
      [id, repoId, url, kinds.join(','), secret, createdAt, repoId, MAX_WEBHOOKS],
    );
    if (changes === 0) return null;
    return { webhook: { id, url, events: kinds, created_at: createdAt }, secret };
  }

  /** The repository's webhooks, oldest first. */
  async list(repoId: string): Promise<Webhook[]> {
    const rows = await this.db.all<Row>(
      'SELECT id, url, events, created_at FROM webhooks WHERE repo_id = ? ORDER BY created_at, rowid',
      [repoId],
    );
    return rows.map(toWebhook);
  }

  /** Whether the repository has the webhook. */
  async exists(repoId: string, id: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM webhooks WHERE repo_id = ? AND id = ?', [repoId, id])) !== undefined;
  }

  /** Deletes a webhook and its deliveries, pending ones included; false when the repository has no such webhook. */
  async remove(repoId: string, id: string): Promise<boolean> {
    const [deleted] = await this.db.batch([
      { sql: 'DELETE FROM webhooks WHERE repo_id = ? AND id = ?', args: [repoId, id] },
      { sql: 'DELETE FROM webhook_deliveries WHERE repo_id = ? AND webhook_id = ? AND changes() > 0', args: [repoId, id] },
    ]);
    return deleted!.changes > 0;
  }

  /** Queues a `ping` delivery to the webhook, due now; false when the repository has no such webhook. */
  async ping(repoId: string, id: string): Promise<boolean> {
    const now = this.clock.now();
    const [inserted] = await this.db.batch([
      {
        sql: `INSERT INTO webhook_deliveries (id, webhook_id, repo_id, event, data, commit_sha, status, attempts, next_attempt_ms, created_at)
              SELECT ?, id, repo_id, 'ping', ?, NULL, 'pending', 0, ?, ? FROM webhooks WHERE repo_id = ? AND id = ?`,
        args: [crypto.randomUUID(), JSON.stringify({ repo_id: repoId, webhook_id: id }), now, Math.floor(now / 1000), repoId, id],
      },
      ...pendingCapStmts(repoId, this.maxPending),
    ]);
    return inserted!.changes > 0;
  }

  /** The webhook's deliveries, newest first; null when the repository has no such webhook. */
  async deliveries(repoId: string, id: string, limit: number): Promise<Delivery[] | null> {
    if (!(await this.exists(repoId, id))) return null;
    const rows = await this.db.all<Row>(
      `SELECT id, event, status, attempts, last_status, last_error, next_attempt_ms, created_at FROM webhook_deliveries
       WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      [id, limit],
    );
    return rows.map((r) => {
      const d: Delivery = {
        id: String(r.id),
        event: String(r.event),
        status: String(r.status) as Delivery['status'],
        attempts: Number(r.attempts),
        created_at: Number(r.created_at),
      };
      if (r.last_status !== null && r.last_status !== undefined) d.last_status = Number(r.last_status);
      if (r.last_error !== null && r.last_error !== undefined) d.last_error = String(r.last_error);
      if (d.status === 'pending' && r.next_attempt_ms !== null && r.next_attempt_ms !== undefined) {
        d.next_attempt_at = Math.ceil(Number(r.next_attempt_ms) / 1000);
      }
      return d;
    });
  }

  /**
   * Makes the held deliveries of the given commits due now: their push is published. Not waited to disk: a
   * crash that loses it leaves them held, and releaseHeld (after a restart) makes them due again.
   */
  async release(repoId: string, commitShas: readonly string[]): Promise<number> {
    if (commitShas.length === 0) return 0;
    const marks = commitShas.map(() => '?').join(', ');
    const [r] = await this.db.batch(
      [
        {
          sql: `UPDATE webhook_deliveries SET next_attempt_ms = ?
                WHERE repo_id = ? AND status = 'pending' AND next_attempt_ms IS NULL AND commit_sha IN (${marks})`,
          args: [this.clock.now(), repoId, ...commitShas],
        },
      ],
      { durable: false },
    );
    return r!.changes;
  }

  /**
   * Makes every held delivery of the repository due now. Only for a caller that holds the repository's lock
   * with the index level with git: every commit the index still has is then published, and the rows of any
   * commit git never reached were cut back with it (PathIndex.sync).
   */
  async releaseAll(repoId: string): Promise<number> {
    const { changes } = await this.db.run(
      `UPDATE webhook_deliveries SET next_attempt_ms = ? WHERE repo_id = ? AND status = 'pending' AND next_attempt_ms IS NULL`,
      [this.clock.now(), repoId],
    );
    return changes;
  }

  /** Repositories with deliveries held since before `beforeSeconds` (their push's release may have been lost). */
  async heldRepos(beforeSeconds: number): Promise<string[]> {
    const rows = await this.db.all<Row>(
      `SELECT DISTINCT repo_id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms IS NULL AND created_at < ?`,
      [beforeSeconds],
    );
    return rows.map((r) => String(r.repo_id));
  }

  /** Pending deliveries due at `nowMs`, the earliest first, with their webhook's URL and secret. */
  async due(nowMs: number, limit: number, skip: ReadonlySet<string>): Promise<DueDelivery[]> {
    const rows = await this.db.all<Row>(
      `SELECT d.id, d.webhook_id, d.repo_id, d.event, d.data, d.attempts, d.first_attempt_ms, w.url, w.secret
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.status = 'pending' AND d.next_attempt_ms IS NOT NULL AND d.next_attempt_ms <= ?
       ORDER BY d.next_attempt_ms LIMIT ?`,
      [nowMs, limit + skip.size],
    );
    return rows
      .filter((r) => !skip.has(String(r.id)))
      .slice(0, limit)
      .map(toDue);
  }

  /**
   * Every webhook with a pending delivery that is not held, with when its earliest one falls due: the earliest
   * first, then the oldest webhook. One index lookup per webhook (webhook_deliveries_hook_due).
   */
  async queues(): Promise<DueWebhook[]> {
    const rows = await this.db.all<Row>(
      `SELECT webhook_id, repo_id, due FROM (
         SELECT w.id AS webhook_id, w.repo_id, w.created_at, w.rowid AS wr,
           (SELECT MIN(d.next_attempt_ms) FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending') AS due
         FROM webhooks w)
       WHERE due IS NOT NULL ORDER BY due, created_at, wr`,
    );
    return rows.map((r) => ({ webhookId: String(r.webhook_id), repoId: String(r.repo_id), dueMs: Number(r.due) }));
  }

  /** The webhook's earliest delivery due at `nowMs` (the oldest first among equals), or null. */
  async nextOf(webhookId: string, nowMs: number): Promise<DueDelivery | null> {
    const r = await this.db.get<Row>(
      `SELECT d.id, d.webhook_id, d.repo_id, d.event, d.data, d.attempts, d.first_attempt_ms, w.url, w.secret
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE d.webhook_id = ? AND d.status = 'pending' AND d.next_attempt_ms IS NOT NULL AND d.next_attempt_ms <= ?
       ORDER BY d.next_attempt_ms, d.rowid LIMIT 1`,
      [webhookId, nowMs],
    );
    return r ? toDue(r) : null;
  }

  /** Whether any delivery is pending, held or due. */
  async anyPending(): Promise<boolean> {
    return (await this.db.get(`SELECT 1 AS x FROM webhook_deliveries WHERE status = 'pending' LIMIT 1`)) !== undefined;
  }

  /** When the next pending delivery is due (clock ms), or null when none is waiting. */
  async nextDue(): Promise<number | null> {
    const r = await this.db.get<Row>(
      `SELECT MIN(next_attempt_ms) AS t FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms IS NOT NULL`,
    );
    return r?.t === null || r?.t === undefined ? null : Number(r.t);
  }

  /**
   * Records an attempt of a delivery still pending (one dropped meanwhile stays `failed`); a finished delivery
   * also prunes its webhook's finished ones to DELIVERY_RETENTION.
   */
  async record(d: DueDelivery, a: AttemptRecord): Promise<void> {
    const stmts: Stmt[] = [
      {
        sql: `UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status = ?, last_error = ?, first_attempt_ms = ?,
              next_attempt_ms = ? WHERE id = ? AND status = 'pending'`,
        args: [a.status, a.attempts, a.lastStatus, a.lastError, a.firstAttemptMs, a.nextAttemptMs, d.id],
      },
    ];
    if (a.status !== 'pending') {
      stmts.push({
        sql: `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND status <> 'pending' AND rowid NOT IN (
                SELECT rowid FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)`,
        args: [d.webhookId, d.webhookId, DELIVERY_RETENTION],
      });
    }
    await this.db.batch(stmts);
  }
}
