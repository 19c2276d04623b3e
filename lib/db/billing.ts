import type { Clock } from '../util/clock.ts';
import type { SqlDatabase as Database, Stmt } from './sql.ts';

/**
 * Subscriptions and the billing webhook's replay guard (hosted build; schema/migrations/0004_billing.sql).
 * Reads are single queries and every write is one atomic batch (no interactive transaction: the hosted
 * build's D1 has none), so the same code runs on libSQL and D1.
 */

/** A user's plan, as `GET /v1/billing` shows it. */
export interface PlanUsage {
  subscribed: boolean;
  /** Repositories the user owns (owner rows). */
  reposOwned: number;
}

export interface AdminUserRow {
  id: string;
  email: string;
  name: string;
  subscribed: boolean;
  repos_owned: number;
  created_at: number;
}

/** What a signed webhook event did. */
export type WebhookOutcome =
  /** The subscription now says what the event says. */
  | 'applied'
  /** A newer event (or admin action) had already set the subscription: nothing changed. */
  | 'outdated'
  /** The same signature was applied before: nothing changed. */
  | 'replay'
  /** No such user: nothing changed, nothing recorded. */
  | 'unknown_user';

/** How long a seen webhook signature is kept (s): twice the accepted clock skew, after which it is stale anyway. */
export const WEBHOOK_SEEN_TTL_S = 600;

const n = (v: unknown): number => Number(v ?? 0);

/**
 * The repository cap as an SQL condition (lib/usecases/quota.ts QuotaGuard): the user is subscribed, or owns fewer
 * than `cap` repositories (owner rows). Evaluated by the statement that writes the new owner row.
 */
export function repoCapCondition(userId: string, cap: number): Stmt {
  return {
    sql: `(EXISTS (SELECT 1 FROM subscriptions WHERE user_id = ? AND active = 1)
           OR (SELECT COUNT(*) FROM members WHERE user_id = ? AND role = 'owner') < ?)`,
    args: [userId, userId, cap],
  };
}

/**
 * The member cap as an SQL condition: some owner of the repository is subscribed, or it has fewer than
 * `cap` members (owners included). Evaluated by the statement that writes the new member row.
 */
export function memberCapCondition(repoId: string, cap: number): Stmt {
  return {
    sql: `(EXISTS (SELECT 1 FROM members m JOIN subscriptions s ON s.user_id = m.user_id
                   WHERE m.repo_id = ? AND m.role = 'owner' AND s.active = 1)
           OR (SELECT COUNT(*) FROM members WHERE repo_id = ?) < ?)`,
    args: [repoId, repoId, cap],
  };
}

export class Billing {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  private now(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  /** Whether the user is subscribed, and how many repositories they own; one read. */
  async planUsage(userId: string): Promise<PlanUsage> {
    const r = await this.db.get<{ active: unknown; owned: unknown }>(
      `SELECT (SELECT active FROM subscriptions WHERE user_id = ?) AS active,
              (SELECT COUNT(*) FROM members WHERE user_id = ? AND role = 'owner') AS owned`,
      [userId, userId],
    );
    return { subscribed: n(r?.active) === 1, reposOwned: n(r?.owned) };
  }

  /**
   * Sets a user's subscription by hand (admin). Always applies; later webhook events signed before now are
   * then outdated. False when there is no such user (nothing written).
   */
  async setSubscribed(userId: string, subscribed: boolean): Promise<boolean> {
    const now = this.now();
    const [, found] = await this.db.batch([
      {
        sql: `INSERT INTO subscriptions (user_id, active, event_t, updated_at)
              SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)
              ON CONFLICT (user_id) DO UPDATE SET active = excluded.active,
                event_t = max(subscriptions.event_t, excluded.event_t), updated_at = excluded.updated_at`,
        args: [userId, subscribed ? 1 : 0, now, now, userId],
      },
      { sql: 'SELECT 1 AS x FROM users WHERE id = ?', args: [userId] },
    ]);
    return found!.rows.length > 0;
  }

  /**
   * Applies a verified webhook event, once per signature, in one atomic batch: prunes old signatures,
   * records this one (only for a known user), and sets the subscription only when the signature is new and
   * the event is not older than what set the subscription last.
   */
  async applyWebhook(e: { signature: string; userId: string; subscribed: boolean; t: number }): Promise<WebhookOutcome> {
    const now = this.now();
    const [, recorded, updated, found] = await this.db.batch([
      { sql: 'DELETE FROM billing_webhook_seen WHERE seen_at < ?', args: [now - WEBHOOK_SEEN_TTL_S] },
      {
        sql: `INSERT INTO billing_webhook_seen (signature, seen_at)
              SELECT ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)
              ON CONFLICT (signature) DO NOTHING`,
        args: [e.signature, now, e.userId],
      },
      // changes() is the previous statement's: the subscription moves only when the signature is new.
      {
        sql: `INSERT INTO subscriptions (user_id, active, event_t, updated_at)
              SELECT ?, ?, ?, ? WHERE changes() > 0
              ON CONFLICT (user_id) DO UPDATE SET active = excluded.active, event_t = excluded.event_t,
                updated_at = excluded.updated_at
              WHERE excluded.event_t >= subscriptions.event_t`,
        args: [e.userId, e.subscribed ? 1 : 0, e.t, now],
      },
      { sql: 'SELECT 1 AS x FROM users WHERE id = ?', args: [e.userId] },
    ]);
    if (found!.rows.length === 0) return 'unknown_user';
    if (recorded!.changes === 0) return 'replay';
    return updated!.changes > 0 ? 'applied' : 'outdated';
  }

  /** Users and subscribed users, counted. */
  async counts(): Promise<{ users: number; subscribedUsers: number }> {
    const r = await this.db.get<{ users: unknown; subs: unknown }>(
      `SELECT (SELECT COUNT(*) FROM users) AS users,
              (SELECT COUNT(*) FROM subscriptions s JOIN users u ON u.id = s.user_id WHERE s.active = 1) AS subs`,
    );
    return { users: n(r?.users), subscribedUsers: n(r?.subs) };
  }

  /** Every user with plan and repositories owned, oldest first. */
  async users(): Promise<AdminUserRow[]> {
    const rows = await this.db.all<Record<string, unknown>>(
      `SELECT u.id, u.email, u.name, u.created_at, COALESCE(s.active, 0) AS active,
              (SELECT COUNT(*) FROM members m WHERE m.user_id = u.id AND m.role = 'owner') AS owned
       FROM users u LEFT JOIN subscriptions s ON s.user_id = u.id
       ORDER BY u.created_at, u.rowid`,
    );
    return rows.map((r) => ({
      id: String(r.id),
      email: String(r.email),
      name: String(r.name),
      subscribed: n(r.active) === 1,
      repos_owned: n(r.owned),
      created_at: n(r.created_at),
    }));
  }

  /** Every membership with the member's email, by repository, oldest member first. */
  async memberships(): Promise<Array<{ repoId: string; email: string; role: 'owner' | 'member' }>> {
    const rows = await this.db.all<Record<string, unknown>>(
      `SELECT m.repo_id, u.email, m.role FROM members m JOIN users u ON u.id = m.user_id
       ORDER BY m.repo_id, m.added_at, m.rowid`,
    );
    return rows.map((r) => ({ repoId: String(r.repo_id), email: String(r.email), role: r.role === 'owner' ? 'owner' : 'member' }));
  }
}
