/**
 * `--target worker-remote`: a deployed Worker's D1 database through Cloudflare's HTTP API
 * (admin/d1-http.ts), configured as wrangler is: CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN (a token
 * with D1 edit permission), CLOUDFLARE_API_BASE_URL when not the public API; the database is
 * `--database-id`, or the `database_id` of wrangler.toml's `[[d1_databases]]` entry with `binding = "DB"`
 * (the file in the current directory, as wrangler reads it).
 *
 * Pending migrations are applied first, as the Worker applies them on its first request. A repository's
 * content lives in its Durable Object, which only the Worker can reach: which repositories exist comes
 * from D1's registry, but their page counts are unknown here (null).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { D1Database } from '../lib/runtime/workers/d1.ts';
import { migrate } from '../lib/db/migrate.ts';
import { loadMigrations } from '../lib/runtime/node/open-db.ts';
import { AdminError, contextOver, registryRepos, type AdminContext } from './context.ts';
import { D1Http, type D1HttpConfig } from './d1-http.ts';

export const DEFAULT_API_BASE_URL = 'https://api.cloudflare.com/client/v4';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The id `wrangler.toml` ships with, until `wrangler d1 create` gives a real one. */
const PLACEHOLDER_ID = '00000000-0000-0000-0000-000000000000';

/**
 * The `database_id` of the `[[d1_databases]]` table whose `binding` is `DB`, or null. Reads the subset
 * of TOML wrangler.toml uses for it: `[[d1_databases]]` headers and `key = "string"` (or 'string') lines.
 */
export function d1DatabaseIdFromToml(text: string): string | null {
  const tables: Array<Record<string, string>> = [];
  let current: Record<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      current = /^\[\[\s*d1_databases\s*\]\]\s*(?:#.*)?$/.test(line) ? {} : null;
      if (current) tables.push(current);
      continue;
    }
    const kv = /^([A-Za-z0-9_-]+)\s*=\s*(?:"([^"\\]*)"|'([^']*)')\s*(?:#.*)?$/.exec(line);
    if (current && kv) current[kv[1]!] = kv[2] ?? kv[3]!;
  }
  return tables.find((t) => t.binding === 'DB')?.database_id ?? null;
}

/** The HTTP API's settings from the environment, `--database-id` and wrangler.toml; AdminError naming what is missing. */
export async function remoteConfig(env: NodeJS.ProcessEnv, cwd: string, databaseIdFlag?: string): Promise<D1HttpConfig> {
  const accountId = env.CLOUDFLARE_ACCOUNT_ID?.trim() ?? '';
  const apiToken = env.CLOUDFLARE_API_TOKEN?.trim() ?? '';
  const missing = [!accountId && 'CLOUDFLARE_ACCOUNT_ID', !apiToken && 'CLOUDFLARE_API_TOKEN'].filter(Boolean);
  if (missing.length > 0) {
    throw new AdminError(`--target worker-remote needs ${missing.join(' and ')} (the account id, and an API token with D1 edit permission)`);
  }
  if (!/^[0-9a-f]{32}$/i.test(accountId)) throw new AdminError('CLOUDFLARE_ACCOUNT_ID must be the 32 hexadecimal digits of an account id');

  const baseUrl = env.CLOUDFLARE_API_BASE_URL?.trim() || DEFAULT_API_BASE_URL;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new AdminError(`CLOUDFLARE_API_BASE_URL is not a URL: ${JSON.stringify(baseUrl)}`);
  }
  // The API token goes in every request: never in clear text past this machine.
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  if (!(url.protocol === 'https:' || (url.protocol === 'http:' && loopback))) {
    throw new AdminError('CLOUDFLARE_API_BASE_URL must be an https URL (http only on a loopback address)');
  }

  let databaseId = databaseIdFlag;
  if (databaseId === undefined) {
    const file = join(cwd, 'wrangler.toml');
    const text = await readFile(file, 'utf8').catch(() => null);
    const fromToml = text === null ? null : d1DatabaseIdFromToml(text);
    if (fromToml === null) throw new AdminError(`no D1 database: give --database-id, or run where wrangler.toml binds DB ([[d1_databases]] in ${file})`);
    if (fromToml === PLACEHOLDER_ID) {
      throw new AdminError(`${file} still has the placeholder database_id: put the id \`wrangler d1 create\` printed there, or give --database-id`);
    }
    databaseId = fromToml;
  }
  if (!UUID.test(databaseId)) throw new AdminError(`invalid D1 database id: ${JSON.stringify(databaseId)} (a UUID)`);
  const base = url.href.replace(/\/+$/, '');
  return {
    endpoint: `${base}/accounts/${accountId}/d1/database/${databaseId}/query`,
    apiToken,
    peer: `the Cloudflare API at ${base}`,
    refusedHint: `CLOUDFLARE_API_TOKEN needs D1 edit permission on account ${accountId}`,
    notFoundHint: `no D1 database ${databaseId} in account ${accountId}`,
  };
}

export async function openWorkerRemote(env: NodeJS.ProcessEnv, cwd: string, databaseIdFlag?: string): Promise<AdminContext> {
  const db = new D1Database(new D1Http(await remoteConfig(env, cwd, databaseIdFlag)));
  await migrate(db, await loadMigrations(), Math.floor(Date.now() / 1000));
  return contextOver('worker-remote', db, registryRepos(db, async () => null), () => db.close());
}
