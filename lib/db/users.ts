import type { Clock } from '../clock.ts';
import type { Database, Stmt } from './database.ts';
import type { Members } from './members.ts';

/** A real user: created at the first sign-in through the identity provider, keyed by (issuer, subject). */
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
}

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

type UserRow = Omit<User, 'created_at'> & { created_at: number | bigint };

const toUser = (r: UserRow): User => ({
  id: r.id,
  issuer: r.issuer,
  subject: r.subject,
  email: r.email,
  name: r.name,
  created_at: Number(r.created_at),
});

const COLUMNS = 'id, issuer, subject, email, name, created_at';

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
    // Holds only when this batch inserted the one and only user row.
    const first: Stmt = { sql: '(SELECT COUNT(*) FROM users) = 1 AND EXISTS (SELECT 1 FROM users WHERE id = ?)', args: [id] };
    const adopt = members ? members.adoptStmts(adoptIfFirst, id, first) : [];
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
}
