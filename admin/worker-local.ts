/**
 * `--target worker-local`: the hosted build as `npm run dev:worker` keeps it on disk under
 * `$SERVICE_DATA_ROOT/workers/` (admin/dev-worker-storage.ts), whether or not it is running. Pending
 * migrations are applied first, as the Worker applies them on its first request, so a D1 no request has
 * reached yet works too.
 *
 * - dev:worker running: through it, never beside it. Two workerd processes on the same files break each
 *   other (workerd's SQLite has no busy timeout: a write meeting the other's lock fails as an internal
 *   error, the running Worker's requests too). Its admin channel (admin/dev-worker-channel.ts, found
 *   through `workers/admin-channel.json`) runs the SQL on the Worker's own D1 binding and asks each
 *   repository's own object for its page count.
 * - dev:worker stopped: the files themselves, one command at a time (`workers/admin.lock`). D1 through a
 *   workerd of this command's (Miniflare, a loopback port of its own) and D1Database as the Worker uses
 *   it. A repository's pages from its Durable Object's SQLite file, opened read-only with libSQL and read
 *   by the same git store over the same file layout as the object itself (lib/runtime/workers/store-fs.ts), counted from
 *   git as for the Node build; the object's code never runs here. Miniflare names the file (the object id
 *   `idFromName` gives, under the class's directory); a repository whose object was never made has no
 *   file, and no pages.
 */
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import Database from 'libsql';
import { D1Database, type D1Like } from '../lib/runtime/workers/d1.ts';
import type { DoStorageLike } from '../lib/runtime/workers/do-sql.ts';
import { migrate } from '../lib/db/migrate.ts';
import { loadMigrations } from '../lib/runtime/node/open-db.ts';
import { DoFs } from '../lib/runtime/workers/store-fs.ts';
import { GitStore } from '../lib/git/store.ts';
import { COMPATIBILITY_DATE, D1_DATABASE_ID, REPO_CLASS, devWorkerStorage, type DevWorkerStorage } from './dev-worker-storage.ts';
import { readAdminChannel, type AdminChannelInfo } from './dev-worker-channel.ts';
import { AdminError, contextOver, isDirectory, registryRepos, type AdminContext } from './context.ts';
import { D1Http } from './d1-http.ts';

/**
 * The Worker this command's workerd runs: nothing but the class name the `REPO` binding needs for
 * `idFromName`. No object of it is ever made.
 */
const SCRIPT = `import { DurableObject } from 'cloudflare:workers';
export class ${REPO_CLASS} extends DurableObject {}
export default { fetch() { return new Response(null, { status: 404 }); } };
`;

const now = () => Math.floor(Date.now() / 1000);

export async function openWorkerLocal(dataRoot: string): Promise<AdminContext> {
  const storage = devWorkerStorage(dataRoot);
  if (!(await isDirectory(storage.dir))) {
    throw new AdminError(
      `no local Workers data at ${storage.dir}: set SERVICE_DATA_ROOT to the one npm run dev:worker uses (it creates that directory when it starts)`,
    );
  }
  const channel = await readAdminChannel(storage.dir);
  if (channel && (await answers(channel))) return throughChannel(channel);
  const unlock = await lockFiles(storage.dir);
  try {
    return await onFiles(storage, unlock);
  } catch (e) {
    await unlock();
    throw e;
  }
}

/**
 * The files themselves, with dev:worker stopped; `unlock` once closed. D1 through a workerd of this
 * command's; page counts from the objects' files.
 */
async function onFiles(storage: DevWorkerStorage, unlock: () => Promise<void>): Promise<AdminContext> {
  // Loaded here only: the Node target (and the container's bundle, which has no dev dependencies) never needs it.
  const { Miniflare } = await import('miniflare');
  const mf = new Miniflare({
    modules: true,
    script: SCRIPT,
    compatibilityDate: COMPATIBILITY_DATE,
    d1Databases: { DB: D1_DATABASE_ID },
    durableObjects: { REPO: { className: REPO_CLASS, useSQLite: true } },
    d1Persist: storage.d1Persist,
    durableObjectsPersist: storage.durableObjectsPersist,
    host: '127.0.0.1',
    port: 0,
    // workerd's own output goes to stderr: stdout is the command's (`TOKEN=$(… token …)`).
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.pipe(process.stderr, { end: false });
      stderr.pipe(process.stderr, { end: false });
    },
  });
  try {
    await mf.ready;
    const db = new D1Database((await mf.getD1Database('DB')) as unknown as D1Like);
    await migrate(db, await loadMigrations(), now());
    const ns = await mf.getDurableObjectNamespace('REPO');
    const objectsDir = join(storage.durableObjectsPersist, `-${REPO_CLASS}`);
    const pageCount = async (id: string): Promise<number> => {
      const hex = String(await ns.idFromName(id).toString());
      return pagesInObject(join(objectsDir, `${hex}.sqlite`), id);
    };
    return contextOver('worker-local', db, registryRepos(db, pageCount), async () => {
      await mf.dispose();
      await unlock();
    });
  } catch (e) {
    await mf.dispose();
    throw e;
  }
}

/** How long a command waits for another one that has the files open (LOCK_FILE) before giving up. */
const LOCK_WAIT_MS = 60_000;
const LOCK_FILE = 'admin.lock';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Takes `workers/admin.lock` (this process's pid, created exclusively): two commands opening the files at
 * once would be two workerd processes on them, as bad as one beside dev:worker. Waits while another live
 * command holds it; a lock whose process is gone (killed) is cleared. Resolves to its release.
 */
async function lockFiles(dir: string): Promise<() => Promise<void>> {
  const file = join(dir, LOCK_FILE);
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await writeFile(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => rm(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = Number((await readFile(file, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
      await rm(file, { force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      throw new AdminError(`another admin command (pid ${holder}) has ${dir} open; try again when it has finished`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Where a repository object keeps its bare repository (lib/runtime/workers/repo-object.ts REPO_ROOT, which only workerd can load). */
const REPO_ROOT = '/repos';

/** Pages at head of repository `id` in the object file `file`, read only. */
async function pagesInObject(file: string, id: string): Promise<number> {
  if (!existsSync(file)) return 0;
  const conn = new Database(file, { readonly: true, timeout: 5000 });
  try {
    const made = conn.prepare("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'fs_files'").get();
    if (made === undefined) return 0;
    const git = new GitStore({ fs: new DoFs(readOnlyStorage(conn)).storeFs(), root: REPO_ROOT });
    return (await git.listFiles(id, await git.head(id))).size;
  } finally {
    conn.close();
  }
}

/** A libSQL connection as the part of a Durable Object's storage DoFs uses; refuses to write. */
function readOnlyStorage(conn: InstanceType<typeof Database>): DoStorageLike {
  return {
    sql: {
      exec(query: string, ...bindings: unknown[]) {
        const stmt = conn.prepare(query);
        // DoFs makes its tables when missing (CREATE … IF NOT EXISTS: nothing to do once the object made them).
        const rows = stmt.reader ? (stmt.all(...bindings) as unknown[]) : (stmt.run(...bindings), []);
        return { toArray: () => rows, rowsWritten: 0 };
      },
    },
    transactionSync() {
      throw new Error('read only');
    },
  };
}

const peerOf = (c: AdminChannelInfo) => `npm run dev:worker (pid ${c.pid}) at ${c.url}`;

/**
 * Whether the channel file's dev:worker is running: its channel answers. Refused connections mean a file
 * left behind by one that was killed; anything but an answer or a refusal is an error, not a reason to
 * open the files beside a dev:worker that may be running.
 */
async function answers(c: AdminChannelInfo): Promise<boolean> {
  try {
    const res = await fetch(`${c.url}/ping`, { headers: { authorization: `Bearer ${c.token}` }, signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
    return res.status === 204;
  } catch (e) {
    const code = ((e as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ECONNREFUSED') return false;
    throw new AdminError(`cannot reach ${peerOf(c)}: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`);
  }
}

async function throughChannel(c: AdminChannelInfo): Promise<AdminContext> {
  const peer = peerOf(c);
  const db = new D1Database(new D1Http({ endpoint: `${c.url}/d1/query`, apiToken: c.token, peer }));
  await migrate(db, await loadMigrations(), now());
  const pageCount = async (id: string): Promise<number> => {
    let res: Response;
    try {
      res = await fetch(`${c.url}/repos/pages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ repo: id }),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (e) {
      throw new AdminError(`cannot reach ${peer}: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`);
    }
    const body = (await res.json().catch(() => null)) as { page_count?: unknown; errors?: Array<{ message?: string }> } | null;
    if (res.status !== 200 || typeof body?.page_count !== 'number') {
      throw new AdminError(`${peer} could not count the pages of ${id} (HTTP ${res.status}: ${body?.errors?.[0]?.message ?? 'no answer'})`);
    }
    return body.page_count;
  };
  return contextOver('worker-local', db, registryRepos(db, pageCount), () => db.close());
}
