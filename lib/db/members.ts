import type { Clock } from '../clock.ts';
import type { Database, TxHandle } from './database.ts';

export type Role = 'owner' | 'member';

export interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  /** Unix seconds. */
  added_at: number;
}

export type RemoveResult = 'removed' | 'not_member' | 'last_owner';

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

  async hasOwner(repoId: string, tx?: TxHandle): Promise<boolean> {
    const q = "SELECT 1 AS x FROM members WHERE repo_id = ? AND role = 'owner' LIMIT 1";
    return (tx ? await tx.get(q, [repoId]) : await this.db.get(q, [repoId])) !== undefined;
  }

  /** Repositories a user belongs to, with the role. */
  async reposOf(userId: string): Promise<Array<{ repo_id: string; role: Role }>> {
    return this.db.all('SELECT repo_id, role FROM members WHERE user_id = ? ORDER BY repo_id', [userId]);
  }

  /**
   * Adds a member unless already one: an existing row (and its role) is kept. Returns the role the user
   * holds afterwards and whether a row was added.
   */
  async add(repoId: string, userId: string, role: Role): Promise<{ role: Role; added: boolean }> {
    return this.db.transaction(async (tx) => {
      const existing = await tx.get<{ role: Role }>('SELECT role FROM members WHERE repo_id = ? AND user_id = ?', [
        repoId,
        userId,
      ]);
      if (existing) return { role: existing.role, added: false };
      await tx.run('INSERT INTO members (repo_id, user_id, role, added_at) VALUES (?, ?, ?, ?)', [
        repoId,
        userId,
        role,
        this.now(),
      ]);
      return { role, added: true };
    });
  }

  /**
   * Makes `userId` the owner of `repoId` only if the repository has no owner yet (atomic: two callers
   * cannot both claim it). Returns true when the caller now owns it.
   */
  async claimIfOwnerless(repoId: string, userId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (await this.hasOwner(repoId, tx)) {
        const mine = await tx.get<{ role: Role }>('SELECT role FROM members WHERE repo_id = ? AND user_id = ?', [
          repoId,
          userId,
        ]);
        return mine?.role === 'owner';
      }
      await tx.run(
        `INSERT INTO members (repo_id, user_id, role, added_at) VALUES (?, ?, 'owner', ?)
         ON CONFLICT (repo_id, user_id) DO UPDATE SET role = 'owner'`,
        [repoId, userId, this.now()],
      );
      return true;
    });
  }

  /** Claims every listed repository that has no owner, in one transaction. Returns those claimed. */
  async adoptOwnerless(repoIds: string[], userId: string, tx: TxHandle): Promise<string[]> {
    const adopted: string[] = [];
    for (const repoId of repoIds) {
      if (await this.hasOwner(repoId, tx)) continue;
      await tx.run(
        `INSERT INTO members (repo_id, user_id, role, added_at) VALUES (?, ?, 'owner', ?)
         ON CONFLICT (repo_id, user_id) DO UPDATE SET role = 'owner'`,
        [repoId, userId, this.now()],
      );
      adopted.push(repoId);
    }
    return adopted;
  }

  /**
   * Removes a member; refuses to remove the last owner. Atomic against concurrent removals and joins:
   * the invite keys that exist at the removal are marked as never readmitting the user.
   */
  async remove(repoId: string, userId: string): Promise<RemoveResult> {
    return this.db.transaction(async (tx) => {
      const row = await tx.get<{ role: Role }>('SELECT role FROM members WHERE repo_id = ? AND user_id = ?', [
        repoId,
        userId,
      ]);
      if (!row) return 'not_member';
      if (row.role === 'owner') {
        const owners = await tx.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM members WHERE repo_id = ? AND role = 'owner'",
          [repoId],
        );
        if (Number(owners?.n ?? 0) <= 1) return 'last_owner';
      }
      await tx.run('DELETE FROM members WHERE repo_id = ? AND user_id = ?', [repoId, userId]);
      // Every key of the repository minted so far stops admitting this user (lib/db/invites.ts).
      await tx.run(
        'INSERT OR IGNORE INTO invite_key_exclusions (key_id, user_id) SELECT id, ? FROM invite_keys WHERE repo_id = ?',
        [userId, repoId],
      );
      return 'removed';
    });
  }
}
