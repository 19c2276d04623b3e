import type { Clock } from '../clock.ts';
import { PAT_PREFIX, randomToken, sha256Hex } from '../auth/tokens.ts';
import type { Database } from './database.ts';
import { HttpError } from '../http/errors.ts';

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
 * the row, so a revoked token stops resolving at once.
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
   * (`parentPatId`) never outlives it: its expiry is capped at the parent's, and with no `expiresInDays`
   * it is the parent's.
   */
  async create(
    userId: string,
    opts: { label?: string; expiresInDays?: number; parentPatId?: string } = {},
  ): Promise<{ pat: Pat; token: string }> {
    const token = randomToken(PAT_PREFIX);
    const now = this.now();
    const pat: Pat = { id: crypto.randomUUID(), label: opts.label ?? '', created_at: now };
    if (opts.expiresInDays !== undefined) pat.expires_at = now + opts.expiresInDays * DAY_SECONDS;
    if (opts.parentPatId !== undefined) {
      const parent = await this.db.get<{ expires_at: number | bigint | null }>(
        'SELECT expires_at FROM pats WHERE id = ? AND user_id = ?',
        [opts.parentPatId, userId],
      );
      // The parent authenticated this very request; gone since means revoked meanwhile.
      if (!parent) throw new HttpError(401, 'invalid token');
      if (parent.expires_at !== null) {
        const cap = Number(parent.expires_at);
        if (pat.expires_at === undefined || pat.expires_at > cap) pat.expires_at = cap;
      }
    }
    await this.db.run(
      'INSERT INTO pats (id, user_id, token_hash, label, created_at, expires_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, NULL)',
      [pat.id, userId, await sha256Hex(token), pat.label, pat.created_at, pat.expires_at ?? null],
    );
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

  /** Deletes a user's PAT. False when there is no such PAT, or it belongs to someone else. */
  async revoke(userId: string, patId: string): Promise<boolean> {
    const { changes } = await this.db.run('DELETE FROM pats WHERE id = ? AND user_id = ?', [patId, userId]);
    return changes > 0;
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
