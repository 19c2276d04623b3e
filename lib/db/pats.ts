import type { Clock } from '../util/clock.ts';
import { PAT_PREFIX, randomToken, sha256Hex } from '../auth/tokens.ts';
import type { SqlDatabase as Database } from './sql.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';

/** A personal access token as listed: never the token, never its hash. Times are Unix seconds. */
export interface Pat {
  id: string;
  label: string;
  created_at: number;
  expires_at?: number;
  last_used_at?: number;
}

/** A PAT found by its token, with the user it acts for. */
export interface ResolvedPat {
  pat: Pat;
  user: { id: string; email: string; name: string };
}

/** `last_used_at` is written at most this often per PAT. */
export const LAST_USED_RESOLUTION_SECONDS = 60;

const DAY_SECONDS = 24 * 60 * 60;

type PatRow = {
  id: string;
  label: string;
  created_at: number | bigint;
  expires_at: number | bigint | null;
  last_used_at: number | bigint | null;
};

function toPat(r: PatRow): Pat {
  const pat: Pat = { id: r.id, label: r.label, created_at: Number(r.created_at) };
  if (r.expires_at !== null) pat.expires_at = Number(r.expires_at);
  if (r.last_used_at !== null) pat.last_used_at = Number(r.last_used_at);
  return pat;
}

/**
 * Personal access tokens: a token is shown once, at mint; only its SHA-256 hex is stored. Revoking deletes
 * the row, and the rows of every PAT minted with it, so a revoked token and its descendants stop resolving
 * at once.
 */
export class Pats {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  private now(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  /**
   * Mints a PAT for a user; `expiresInDays` absent = no expiry. A PAT minted with another PAT
   * (`parentPatId`) never outlives it: its expiry is capped at the parent's (with no `expiresInDays` it is
   * the parent's), and it records the parent, whose revocation revokes it too. It is written only while the
   * parent exists, by the inserting statement itself: a parent revoked meanwhile leaves nothing (401).
   */
  async create(
    userId: string,
    opts: { label?: string; expiresInDays?: number; parentPatId?: string } = {},
  ): Promise<{ pat: Pat; token: string }> {
    const token = randomToken(PAT_PREFIX);
    const now = this.now();
    const pat: Pat = { id: crypto.randomUUID(), label: opts.label ?? '', created_at: now };
    const own = opts.expiresInDays === undefined ? null : now + opts.expiresInDays * DAY_SECONDS;
    const hash = await sha256Hex(token);
    if (opts.parentPatId === undefined) {
      await this.db.run(
        'INSERT INTO pats (id, user_id, token_hash, label, created_at, expires_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, NULL)',
        [pat.id, userId, hash, pat.label, now, own],
      );
      if (own !== null) pat.expires_at = own;
      return { pat, token };
    }
    const [, minted] = await this.db.batch([
      {
        // The earlier of the two expiries, NULL being never.
        sql: `INSERT INTO pats (id, user_id, token_hash, label, created_at, expires_at, last_used_at, parent_id)
              SELECT ?, ?, ?, ?, ?,
                     CASE WHEN p.expires_at IS NULL THEN ? WHEN ? IS NULL OR ? > p.expires_at THEN p.expires_at ELSE ? END,
                     NULL, p.id
              FROM pats p WHERE p.id = ? AND p.user_id = ?`,
        args: [pat.id, userId, hash, pat.label, now, own, own, own, own, opts.parentPatId, userId],
      },
      { sql: 'SELECT expires_at FROM pats WHERE id = ?', args: [pat.id] },
    ]);
    const row = minted!.rows[0] as { expires_at: number | bigint | null } | undefined;
    // The parent authenticated this very request; gone since means revoked meanwhile.
    if (!row) throw refuse(R.invalid_token);
    if (row.expires_at !== null) pat.expires_at = Number(row.expires_at);
    return { pat, token };
  }

  /** A user's PATs, newest first (ties: most recently minted first). */
  async list(userId: string): Promise<Pat[]> {
    const rows = await this.db.all<PatRow>(
      `SELECT id, label, created_at, expires_at, last_used_at FROM pats WHERE user_id = ?
       ORDER BY created_at DESC, rowid DESC`,
      [userId],
    );
    return rows.map(toPat);
  }

  /**
   * Deletes a user's PAT and every PAT minted with it, transitively, in one statement: none of them
   * authenticates from then on, and a PAT minted concurrently with one of them either is deleted with it or
   * is never written (create). The ids deleted (the PAT's first), none when there is no such PAT or it
   * belongs to someone else.
   */
  async revoke(userId: string, patId: string): Promise<string[]> {
    const [result] = await this.db.batch([
      {
        sql: `WITH RECURSIVE revoked (id) AS (
                SELECT id FROM pats WHERE id = ? AND user_id = ?
                UNION SELECT p.id FROM pats p JOIN revoked r ON p.parent_id = r.id
              )
              DELETE FROM pats WHERE id IN (SELECT id FROM revoked) RETURNING id`,
        args: [patId, userId],
      },
    ]);
    const ids = (result?.rows ?? []).map((r) => String(r.id));
    return ids.includes(patId) ? [patId, ...ids.filter((id) => id !== patId)] : ids;
  }

  /** Those of `ids` that name a PAT still stored (revoked ones are deleted; expiry is not looked at). */
  async existingIds(ids: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += 90) {
      const part = ids.slice(i, i + 90);
      const rows = await this.db.all<{ id: string }>(`SELECT id FROM pats WHERE id IN (${part.map(() => '?').join(', ')})`, [...part]);
      for (const r of rows) out.add(String(r.id));
    }
    return out;
  }

  /**
   * The live PAT a token names, or null (unknown, revoked, expired, or its user is disabled). Refreshes
   * `last_used_at` when it is unset or at least a minute old.
   */
  async resolve(token: string): Promise<ResolvedPat | null> {
    const row = await this.db.get<PatRow & { user_id: string; email: string; name: string }>(
      `SELECT p.id, p.label, p.created_at, p.expires_at, p.last_used_at, u.id AS user_id, u.email, u.name
       FROM pats p JOIN users u ON u.id = p.user_id WHERE p.token_hash = ? AND u.disabled_at IS NULL`,
      [await sha256Hex(token)],
    );
    if (!row) return null;
    const now = this.now();
    if (row.expires_at !== null && now >= Number(row.expires_at)) return null;
    const pat = toPat(row);
    if (pat.last_used_at === undefined || now - pat.last_used_at >= LAST_USED_RESOLUTION_SECONDS) {
      // The condition is repeated in SQL so that concurrent requests of one PAT write at most once.
      const { changes } = await this.db.run(
        'UPDATE pats SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)',
        [now, pat.id, now - LAST_USED_RESOLUTION_SECONDS],
      );
      if (changes > 0) pat.last_used_at = now;
    }
    return { pat, user: { id: row.user_id, email: row.email, name: row.name } };
  }
}
