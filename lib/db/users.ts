import type { Clock } from '../util/clock.ts';
import type { SqlDatabase as Database, Stmt } from './sql.ts';
import type { Members } from './members.ts';

/**
 * A real user, keyed by (issuer, subject): created at the first sign-in through the identity provider, or
 * by the server's admin command (`admin user add`, issuer ADMIN_ISSUER, subject the lowercased email).
 */
export interface User {
  /** UUID v4. */
  id: string;
  issuer: string;
  subject: string;
  /** Lowercased. */
  email: string;
  name: string;
  /** Unix seconds. */
  created_at: number;
  /** Unix seconds; present while the operator has the user disabled (no session, PAT or sign-in works). */
  disabled_at?: number;
}

/**
 * The issuer of users made by the server's admin command. An identity provider's issuer is always stored
 * with a scheme (lib/auth/idp.ts normalizeIssuer), so no provider can ever mint an identity in this one.
 */
export const ADMIN_ISSUER = 'admin';

/** What a verified ID token says about its holder. */
export interface IdpProfile {
  issuer: string;
  subject: string;
  email: string;
  name: string;
}

export interface UpsertResult {
  user: User;
  /** This sign-in created the user row. */
  created: boolean;
  /** This sign-in created the very first user row of the service. */
  first: boolean;
}

type UserRow = Omit<User, 'created_at' | 'disabled_at'> & { created_at: number | bigint; disabled_at: number | bigint | null };

const toUser = (r: UserRow): User => {
  const user: User = {
    id: r.id,
    issuer: r.issuer,
    subject: r.subject,
    email: r.email,
    name: r.name,
    created_at: Number(r.created_at),
  };
  if (r.disabled_at !== null && r.disabled_at !== undefined) user.disabled_at = Number(r.disabled_at);
  return user;
};

const COLUMNS = 'id, issuer, subject, email, name, created_at, disabled_at';
/** Ids bound per statement of a lookup by many ids (D1 binds at most 100 parameters). */
const ID_CHUNK = 90;

/** Holds only when the batch it runs in inserted the one and only user row (`id`). */
const firstUserStmt = (id: string): Stmt => ({
  sql: '(SELECT COUNT(*) FROM users) = 1 AND EXISTS (SELECT 1 FROM users WHERE id = ?)',
  args: [id],
});

/** User accounts. */
export class Users {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async byId(id: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = ?`, [id]);
    return r ? toUser(r) : undefined;
  }

  /** Those of `ids` that name a user who is not disabled (the rest were deleted or are disabled). */
  async activeIds(ids: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += ID_CHUNK) {
      const part = ids.slice(i, i + ID_CHUNK);
      const rows = await this.db.all<{ id: string }>(
        `SELECT id FROM users WHERE disabled_at IS NULL AND id IN (${part.map(() => '?').join(', ')})`,
        [...part],
      );
      for (const r of rows) out.add(String(r.id));
    }
    return out;
  }

  async byIssuerSubject(issuer: string, subject: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>(`SELECT ${COLUMNS} FROM users WHERE issuer = ? AND subject = ?`, [
      issuer,
      subject,
    ]);
    return r ? toUser(r) : undefined;
  }

  /** Whether any user exists (a hint only: `upsert` decides "first user" inside its transaction). */
  async any(): Promise<boolean> {
    return (await this.db.get('SELECT 1 AS x FROM users LIMIT 1')) !== undefined;
  }

  /**
   * Creates the user for (issuer, subject) or refreshes its email (lowercased) and name, in one atomic
   * batch. When this call creates the very first user row of the service, the same batch makes the user
   * owner of every repository of `adoptIfFirst` that has no owner (the batch decides "first" itself, so two
   * simultaneous first sign-ins cannot both adopt); `adopted` lists those.
   */
  async upsert(profile: IdpProfile, adoptIfFirst: string[] = [], members?: Members): Promise<UpsertResult & { adopted: string[] }> {
    const email = profile.email.toLowerCase();
    const id = crypto.randomUUID();
    const now = Math.floor(this.clock.now() / 1000);
    const adopt = members ? members.adoptStmts(adoptIfFirst, id, firstUserStmt(id)) : [];
    const results = await this.db.batch([
      {
        sql: `INSERT INTO users (id, issuer, subject, email, name, created_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, name = excluded.name`,
        args: [id, profile.issuer, profile.subject, email, profile.name, now],
      },
      { sql: `SELECT ${COLUMNS}, (SELECT COUNT(*) FROM users) AS total FROM users WHERE issuer = ? AND subject = ?`, args: [profile.issuer, profile.subject] },
      ...adopt,
    ]);
    const row = results[1]!.rows[0] as unknown as UserRow & { total: number | bigint };
    const created = row.id === id;
    return {
      user: toUser(row),
      created,
      first: created && Number(row.total) === 1,
      adopted: adoptIfFirst.filter((_, i) => results[2 + i]!.changes > 0),
    };
  }

  /** Every user with this email (lowercased; several issuers may share one), oldest first. */
  async byEmail(email: string): Promise<User[]> {
    const rows = await this.db.all<UserRow>(`SELECT ${COLUMNS} FROM users WHERE email = ? ORDER BY created_at, rowid`, [
      email.toLowerCase(),
    ]);
    return rows.map(toUser);
  }

  /** Every user, oldest first. */
  async list(): Promise<User[]> {
    return (await this.db.all<UserRow>(`SELECT ${COLUMNS} FROM users ORDER BY created_at, rowid`)).map(toUser);
  }

  /**
   * Creates a user unless one with this email (lowercased) exists under any issuer: the admin command's
   * `user add`. One atomic batch; like `upsert`, when it creates the very first user row of the service the
   * same batch makes the user owner of every repository of `adoptIfFirst` that has no owner. `existing` is
   * the account that already holds the email when nothing was created.
   */
  async addUnlessEmailTaken(
    profile: IdpProfile,
    adoptIfFirst: string[] = [],
    members?: Members,
  ): Promise<{ created: true; user: User; first: boolean; adopted: string[] } | { created: false; existing: User }> {
    const email = profile.email.toLowerCase();
    const id = crypto.randomUUID();
    const now = Math.floor(this.clock.now() / 1000);
    const adopt = members ? members.adoptStmts(adoptIfFirst, id, firstUserStmt(id)) : [];
    const results = await this.db.batch([
      {
        sql: `INSERT INTO users (id, issuer, subject, email, name, created_at)
              SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM users WHERE email = ?)
              ON CONFLICT (issuer, subject) DO NOTHING`,
        args: [id, profile.issuer, profile.subject, email, profile.name, now, email],
      },
      { sql: 'SELECT COUNT(*) AS total FROM users' },
      ...adopt,
      { sql: `SELECT ${COLUMNS} FROM users WHERE id = ? OR email = ? ORDER BY id <> ?, created_at, rowid LIMIT 1`, args: [id, email, id] },
    ]);
    const row = results[results.length - 1]!.rows[0] as unknown as UserRow | undefined;
    if (!row) throw new Error(`user ${email}: neither created nor found`);
    if (results[0]!.changes === 0 || row.id !== id) return { created: false, existing: toUser(row) };
    return {
      created: true,
      user: toUser(row),
      first: Number(results[1]!.rows[0]!.total) === 1,
      adopted: adoptIfFirst.filter((_, i) => results[2 + i]!.changes > 0),
    };
  }

  /**
   * Disables (`at`, Unix seconds) or re-enables (null) a user. Disabling an already disabled user keeps its
   * first `disabled_at`. Returns the user afterwards, or undefined when there is no such user.
   */
  async setDisabled(id: string, at: number | null): Promise<User | undefined> {
    const [, after] = await this.db.batch([
      at === null
        ? { sql: 'UPDATE users SET disabled_at = NULL WHERE id = ?', args: [id] }
        : { sql: 'UPDATE users SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL', args: [at, id] },
      { sql: `SELECT ${COLUMNS} FROM users WHERE id = ?`, args: [id] },
    ]);
    const row = after!.rows[0] as unknown as UserRow | undefined;
    return row ? toUser(row) : undefined;
  }
}
