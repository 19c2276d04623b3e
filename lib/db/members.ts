import type { Clock } from '../util/clock.ts';
import type { SqlDatabase as Database, Stmt } from './sql.ts';
import type { MemberRecord } from './activity.ts';

export type Role = 'owner' | 'member';

export interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  /** Unix seconds. */
  added_at: number;
}

export type RemoveResult = 'removed' | 'not_member' | 'last_owner';

/**
 * What a role change did: `changed`, or nothing because the member already had that role (`unchanged`), is
 * not a member (`not_member`), is the last owner and was to be demoted (`last_owner`), or was to be promoted
 * past the cap that applies (`refused`).
 */
export type SetRoleResult = { outcome: 'changed' | 'unchanged'; email: string } | { outcome: 'not_member' | 'last_owner' | 'refused' };

/** Repository membership: who belongs to which repository, in which role. */
export class Members {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  private now(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  async roleOf(repoId: string, userId: string): Promise<Role | null> {
    const r = await this.db.get<{ role: Role }>('SELECT role FROM members WHERE repo_id = ? AND user_id = ?', [
      repoId,
      userId,
    ]);
    return r ? r.role : null;
  }

  /** Members with their email, oldest first (ties in join order). */
  async list(repoId: string): Promise<MemberRow[]> {
    const rows = await this.db.all<MemberRow>(
      `SELECT m.user_id, u.email, m.role, m.added_at FROM members m JOIN users u ON u.id = m.user_id
       WHERE m.repo_id = ? ORDER BY m.added_at, m.rowid`,
      [repoId],
    );
    return rows.map((r) => ({ user_id: r.user_id, email: r.email, role: r.role, added_at: Number(r.added_at) }));
  }

  async hasOwner(repoId: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 AS x FROM members WHERE repo_id = ? AND role = 'owner' LIMIT 1", [repoId])) !== undefined;
  }

  /** Repositories a user belongs to, with the role. */
  async reposOf(userId: string): Promise<Array<{ repo_id: string; role: Role }>> {
    return this.db.all('SELECT repo_id, role FROM members WHERE user_id = ? ORDER BY repo_id', [userId]);
  }

  /**
   * Adds a member unless already one: an existing row (and its role) is kept. Returns the role the user
   * holds afterwards and whether a row was added. One atomic batch (no interactive transaction: the
   * hosted build's D1 has none), with `record`'s activity row when a row was added.
   */
  async add(repoId: string, userId: string, role: Role, record: MemberRecord | null = null): Promise<{ role: Role; added: boolean }> {
    const results = await this.db.batch(withRecord(insertStmt(repoId, userId, role, this.now()), record, [roleStmt(repoId, userId)]));
    return { role: results.at(-1)!.rows[0]!.role as Role, added: results[0]!.changes > 0 };
  }

  /**
   * Adds a member as `add` does, but only where `when` holds (a cap, lib/usecases/quota.ts): the condition is
   * evaluated by the inserting statement itself, so concurrent callers never pass it together. Null when
   * the user holds no role afterwards: the condition refused them.
   */
  async addIf(
    repoId: string,
    userId: string,
    role: Role,
    when: Stmt,
    record: MemberRecord | null = null,
  ): Promise<{ role: Role; added: boolean } | null> {
    const results = await this.db.batch(withRecord(insertStmt(repoId, userId, role, this.now(), when), record, [roleStmt(repoId, userId)]));
    const held = results.at(-1)!.rows[0]?.role as Role | undefined;
    return held === undefined ? null : { role: held, added: results[0]!.changes > 0 };
  }

  /**
   * Makes `userId` the owner of `repoId` only if the repository has no owner yet (atomic: two callers
   * cannot both claim it). Returns true when the caller now owns it.
   */
  async claimIfOwnerless(repoId: string, userId: string): Promise<boolean> {
    const [, after] = await this.db.batch([claimStmt(repoId, userId, this.now()), roleStmt(repoId, userId)]);
    return after!.rows[0]?.role === 'owner';
  }

  /**
   * Makes `userId` an owner of `repoId` whatever it held before: adds the row, or promotes a member (the
   * server's admin command, `admin repo owner`, which needs no owner and takes non-members too; the role
   * route uses setRole). One atomic batch. Returns the role held before, null when the user was not a member.
   */
  async makeOwner(repoId: string, userId: string): Promise<Role | null> {
    const [before] = await this.db.batch([
      roleStmt(repoId, userId),
      {
        sql: `INSERT INTO members (repo_id, user_id, role, added_at) VALUES (?, ?, 'owner', ?)
              ON CONFLICT (repo_id, user_id) DO UPDATE SET role = 'owner'`,
        args: [repoId, userId, this.now()],
      },
    ]);
    return (before!.rows[0]?.role as Role | undefined) ?? null;
  }

  /**
   * Statements that make `userId` the owner of each listed repository that has no owner, for the first
   * user's sign-in batch (lib/db/users.ts); `when` is an SQL condition that must also hold.
   */
  adoptStmts(repoIds: string[], userId: string, when: Stmt): Stmt[] {
    return repoIds.map((repoId) => claimStmt(repoId, userId, this.now(), when));
  }

  /**
   * Gives a member another role, in one statement: a demotion only while another owner remains (two owners
   * demoting each other at once leave one), a promotion only where `when` holds (the new owner's plan cap,
   * lib/usecases/quota.ts), both evaluated by the UPDATE itself. One atomic batch with the read of the outcome, and
   * `record`'s activity row when the role moved.
   */
  async setRole(repoId: string, userId: string, role: Role, when: Stmt | null = null, record: MemberRecord | null = null): Promise<SetRoleResult> {
    const update: Stmt = {
      sql: `UPDATE members SET role = ? WHERE repo_id = ? AND user_id = ? AND role <> ?
            AND (? = 'owner' OR (SELECT COUNT(*) FROM members WHERE repo_id = ? AND role = 'owner') > 1)
            AND (${when?.sql ?? '1'})`,
      args: [role, repoId, userId, role, role, repoId, ...(when?.args ?? [])],
    };
    const results = await this.db.batch(
      withRecord(update, record, [
        {
          sql: 'SELECT m.role, u.email FROM members m JOIN users u ON u.id = m.user_id WHERE m.repo_id = ? AND m.user_id = ?',
          args: [repoId, userId],
        },
      ]),
    );
    const row = results.at(-1)!.rows[0];
    if (!row) return { outcome: 'not_member' };
    if (results[0]!.changes > 0) return { outcome: 'changed', email: String(row.email) };
    if (row.role === role) return { outcome: 'unchanged', email: String(row.email) };
    return { outcome: role === 'member' ? 'last_owner' : 'refused' };
  }

  /**
   * Removes a member; refuses to remove the last owner. One atomic batch, so concurrent removals and
   * joins cannot interleave with it: the invite keys that exist at the removal are marked as never
   * readmitting the user (lib/db/invites.ts); `record`'s activity row goes in with the removal.
   */
  async remove(repoId: string, userId: string, record: MemberRecord | null = null): Promise<RemoveResult> {
    const results = await this.db.batch(
      withRecord(
        {
          sql: `DELETE FROM members WHERE repo_id = ? AND user_id = ?
                AND (role <> 'owner' OR (SELECT COUNT(*) FROM members WHERE repo_id = ? AND role = 'owner') > 1)`,
          args: [repoId, userId, repoId],
        },
        record,
        [
          // changes() is the DELETE's count, or the activity row's insert (one row exactly when the DELETE
          // removed one): the keys are marked only when a member was removed.
          {
            sql: 'INSERT OR IGNORE INTO invite_key_exclusions (key_id, user_id) SELECT id, ? FROM invite_keys WHERE repo_id = ? AND changes() > 0',
            args: [userId, repoId],
          },
          roleStmt(repoId, userId),
        ],
      ),
    );
    if (results[0]!.changes > 0) return 'removed';
    return results.at(-1)!.rows.length > 0 ? 'last_owner' : 'not_member';
  }
}

/**
 * A membership change's batch: the change's statement, `record`'s insert right after it (its condition reads
 * the change's `changes()`), then `rest`, then `record`'s prune. The change's result is first, the last of
 * `rest`'s is last.
 */
function withRecord(change: Stmt, record: MemberRecord | null, rest: Stmt[]): Stmt[] {
  if (!record) return [change, ...rest];
  const last = rest.at(-1)!;
  return [change, record.insert, ...rest.slice(0, -1), record.prune, last];
}

/** Inserts a member row unless the user has one (only where `when` holds, when given). */
function insertStmt(repoId: string, userId: string, role: Role, now: number, when?: Stmt): Stmt {
  if (!when) {
    return {
      sql: 'INSERT INTO members (repo_id, user_id, role, added_at) VALUES (?, ?, ?, ?) ON CONFLICT (repo_id, user_id) DO NOTHING',
      args: [repoId, userId, role, now],
    };
  }
  return {
    sql: `INSERT INTO members (repo_id, user_id, role, added_at) SELECT ?, ?, ?, ? WHERE (${when.sql})
          ON CONFLICT (repo_id, user_id) DO NOTHING`,
    args: [repoId, userId, role, now, ...(when.args ?? [])],
  };
}

/**
 * The owner row of a repository being created, written only where `when` holds (a cap, or that the
 * repository was just registered): the statement the creation paths of both builds make atomic with the
 * repository coming into existence (lib/repo/repos.ts `createOwned`). A row the user already had for the id
 * (left by a creation that died halfway) becomes this owner row.
 */
export function ownerStmt(repoId: string, userId: string, now: number, when: Stmt | null): Stmt {
  return {
    sql: `INSERT INTO members (repo_id, user_id, role, added_at) SELECT ?, ?, 'owner', ? WHERE (${when?.sql ?? '1'})
          ON CONFLICT (repo_id, user_id) DO UPDATE SET role = 'owner', added_at = excluded.added_at`,
    args: [repoId, userId, now, ...(when?.args ?? [])],
  };
}

const roleStmt = (repoId: string, userId: string): Stmt => ({
  sql: 'SELECT role FROM members WHERE repo_id = ? AND user_id = ?',
  args: [repoId, userId],
});

/** Makes the user owner of a repository that has no owner (and, with `when`, only if it holds). */
function claimStmt(repoId: string, userId: string, now: number, when?: Stmt): Stmt {
  return {
    sql: `INSERT INTO members (repo_id, user_id, role, added_at)
          SELECT ?, ?, 'owner', ? WHERE NOT EXISTS (SELECT 1 FROM members WHERE repo_id = ? AND role = 'owner')
          ${when ? `AND (${when.sql})` : ''}
          ON CONFLICT (repo_id, user_id) DO UPDATE SET role = 'owner'`,
    args: [repoId, userId, now, repoId, ...((when?.args as unknown[] | undefined) ?? [])] as Stmt['args'],
  };
}
