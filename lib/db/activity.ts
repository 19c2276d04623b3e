import type { Clock } from '../clock.ts';
import type { SqlDatabase as Database, Stmt } from './sql.ts';

export type ActivityAction = 'push' | 'pull' | 'import';
/** Every action the feed records. */
export const ACTIVITY_ACTIONS: readonly ActivityAction[] = ['push', 'pull', 'import'];

export interface ActivityEvent {
  user_id: string;
  email: string;
  action: ActivityAction;
  detail?: Record<string, unknown>;
  /** Unix seconds. */
  created_at: number;
  /** A push's commit (what the event stream's push event names as `sha`), when it was recorded with one. */
  sha?: string;
}

/** The newest events kept per repository; older ones are pruned as new ones arrive (docs/concepts.md "Activity"). */
export const ACTIVITY_RETENTION = 1000;
/** Paths kept in a push event's detail. */
export const PUSH_DETAIL_PATHS = 50;

/** The per-repository activity feed. */
export class Activity {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly retention = ACTIVITY_RETENTION,
  ) {}

  /** The database the feed lives in. */
  get database(): Database {
    return this.db;
  }

  /**
   * Records one event and prunes the repository's feed to the newest `retention`, atomically. `commitSha`:
   * the commit a push made, shown as the event's `sha`.
   */
  async record(
    repoId: string,
    actor: { userId: string; email: string },
    action: ActivityAction,
    detail?: Record<string, unknown>,
    commitSha?: string,
  ): Promise<void> {
    await this.db.batch(this.stmts(repoId, actor, action, detail, commitSha));
  }

  /**
   * The statements of `record`, for a caller that commits them in a batch of its own (a push records its
   * event in the transaction that records its commit, naming that commit: if the branch never reaches it,
   * the index sync that cuts the commit's rows removes the event too).
   */
  stmts(
    repoId: string,
    actor: { userId: string; email: string },
    action: ActivityAction,
    detail?: Record<string, unknown>,
    commitSha?: string,
  ): Stmt[] {
    return [
      {
        sql: 'INSERT INTO activity (repo_id, user_id, email, action, detail, created_at, commit_sha) VALUES (?, ?, ?, ?, ?, ?, ?)',
        args: [
          repoId,
          actor.userId,
          actor.email,
          action,
          detail ? JSON.stringify(detail) : null,
          Math.floor(this.clock.now() / 1000),
          commitSha ?? null,
        ],
      },
      {
        sql: `DELETE FROM activity WHERE repo_id = ? AND id <= (
                SELECT id FROM activity WHERE repo_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
        args: [repoId, repoId, this.retention],
      },
    ];
  }

  /**
   * Newest first, with the total kept. `actions`: only events of these actions (and `total` counts only
   * those, so paging works on the filtered feed); absent: every event.
   */
  async list(repoId: string, limit: number, offset: number, actions?: readonly ActivityAction[]): Promise<{ events: ActivityEvent[]; total: number }> {
    const only = actions === undefined ? '' : ` AND action IN (${actions.map(() => '?').join(', ') || "''"})`;
    const args = [repoId, ...(actions ?? [])];
    const [rows, count] = await Promise.all([
      this.db.all<Record<string, unknown>>(
        `SELECT user_id, email, action, detail, created_at, commit_sha FROM activity WHERE repo_id = ?${only}
         ORDER BY id DESC LIMIT ? OFFSET ?`,
        [...args, limit, offset],
      ),
      this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM activity WHERE repo_id = ?${only}`, args),
    ]);
    const events = rows.map((r) => {
      const e: ActivityEvent = {
        user_id: String(r.user_id),
        email: String(r.email),
        action: r.action as ActivityAction,
        created_at: Number(r.created_at),
      };
      if (typeof r.detail === 'string') e.detail = JSON.parse(r.detail) as Record<string, unknown>;
      if (typeof r.commit_sha === 'string' && r.commit_sha !== '') e.sha = r.commit_sha;
      return e;
    });
    return { events, total: Number(count?.n ?? 0) };
  }
}
