import { workersBindable, type SqlArgs, type SqlDatabase, type SqlRow, type Stmt } from '../../db/sql.ts';

/**
 * The hosted build's relational database: Cloudflare D1 through its Worker binding. D1 runs each statement
 * on its own and each `batch` as one transaction, which is all the service asks (lib/db/sql.ts). Values
 * are bound as D1 takes them: booleans as 0/1, bigints as numbers, bytes as ArrayBuffer.
 */

/** The part of the D1 binding used here (`@cloudflare/workers-types` D1Database). */
export interface D1Like {
  prepare(sql: string): D1StatementLike;
  batch(stmts: D1StatementLike[]): Promise<Array<{ results?: unknown[]; meta?: { changes?: number; last_row_id?: number } }>>;
}
export interface D1StatementLike {
  bind(...values: unknown[]): D1StatementLike;
  all(): Promise<{ results?: unknown[]; meta?: { changes?: number; last_row_id?: number } }>;
}


/** D1 returns blobs as arrays of numbers; the rest of the service expects bytes. */
function row(r: unknown): SqlRow {
  const out = r as SqlRow;
  for (const [k, v] of Object.entries(out)) if (Array.isArray(v)) out[k] = Uint8Array.from(v as number[]);
  return out;
}

export class D1Database implements SqlDatabase {
  constructor(private readonly d1: D1Like) {}

  private stmt(sql: string, args: SqlArgs = []): D1StatementLike {
    const s = this.d1.prepare(sql);
    return args.length > 0 ? s.bind(...args.map(workersBindable)) : s;
  }

  async all<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T[]> {
    const res = await this.stmt(sql, args).all();
    return (res.results ?? []).map(row) as T[];
  }

  async get<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T | undefined> {
    return (await this.all<T>(sql, args))[0];
  }

  async run(sql: string, args: SqlArgs = []): Promise<{ changes: number; lastId: bigint | undefined }> {
    const res = await this.stmt(sql, args).all();
    const last = res.meta?.last_row_id;
    return { changes: res.meta?.changes ?? 0, lastId: last === undefined || last === null ? undefined : BigInt(last) };
  }

  async batch(stmts: Stmt[]): Promise<Array<{ changes: number; rows: SqlRow[] }>> {
    if (stmts.length === 0) return [];
    const res = await this.d1.batch(stmts.map((s) => this.stmt(s.sql, s.args)));
    return res.map((r) => ({ changes: r.meta?.changes ?? 0, rows: (r.results ?? []).map(row) }));
  }

  async close(): Promise<void> {}
}
