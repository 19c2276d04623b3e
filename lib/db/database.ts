import type { Client, InArgs, InStatement, Row } from '@libsql/client';

export type Stmt = { sql: string; args?: InArgs };

/**
 * The one handle on the relational database. Reads go straight to libSQL; every write goes through a
 * single queue, so overlapping transactions never meet ("database is locked" on a local file), and
 * multi-statement writes run as one atomic batch.
 */
export class Database {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Writes queued and not finished (the running one included), and when the running one started. */
  private queued = 0;
  private runningSince: number | null = null;

  constructor(readonly client: Client) {}

  async all<T = Row>(sql: string, args: InArgs = []): Promise<T[]> {
    const rs = await this.client.execute({ sql, args });
    return rs.rows as unknown as T[];
  }

  async get<T = Row>(sql: string, args: InArgs = []): Promise<T | undefined> {
    const rows = await this.all<T>(sql, args);
    return rows[0];
  }

  /** One write statement, queued. Returns rows affected and the last insert rowid. */
  run(sql: string, args: InArgs = []): Promise<{ changes: number; lastId: bigint | undefined }> {
    return this.enqueue(async () => {
      const rs = await this.client.execute({ sql, args });
      return { changes: rs.rowsAffected, lastId: rs.lastInsertRowid };
    });
  }

  /** Several write statements as one transaction, queued. */
  batch(stmts: Stmt[]): Promise<Array<{ changes: number; rows: Row[] }>> {
    if (stmts.length === 0) return Promise.resolve([]);
    return this.enqueue(async () => {
      const rs = await this.client.batch(stmts as InStatement[], 'write');
      return rs.map((r) => ({ changes: r.rowsAffected, rows: r.rows }));
    });
  }

  /**
   * An interactive write transaction, queued: `fn` may read and decide before writing. Everything it
   * wrote is committed together, or nothing is when it throws.
   */
  transaction<T>(fn: (tx: TxHandle) => Promise<T>): Promise<T> {
    return this.enqueue(async () => {
      const tx = await this.client.transaction('write');
      try {
        const handle: TxHandle = {
          all: async <R = Row>(sql: string, args: InArgs = []) =>
            (await tx.execute({ sql, args })).rows as unknown as R[],
          get: async <R = Row>(sql: string, args: InArgs = []) =>
            (await tx.execute({ sql, args })).rows[0] as unknown as R | undefined,
          run: async (sql: string, args: InArgs = []) => {
            const rs = await tx.execute({ sql, args });
            return { changes: rs.rowsAffected, lastId: rs.lastInsertRowid };
          },
        };
        const result = await fn(handle);
        await tx.commit();
        return result;
      } catch (e) {
        if (!tx.closed) await tx.rollback().catch(() => undefined);
        throw e;
      } finally {
        tx.close();
      }
    });
  }

  /** Waits for queued writes, then closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
    this.client.close();
  }

  /** The write queue now, for diagnostics: writes waiting or running, and how long the running one has run. */
  writeQueue(): { queued: number; runningMs: number | null } {
    return {
      queued: this.queued,
      runningMs: this.runningSince === null ? null : performance.now() - this.runningSince,
    };
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    const run = async () => {
      this.runningSince = performance.now();
      try {
        return await fn();
      } finally {
        this.runningSince = null;
        this.queued--;
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

export interface TxHandle {
  all<R = Row>(sql: string, args?: InArgs): Promise<R[]>;
  get<R = Row>(sql: string, args?: InArgs): Promise<R | undefined>;
  run(sql: string, args?: InArgs): Promise<{ changes: number; lastId: bigint | undefined }>;
}
