/**
 * The admin command against a deployed Worker's D1 (`--target worker-remote`), through Cloudflare's D1 HTTP
 * API. The real API cannot be reached from here: a loopback stand-in speaks it over a real libSQL file
 * (test/helpers/cloudflare-d1-api.ts). The command runs as an operator runs it (its own process, configured
 * by CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN, CLOUDFLARE_API_BASE_URL and --database-id), and every
 * effect is checked in that database through the same lib/db modules the Worker uses: the token it mints
 * is one the Worker's PAT lookup accepts, a disabled user's token stops resolving.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { d1DatabaseIdFromToml } from '../admin/worker-remote.ts';
import { clean } from '../client/output.ts';
import { systemClock } from '../lib/util/clock.ts';
import { loadMigrations } from '../lib/runtime/node/open-db.ts';
import { Pats } from '../lib/db/pats.ts';
import { Users } from '../lib/db/users.ts';
import { TSX_LOADER, runNode, type Run } from './helpers/admin.ts';
import { startD1Api, type D1ApiStandIn } from './helpers/cloudflare-d1-api.ts';
import { PROJECT_ROOT } from './reliability/helpers/server-process.ts';

const ACCOUNT = '0123456789abcdef0123456789abcdef';
const DATABASE = '6f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f';
const API_TOKEN = 'cf-api-token-for-the-stand-in';
const HOSTILE = 'Mallory\u001b]0;owned\u0007\u001b[2J\nbob@example.com  Bob  admin  active';

let dir: string;
let api: D1ApiStandIn;

function env(over: Record<string, string> = {}): Record<string, string> {
  return { CLOUDFLARE_ACCOUNT_ID: ACCOUNT, CLOUDFLARE_API_TOKEN: API_TOKEN, CLOUDFLARE_API_BASE_URL: api.baseUrl, ...over };
}

const admin = (...args: string[]): Promise<Run> =>
  runNode(['--import', TSX_LOADER, 'admin/main.ts', '--target', 'worker-remote', '--database-id', DATABASE, ...args], env());

function expectRun(r: Run, code: number, stdout: string, stderr = '') {
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code, stdout, stderr });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kr-admin-remote-'));
  api = await startD1Api(join(dir, 'd1.sqlite'), { accountId: ACCOUNT, databaseId: DATABASE, token: API_TOKEN });
});

afterAll(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("wrangler.toml's database id", () => {
  it("reads the DB binding's database_id, and the project's own file still has the placeholder", async () => {
    expect(d1DatabaseIdFromToml(await readFile(join(PROJECT_ROOT, 'wrangler.toml'), 'utf8'))).toBe('00000000-0000-0000-0000-000000000000');
    const toml = [
      'name = "kr"',
      '[[d1_databases]]',
      'binding = "OTHER"',
      'database_id = "11111111-1111-4111-8111-111111111111"',
      '',
      '[[d1_databases]]  # the service',
      "database_name = 'kr'",
      'database_id = "22222222-2222-4222-8222-222222222222"   # from wrangler d1 create',
      'binding = "DB"',
      '[vars]',
      'database_id = "33333333-3333-4333-8333-333333333333"',
    ].join('\n');
    expect(d1DatabaseIdFromToml(toml)).toBe('22222222-2222-4222-8222-222222222222');
    expect(d1DatabaseIdFromToml('[[d1_databases]]\nbinding = "OTHER"\ndatabase_id = "x"\n')).toBeNull();
    expect(d1DatabaseIdFromToml('')).toBeNull();
  });
});

describe('admin --target worker-remote, through the D1 HTTP API', () => {
  const ids: Record<string, string> = {};
  const tokens: Record<string, string> = {};
  const pats = () => new Pats(api.db, systemClock);

  it('refuses a missing account or token, a placeholder or malformed database id, a refused token, an unknown database, an unreachable or clear-text API', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const run = (args: string[], e: Record<string, string>) => runNode(['--import', TSX_LOADER, 'admin/main.ts', '--target', 'worker-remote', ...args], e);
    const withId = ['--database-id', DATABASE, 'user', 'list'];
    const [missing, placeholder, malformed, refused, unknown, unreachable, clearText] = await Promise.all([
      run(['user', 'list'], { CLOUDFLARE_ACCOUNT_ID: ACCOUNT }),
      run(['user', 'list'], env()),
      run(['user', 'list', '--database-id', 'kr', '--json'], env()),
      run(withId, env({ CLOUDFLARE_API_TOKEN: 'not-the-token' })),
      run(['--database-id', '99999999-9999-4999-8999-999999999999', 'user', 'list'], env()),
      run(withId, env({ CLOUDFLARE_API_BASE_URL: `http://127.0.0.1:${deadPort}/client/v4` })),
      run(withId, env({ CLOUDFLARE_API_BASE_URL: 'http://api.example.com/client/v4' })),
    ]);
    expectRun(missing, 1, '', 'error: --target worker-remote needs CLOUDFLARE_API_TOKEN (the account id, and an API token with D1 edit permission)\n');
    expectRun(
      placeholder,
      1,
      '',
      `error: ${join(PROJECT_ROOT, 'wrangler.toml')} still has the placeholder database_id: put the id \`wrangler d1 create\` printed there, or give --database-id\n`,
    );
    expectRun(malformed, 2, '', `${JSON.stringify({ error: "option '--database-id <id>' argument 'kr' is invalid. must be a D1 database id (a UUID)" })}\n`);
    expectRun(
      refused,
      1,
      '',
      `error: the Cloudflare API at ${api.baseUrl} refused the token (HTTP 403: Authentication error (code 10000)): CLOUDFLARE_API_TOKEN needs D1 edit permission on account ${ACCOUNT}\n`,
    );
    expectRun(
      unknown,
      1,
      '',
      `error: the Cloudflare API at ${api.baseUrl}: not found (HTTP 404: Could not route to the database (code 7404)): no D1 database 99999999-9999-4999-8999-999999999999 in account ${ACCOUNT}\n`,
    );
    expectRun(
      unreachable,
      1,
      '',
      `error: cannot reach the Cloudflare API at http://127.0.0.1:${deadPort}/client/v4: connect ECONNREFUSED 127.0.0.1:${deadPort}\n`,
    );
    expectRun(clearText, 1, '', 'error: CLOUDFLARE_API_BASE_URL must be an https URL (http only on a loopback address)\n');
    // Only the requests that got through were answered; none of them wrote anything.
    expect(await api.db.all("SELECT name FROM sqlite_master WHERE type = 'table'")).toEqual([]);
    // The API token never shows.
    for (const r of [missing, placeholder, malformed, refused, unknown, unreachable, clearText]) expect(r.stderr).not.toContain(API_TOKEN);
  }, 120_000);

  it('a fresh database: the first command applies every migration, as the Worker would on its first request', async () => {
    expectRun(await admin('user', 'list'), 0, 'no users\n');
    const versions = (await api.db.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map((r) => Number(r.version));
    expect(versions).toEqual((await loadMigrations()).map((m) => m.version));
  }, 60_000);

  it('user add: the first user adopts the ownerless repositories of the registry, in one batch; token mints a PAT the Worker accepts', async () => {
    // Repositories as the Worker registers them (lib/runtime/workers/remote-repos.ts): one made under the legacy key.
    await api.db.run("INSERT INTO repo_registry (id, id_fold, creator, created_at) VALUES ('early', 'early', NULL, 1)");
    api.bodies.length = 0;
    const added = await admin('user', 'add', 'alice@example.com', '--name', 'Alice');
    expect(added.code, added.stderr).toBe(0);
    const alice = await new Users(api.db, systemClock).byEmail('alice@example.com');
    ids.alice = alice[0]!.id;
    expectRun(added, 0, `added alice@example.com (Alice), user id ${ids.alice}\nfirst user: now owner of 1 ownerless repository: early\n`);
    // The user and the adoption went in one request, a batch (one transaction in D1).
    const writes = api.bodies.filter((b) => JSON.stringify(b).includes('INSERT INTO users'));
    expect(writes).toHaveLength(1);
    expect((writes[0] as { batch: unknown[] }).batch.length).toBeGreaterThan(2);

    const t = await admin('token', 'alice@example.com', '--label', 'ci', '--days', '7', '--json');
    expect(t.code, t.stderr).toBe(0);
    const out = JSON.parse(t.stdout);
    expect(Object.keys(out)).toEqual(['token', 'expires_at']);
    tokens.alice = out.token;
    expect(await pats().resolve(tokens.alice)).toMatchObject({ user: { id: ids.alice, email: 'alice@example.com' }, pat: { label: 'ci', expires_at: out.expires_at } });
  }, 120_000);

  it('repo owner and repo list: the registry and membership from D1; page counts unknown (null, ?), said on stderr', async () => {
    await api.db.run("INSERT INTO repo_registry (id, id_fold, creator, created_at) VALUES ('late', 'late', NULL, 2)");
    const bob = await admin('user', 'add', 'bob@example.com', '--json');
    ids.bob = JSON.parse(bob.stdout).id;
    const [owner, variant, missing] = await Promise.all([
      admin('repo', 'owner', 'late', 'bob@example.com'),
      admin('repo', 'owner', 'LATE', 'bob@example.com'),
      admin('repo', 'owner', 'nope', 'bob@example.com'),
    ]);
    expectRun(owner, 0, 'bob@example.com is now an owner of late\n');
    expectRun(variant, 1, '', 'error: repository LATE not found; late exists (ids are exact: use late)\n');
    expectRun(missing, 1, '', 'error: repository nope not found (see: repo list)\n');

    const [text, json] = await Promise.all([admin('repo', 'list'), admin('repo', 'list', '--json')]);
    expectRun(
      text,
      0,
      ['ID     OWNERS             MEMBERS  PAGES', 'early  alice@example.com  1        ?', 'late   bob@example.com    1        ?', ''].join('\n'),
      "PAGES ?: a repository's pages live in its Durable Object, which only the deployed Worker reads (GET /v1/admin/repos lists them)\n",
    );
    expectRun(
      json,
      0,
      `${JSON.stringify({
        repos: [
          { id: 'early', owners: ['alice@example.com'], members: 1, page_count: null },
          { id: 'late', owners: ['bob@example.com'], members: 1, page_count: null },
        ],
      })}\n`,
    );
  }, 120_000);

  it('user disable: the PAT stops resolving at once; enable restores it', async () => {
    expectRun(
      await admin('user', 'disable', 'alice@example.com'),
      0,
      'disabled alice@example.com: their sessions and access tokens no longer work, and they cannot sign in\n',
    );
    expect(await pats().resolve(tokens.alice)).toBeNull();
    expectRun(await admin('user', 'enable', ids.alice), 0, 'enabled alice@example.com\n');
    expect((await pats().resolve(tokens.alice))?.user.id).toBe(ids.alice);
  }, 120_000);

  it('a name from the identity provider with escape sequences and a newline is shown as ? in user list; --json stays valid and exact', async () => {
    // As a sign-in through the identity provider writes the user (lib/db/users.ts upsert).
    const { user } = await new Users(api.db, systemClock).upsert({ issuer: 'https://idp.example', subject: 'mallory', email: 'mallory@example.com', name: HOSTILE });
    const [text, json] = await Promise.all([admin('user', 'list'), admin('user', 'list', '--json')]);
    expect(text.code).toBe(0);
    expect(text.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    const lines = text.stdout.split('\n');
    expect(lines).toHaveLength(5); // header, alice, bob, mallory, and the final newline's empty rest
    expect(lines[3]).toContain(`${clean(HOSTILE)}  https://idp.example  active`);
    expect(lines[3]!.endsWith(user.id)).toBe(true);
    expect(json.stdout).not.toMatch(/[\u0000-\u001f\u007f-\u009f](?!$)/);
    expect(JSON.parse(json.stdout).users[2]).toEqual({ id: user.id, email: 'mallory@example.com', name: HOSTILE, issuer: 'https://idp.example', created_at: user.created_at });
  }, 120_000);
});
