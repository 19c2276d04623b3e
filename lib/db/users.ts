import type { Clock } from '../clock.ts';
import type { Database, TxHandle } from './database.ts';

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
   * Creates the user for (issuer, subject) or refreshes its email (lowercased) and name, in one queued
   * transaction. When this call creates the very first user row, `onFirstUser` runs inside the same
   * transaction (the write queue serialises transactions, so two simultaneous first sign-ins cannot both
   * see an empty table); if it throws, nothing is written.
   */
  async upsert(
    profile: IdpProfile,
    onFirstUser?: (userId: string, tx: TxHandle) => Promise<unknown>,
  ): Promise<UpsertResult> {
    const email = profile.email.toLowerCase();
    return this.db.transaction(async (tx) => {
      const existing = await tx.get<UserRow>(`SELECT ${COLUMNS} FROM users WHERE issuer = ? AND subject = ?`, [
        profile.issuer,
        profile.subject,
      ]);
      if (existing) {
        if (existing.email !== email || existing.name !== profile.name) {
          await tx.run('UPDATE users SET email = ?, name = ? WHERE id = ?', [email, profile.name, existing.id]);
        }
        return { user: { ...toUser(existing), email, name: profile.name }, created: false, first: false };
      }
      const first = (await tx.get('SELECT 1 AS x FROM users LIMIT 1')) === undefined;
      const user: User = {
        id: crypto.randomUUID(),
        issuer: profile.issuer,
        subject: profile.subject,
        email,
        name: profile.name,
        created_at: Math.floor(this.clock.now() / 1000),
      };
      await tx.run(
        'INSERT INTO users (id, issuer, subject, email, name, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        [user.id, user.issuer, user.subject, user.email, user.name, user.created_at],
      );
      if (first && onFirstUser) await onFirstUser(user.id, tx);
      return { user, created: true, first };
    });
  }
}
