import type { Clock } from '../util/clock.ts';
import type { SqlDatabase as Database, Stmt } from './sql.ts';

export type ActivityAction = 'push' | 'pull' | 'import' | 'member';
/** Every action the feed records. */
export const ACTIVITY_ACTIONS: readonly ActivityAction[] = ['push', 'pull', 'import', 'member'];
/**
 * The feed read without `?actions=`: pushes, pulls and imports, as before membership changes were recorded
 * (a join leaves that feed, and its total, as they were). `member` rows come only when asked for.
 */
export const DEFAULT_ACTIVITY_ACTIONS: readonly ActivityAction[] = ['push', 'pull', 'import'];

/** What a `member` row's detail says: the member the change is about (the row's actor is who made it). */
export interface MemberDetail {
  user_id: string;
  email: string;
  change: 'joined' | 'removed' | 'role';
  /** The role held afterwards (absent for a removal). */
  role?: 'owner' | 'member';
}

/** The statements of a `member` row, for the membership change's own batch (Activity.memberRecord). */
export interface MemberRecord {
  insert: Stmt;
  prune: Stmt;
}

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

/**
 * The two classes of rows, in the exact words of the partial indexes of migration 0017 (activity_feed,
 * activity_member): SQLite uses a partial index only for a query whose WHERE names its condition.
 */
const MEMBER_ROWS = "action = 'member'";
const OTHER_ROWS = "action <> 'member'";

/** Whether `actions` is exactly one class (so that its index serves the query). */
function classWide(actions: readonly ActivityAction[]): boolean {
  const set = new Set(actions);
  if (set.size === 1 && set.has('member')) return true;
  return set.size === DEFAULT_ACTIVITY_ACTIONS.length && DEFAULT_ACTIVITY_ACTIONS.every((a) => set.has(a));
}

/** The condition on `action` for a list of actions: a class by its index's words, else the list itself (bound). */
function actionsWhere(actions: readonly ActivityAction[]): string {
  if (classWide(actions)) return actions.includes('member') ? MEMBER_ROWS : OTHER_ROWS;
  return `action IN (${actions.map(() => '?').join(', ') || "''"})`;
}

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
    when?: Stmt,
  ): Stmt[] {
    // The prune keeps the newest `retention` of the inserted row's class (member rows, or the others).
    const cls = action === 'member' ? MEMBER_ROWS : OTHER_ROWS;
    return [
      {
        sql: `INSERT INTO activity (repo_id, user_id, email, action, detail, created_at, commit_sha) SELECT ?, ?, ?, ?, ?, ?, ?
              WHERE (${when?.sql ?? '1'})`,
        args: [
          repoId,
          actor.userId,
          actor.email,
          action,
          detail ? JSON.stringify(detail) : null,
          Math.floor(this.clock.now() / 1000),
          commitSha ?? null,
          ...(when?.args ?? []),
        ],
      },
      {
        sql: `DELETE FROM activity WHERE repo_id = ? AND ${cls} AND id <= (
                SELECT id FROM activity WHERE repo_id = ? AND ${cls} ORDER BY id DESC LIMIT 1 OFFSET ?)`,
        args: [repoId, repoId, this.retention],
      },
    ];
  }

  /**
   * How to record a membership change made by `actor` (who joined, or the owner who removed the member or
   * changed their role) in the batch that makes the change: `insert` goes right after the change's
   * statement and adds the row only if that statement changed a row (`changes() > 0`), so it inserts one
   * row exactly when the change happened; `prune` goes anywhere after it. The legacy key is no user: its
   * changes are never recorded (docs/api.md "Activity"), so null.
   */
  memberRecord(repoId: string, actor: { userId: string; email: string } | null, detail: MemberDetail): MemberRecord | null {
    if (actor === null) return null;
    const d: Record<string, unknown> = { user_id: detail.user_id, email: detail.email, change: detail.change };
    if (detail.role !== undefined && detail.change !== 'removed') d.role = detail.role;
    const [insert, prune] = this.stmts(repoId, actor, 'member', d, undefined, { sql: 'changes() > 0' });
    return { insert: insert!, prune: prune! };
  }

  /**
   * Newest first, with the total kept. `actions`: only events of these actions (and `total` counts only
   * those, so paging works on the filtered feed); absent: the default feed (DEFAULT_ACTIVITY_ACTIONS).
   */
  async list(
    repoId: string,
    limit: number,
    offset: number,
    actions: readonly ActivityAction[] = DEFAULT_ACTIVITY_ACTIONS,
  ): Promise<{ events: ActivityEvent[]; total: number }> {
    const only = ` AND ${actionsWhere(actions)}`;
    const args = classWide(actions) ? [repoId] : [repoId, ...actions];
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
