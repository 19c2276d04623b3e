/**
 * The relational database as the service uses it, whatever backs it: libSQL on a local file (Node), D1
 * (the hosted build's accounts, tokens and membership) or a Durable Object's own SQLite (the hosted build's
 * per-repository index). Multi-statement writes are one atomic `batch` — never an interactive transaction,
 * which D1 does not have.
 */

/** A bound value: what every backend stores (bigints are read back as numbers where they fit). */
export type SqlValue = string | number | bigint | boolean | null | Uint8Array | ArrayBuffer;
export type SqlArgs = SqlValue[];
export type Stmt = { sql: string; args?: SqlArgs };
export type SqlRow = Record<string, unknown>;

export interface SqlDatabase {
  all<T = SqlRow>(sql: string, args?: SqlArgs): Promise<T[]>;
  get<T = SqlRow>(sql: string, args?: SqlArgs): Promise<T | undefined>;
  /** One write statement. */
  run(sql: string, args?: SqlArgs): Promise<{ changes: number; lastId: bigint | undefined }>;
  /**
   * Several statements as one atomic transaction; each result's rows (for SELECTs) and change count.
   * `durable: false` is for rows that can be made again from what is durable (the full-text rows): the
   * batch resolves once committed, without waiting for the disk (where the backend waits at all); a crash
   * may lose it, never part of it, and the next flush covers it.
   */
  batch(stmts: Stmt[], opts?: { durable?: boolean }): Promise<Array<{ changes: number; rows: SqlRow[] }>>;
  close(): Promise<void>;
}

/**
 * A value as the Workers runtime's SQL bindings (D1, Durable Object storage) take it: booleans as 0/1,
 * bigints as numbers, bytes as an ArrayBuffer of exactly their own length.
 */
export function workersBindable(v: SqlValue): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Uint8Array) return v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
  return v;
}
