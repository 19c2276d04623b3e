import type { SqlDatabase as Database } from './sql.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Splits a migration file into statements (statements end with `;` at the end of a line). */
export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .map((line) => line.replace(/--.*$/, ''))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Parses `0001_name.sql` style file names into ordered migrations. */
export function migrationsFromFiles(files: Array<{ name: string; sql: string }>): Migration[] {
  const out: Migration[] = [];
  for (const f of files) {
    const m = /^(\d+)_([A-Za-z0-9_-]+)\.sql$/.exec(f.name);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2]!, sql: f.sql });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.version === out[i - 1]!.version) {
      throw new Error(`duplicate migration version ${out[i]!.version}`);
    }
  }
  return out;
}

/** Applies every migration not applied yet, each in its own transaction. Returns the versions applied. */
export async function migrate(db: Database, migrations: Migration[], nowSeconds: number): Promise<number[]> {
  await db.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const done = new Set(
    (await db.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)),
  );
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    try {
      await db.batch([
        ...splitStatements(m.sql).map((sql) => ({ sql })),
        {
          sql: 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
          args: [m.version, m.name, nowSeconds],
        },
      ]);
    } catch (e) {
      // Another process (or Worker isolate) applied it meanwhile: its batch won, ours rolled back whole.
      const row = await db.get('SELECT 1 AS x FROM schema_migrations WHERE version = ?', [m.version]);
      if (row === undefined) throw e;
      continue;
    }
    applied.push(m.version);
  }
  return applied;
}
