import type { Clock } from '../util/clock.ts';
import type { SqlDatabase as Database } from './sql.ts';
import { INVITE_PREFIX, randomToken, sha256Hex } from '../auth/tokens.ts';

export interface InviteKey {
  id: string;
  label: string;
  /** Unix seconds. */
  created_at: number;
  /** Unix seconds; seven days after minting. */
  expires_at: number;
}

export const INVITE_LIFETIME_SECONDS = 7 * 24 * 60 * 60;

type Row = InviteKey & { repo_id: string };
const toKey = (r: Row): InviteKey => ({
  id: String(r.id),
  label: String(r.label),
  created_at: Number(r.created_at),
  expires_at: Number(r.expires_at),
});

/**
 * Invite keys: the token is shown once, at mint; only its SHA-256 hex is stored. Revoking deletes the
 * row, so a revoked key is as unknown as one that never existed.
 */
export class Invites {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  private now(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  async mint(repoId: string, createdBy: string, label: string): Promise<{ key: InviteKey; token: string }> {
    const token = randomToken(INVITE_PREFIX);
    const now = this.now();
    const key: InviteKey = { id: crypto.randomUUID(), label, created_at: now, expires_at: now + INVITE_LIFETIME_SECONDS };
    await this.db.run(
      'INSERT INTO invite_keys (id, repo_id, token_hash, label, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [key.id, repoId, await sha256Hex(token), label, createdBy, key.created_at, key.expires_at],
    );
    return { key, token };
  }

  /** A repository's keys, newest first, expired ones included. */
  async list(repoId: string): Promise<InviteKey[]> {
    const rows = await this.db.all<Row>(
      `SELECT id, repo_id, label, created_at, expires_at FROM invite_keys WHERE repo_id = ?
       ORDER BY created_at DESC, rowid DESC`,
      [repoId],
    );
    return rows.map(toKey);
  }

  /** Deletes a key of this repository by its id. False when there is no such key here. */
  async revoke(repoId: string, keyId: string): Promise<boolean> {
    const [deleted] = await this.db.batch([
      { sql: 'DELETE FROM invite_keys WHERE id = ? AND repo_id = ?', args: [keyId, repoId] },
      {
        sql: 'DELETE FROM invite_key_exclusions WHERE key_id = ? AND NOT EXISTS (SELECT 1 FROM invite_keys WHERE id = ?)',
        args: [keyId, keyId],
      },
    ]);
    return deleted!.changes > 0;
  }

  /** Whether the key was minted before `userId` was removed from its repository (it never readmits them). */
  async excludes(keyId: string, userId: string): Promise<boolean> {
    const r = await this.db.get('SELECT 1 AS x FROM invite_key_exclusions WHERE key_id = ? AND user_id = ?', [keyId, userId]);
    return r !== undefined;
  }

  /** The key a token names, with its repository and whether it has expired; null when unknown or revoked. */
  async find(token: string): Promise<{ key: InviteKey; repoId: string; expired: boolean } | null> {
    const row = await this.db.get<Row>(
      'SELECT id, repo_id, label, created_at, expires_at FROM invite_keys WHERE token_hash = ?',
      [await sha256Hex(token)],
    );
    if (!row) return null;
    return { key: toKey(row), repoId: String(row.repo_id), expired: this.now() >= Number(row.expires_at) };
  }
}
