/**
 * The admin command against the hosted build as `npm run dev:worker` runs it (`--target worker-local`):
 * a real workerd through Miniflare (scripts/dev-worker.ts `startWorkerDev`, port 0, its own data root),
 * and the admin command as its own process (`node --import tsx admin/main.ts --target worker-local …`) on
 * the same persisted D1 and Durable Objects while the Worker keeps serving. Every effect is checked over
 * the Worker's HTTP API: a user made and a token minted by the command push and read pages, a disabled
 * user's token gets 401, an owner given by the command can invite. The D1 starts fresh (no request has
 * reached the Worker), so the command applies the migrations itself.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorker } from '../scripts/build-worker.ts';
import { startWorkerDev } from '../scripts/dev-worker.ts';
import { TSX_LOADER, runNode, type Run } from './helpers/admin.ts';

const LEGACY = 'admin-workers-legacy-key';
const PAT = /^krp_[A-Za-z0-9_-]{32}$/;

let dir: string;
let dataRoot: string;
let dev: { url: string; close(): Promise<void> } | null = null;
const workerLog: string[] = [];

const admin = (...args: string[]): Promise<Run> =>
  runNode(['--import', TSX_LOADER, 'admin/main.ts', '--target', 'worker-local', ...args], { SERVICE_DATA_ROOT: dataRoot });

function expectRun(r: Run, code: number, stdout: string, stderr = '') {
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code, stdout, stderr });
}

async function api(path: string, token: string, init: { method?: string; json?: unknown } = {}) {
  const res = await fetch(`${dev!.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : (JSON.parse(text) as any) };
}

const push = (token: string, repo: string, path: string, content: string) =>
  api(`/v1/repos/${repo}/sync/push`, token, { method: 'POST', json: { files: [{ path, content }] } });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kr-admin-workers-'));
  dataRoot = join(dir, 'data');
  dev = await startWorkerDev({
    bundle: await buildWorker(join(dir, 'worker.mjs')),
    output: (line) => workerLog.push(line),
    env: {
      SERVICE_DATA_ROOT: dataRoot,
      SERVICE_LISTEN_ADDR: '127.0.0.1:0',
      SERVICE_SESSION_SECRET: 'admin-workers-session-secret-0123456789',
      SERVICE_API_KEY: LEGACY,
      SERVICE_RATELIMIT_DISABLE: '1',
    },
  });
}, 120_000);

afterAll(async () => {
  await dev?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('admin --target worker-local: npm run dev:worker\'s data, while it runs and once it has stopped', () => {
  const ids: Record<string, string> = {};
  const tokens: Record<string, string> = {};

  it('refuses a data root npm run dev:worker never used, and a --database-id (worker-remote only)', async () => {
    const [missing, flag] = await Promise.all([
      runNode(['--import', TSX_LOADER, 'admin/main.ts', '--target', 'worker-local', 'user', 'list'], { SERVICE_DATA_ROOT: dir }),
      admin('user', 'list', '--database-id', '11111111-2222-4333-8444-555555555555'),
    ]);
    expectRun(
      missing,
      1,
      '',
      `error: no local Workers data at ${join(dir, 'workers')}: set SERVICE_DATA_ROOT to the one npm run dev:worker uses (it creates that directory when it starts)\n`,
    );
    expectRun(flag, 2, '', 'error: --database-id is for --target worker-remote only\n');
  }, 120_000);

  it('a fresh D1 of a dev:worker that is stopped: the command migrates it and adds the user, as the Worker would find them', async () => {
    const other = join(dir, 'other');
    await mkdir(join(other, 'workers'), { recursive: true });
    const env = { SERVICE_DATA_ROOT: other };
    const run = (...args: string[]) => runNode(['--import', TSX_LOADER, 'admin/main.ts', '--target', 'worker-local', ...args], env);
    const added = await run('user', 'add', 'zoe@example.com', '--json');
    expect(added.code, added.stderr).toBe(0);
    const listed = await run('user', 'list', '--json');
    expect(JSON.parse(listed.stdout).users).toEqual([
      { id: JSON.parse(added.stdout).id, email: 'zoe@example.com', name: '', issuer: 'admin', created_at: expect.any(Number) },
    ]);
    expect((await readdir(join(other, 'workers'))).sort()).toEqual(['d1', 'do']);
  }, 120_000);

  it('a fresh D1 of a running dev:worker: user add applies the migrations and makes the first user; the token it mints pushes a page and reads it back', async () => {
    const added = await admin('user', 'add', 'alice@example.com', '--name', 'Alice', '--json');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toBe('');
    const a = JSON.parse(added.stdout);
    expect(a).toEqual({ id: expect.any(String), email: 'alice@example.com', name: 'Alice' });
    ids.alice = a.id;

    const t = await admin('token', 'alice@example.com');
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toMatch(/^krp_[A-Za-z0-9_-]{32}\n$/);
    expect(t.stderr).toBe('personal access token for alice@example.com (label "admin", does not expire); it is shown only this once\n');
    tokens.alice = t.stdout.trim();

    // The Worker's first request: its own migration pass finds nothing left to apply.
    expect(await api('/v1/me', tokens.alice)).toEqual({ status: 200, body: { id: ids.alice, email: 'alice@example.com', name: 'Alice', server: { hosted: false } } });
    const pushed = await push(tokens.alice, 'notes', 'wiki/start.md', '# Start\n\nFirst page.\n');
    expect(pushed.status).toBe(200);
    const page = await fetch(`${dev!.url}/v1/repos/notes/pages/wiki/start.md`, { headers: { authorization: `Bearer ${tokens.alice}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('# Start\n\nFirst page.\n');
    // A first push by a user makes them the owner.
    const members = await api('/v1/repos/notes/members', tokens.alice);
    expect(members.body.members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([['alice@example.com', 'owner']]);
  }, 180_000);

  it('repo owner: a repository the legacy key made after the first user gets an owner, who can then invite', async () => {
    expect((await api('/v1/repos/late', LEGACY, { method: 'POST' })).status).toBe(201);
    expect((await push(LEGACY, 'late', 'b.md', '# B\n')).status).toBe(200);
    const bob = await admin('user', 'add', 'bob@example.com', '--json');
    expect(bob.code, bob.stderr).toBe(0);
    ids.bob = JSON.parse(bob.stdout).id;
    const bt = await admin('token', 'bob@example.com', '--label', 'laptop', '--days', '30', '--json');
    expect(bt.code, bt.stderr).toBe(0);
    tokens.bob = JSON.parse(bt.stdout).token;
    expect(tokens.bob).toMatch(PAT);
    expect(await api('/v1/repos/late/invite-keys', tokens.bob, { method: 'POST', json: {} })).toEqual({
      status: 403,
      body: { error: 'not a member of this repo', code: 'not_a_member' },
    });

    const [owner, variant, missing] = await Promise.all([
      admin('repo', 'owner', 'late', 'bob@example.com'),
      admin('repo', 'owner', 'LATE', 'bob@example.com'),
      admin('repo', 'owner', 'nope', 'bob@example.com', '--json'),
    ]);
    expectRun(owner, 0, 'bob@example.com is now an owner of late\n');
    expectRun(variant, 1, '', 'error: repository LATE not found; late exists (ids are exact: use late)\n');
    expectRun(missing, 1, '', '{"error":"repository nope not found (see: repo list)"}\n');
    expect((await api('/v1/repos/late/invite-keys', tokens.bob, { method: 'POST', json: { label: 'x' } })).status).toBe(201);
  }, 180_000);

  it("repo list: owners and members from D1, pages from each repository's Durable Object, read only", async () => {
    expect((await push(tokens.alice, 'notes', 'wiki/second.md', '# Second\n')).status).toBe(200);
    expect((await api('/v1/repos/empty', LEGACY, { method: 'POST' })).status).toBe(201);
    const [text, json] = await Promise.all([admin('repo', 'list'), admin('repo', 'list', '--json')]);
    expectRun(
      text,
      0,
      [
        'ID     OWNERS             MEMBERS  PAGES',
        'empty  (none)             0        0',
        'late   bob@example.com    1        1',
        'notes  alice@example.com  1        2',
        '',
      ].join('\n'),
    );
    expectRun(
      json,
      0,
      `${JSON.stringify({
        repos: [
          { id: 'empty', owners: [], members: 0, page_count: 0 },
          { id: 'late', owners: ['bob@example.com'], members: 1, page_count: 1 },
          { id: 'notes', owners: ['alice@example.com'], members: 1, page_count: 2 },
        ],
      })}\n`,
    );
  }, 180_000);

  it('user disable: the token gets 401 from the running Worker at once; enable restores it', async () => {
    expectRun(
      await admin('user', 'disable', 'bob@example.com'),
      0,
      'disabled bob@example.com: their sessions and access tokens no longer work, and they cannot sign in\n',
    );
    expect(await api('/v1/me', tokens.bob)).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    expect(await push(tokens.bob, 'late', 'c.md', '# C\n')).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    expectRun(await admin('token', 'bob@example.com'), 1, '', 'error: bob@example.com is disabled (user enable bob@example.com first)\n');
    expectRun(await admin('user', 'enable', ids.bob, '--json'), 0, `${JSON.stringify({ id: ids.bob, email: 'bob@example.com' })}\n`);
    expect((await api('/v1/me', tokens.bob)).status).toBe(200);
  }, 180_000);

  it('writes while the Worker is busy writing its D1 and a repository: every command and every request succeeds', async () => {
    // The commands go through the running Worker's own D1 binding (its admin channel), never beside it.
    // The pushes are the legacy key's: concurrent pushes of one user into one repository hang in workerd
    // whatever the admin command does (the per-isolate creation lock is awaited across requests).
    const requests = [
      ...Array.from({ length: 12 }, (_, i) => push(LEGACY, 'notes', `busy/${i}.md`, `# ${i}\n`)),
      ...Array.from({ length: 12 }, (_, i) => api('/v1/pats', tokens.alice, { method: 'POST', json: { label: `busy-${i}` } })),
    ];
    const runs = await Promise.all([
      admin('token', 'alice@example.com', '--label', 'busy-admin', '--json'),
      admin('user', 'add', 'carol@example.com', '--json'),
      admin('repo', 'owner', 'late', 'alice@example.com', '--json'),
    ]);
    for (const r of runs) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const answers = await Promise.all(requests);
    expect(answers.map((a) => a.status)).toEqual([...Array(12).fill(200), ...Array(12).fill(201)]);
    expect((await api('/v1/me', JSON.parse(runs[0]!.stdout).token)).status).toBe(200);
    const pats = await api('/v1/pats', tokens.alice);
    expect(pats.body.pats.map((p: { label: string }) => p.label).sort()).toEqual(
      ['admin', 'busy-admin', ...Array.from({ length: 12 }, (_, i) => `busy-${i}`)].sort(),
    );
    const list = JSON.parse((await admin('repo', 'list', '--json')).stdout);
    expect(list.repos.find((r: { id: string }) => r.id === 'notes')).toEqual({ id: 'notes', owners: ['alice@example.com'], members: 1, page_count: 14 });
    expect(workerLog.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  }, 240_000);

  it('the admin channel: a 0600 file names it; a wrong token, another method or path, an oversized or malformed body are refused', async () => {
    const file = join(dataRoot, 'workers', 'admin-channel.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const channel = JSON.parse(await readFile(file, 'utf8'));
    expect(Object.keys(channel).sort()).toEqual(['pid', 'token', 'url']);
    expect(channel.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const call = async (path: string, init: { method?: string; token?: string; body?: string } = {}) => {
      const res = await fetch(`${channel.url}${path}`, {
        method: init.method ?? 'POST',
        headers: { authorization: `Bearer ${init.token ?? channel.token}` },
        body: init.body,
      });
      const text = await res.text();
      return { status: res.status, error: text === '' ? null : JSON.parse(text).errors?.[0]?.message };
    };
    const select = JSON.stringify({ sql: 'SELECT COUNT(*) AS n FROM users' });
    expect(await call('/d1/query', { token: 'krp_not-the-token', body: select })).toEqual({ status: 401, error: 'invalid token' });
    expect(await call('/ping', { method: 'GET', token: `${channel.token}x` })).toEqual({ status: 401, error: 'invalid token' });
    expect(await call('/ping', { method: 'GET' })).toEqual({ status: 204, error: null });
    expect(await call('/d1/query', { method: 'GET' })).toEqual({ status: 404, error: 'not found' });
    expect(await call('/d1/other', { body: select })).toEqual({ status: 404, error: 'not found' });
    expect(await call('/d1/query', { body: 'x'.repeat(1024 * 1024 + 1) })).toEqual({ status: 400, error: 'body over 1048576 bytes' });
    expect(await call('/d1/query', { body: '{"sql": 1}' })).toEqual({ status: 400, error: 'sql must be a string' });
    expect(await call('/d1/query', { body: '{"sql": "SELECT ?", "params": [{"a": 1}]}' })).toEqual({ status: 400, error: 'params must be strings, numbers or null' });
    expect(await call('/d1/query', { body: '{"batch": {}}' })).toEqual({ status: 400, error: 'batch must be an array' });
    expect(await call('/repos/pages', { body: '{"repo": "../x"}' })).toEqual({ status: 400, error: 'repo must be a repository id' });
    expect((await call('/d1/query', { body: '{"sql": "SELECT nope FROM nowhere"}' })).status).toBe(400);
    expect(await call('/d1/query', { body: select })).toEqual({ status: 200, error: undefined });
  }, 60_000);

  it('with the Worker stopped, the command opens the files itself (a channel file left behind is passed over); the Worker started again takes its token', async () => {
    await dev!.close();
    dev = null;
    expect((await readdir(join(dataRoot, 'workers'))).sort()).toEqual(['d1', 'do']);
    // As a dev:worker killed with SIGKILL leaves it: nothing listens at its address any more.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await writeFile(join(dataRoot, 'workers', 'admin-channel.json'), JSON.stringify({ pid: 1, url: deadUrl, token: 'stale' }), { mode: 0o600 });

    // Two at once take turns (workers/admin.lock): two workerd processes must not have the files open together.
    const [list, token] = await Promise.all([admin('repo', 'list', '--json'), admin('token', 'alice@example.com', '--label', 'offline', '--json')]);
    expect((await readdir(join(dataRoot, 'workers'))).sort()).toEqual(['admin-channel.json', 'd1', 'do']);
    expect(list.code, list.stderr).toBe(0);
    // Counted from git in each object's file, read only: the same as the running objects said.
    expect(JSON.parse(list.stdout).repos.map((x: { id: string; page_count: number }) => [x.id, x.page_count])).toEqual([
      ['empty', 0],
      ['late', 1],
      ['notes', 14],
    ]);
    expect(token.code, token.stderr).toBe(0);

    dev = await startWorkerDev({
      bundle: join(dir, 'worker.mjs'),
      output: (line) => workerLog.push(line),
      env: {
        SERVICE_DATA_ROOT: dataRoot,
        SERVICE_LISTEN_ADDR: '127.0.0.1:0',
        SERVICE_SESSION_SECRET: 'admin-workers-session-secret-0123456789',
        SERVICE_API_KEY: LEGACY,
        SERVICE_RATELIMIT_DISABLE: '1',
      },
    });
    expect(await api('/v1/me', JSON.parse(token.stdout).token)).toEqual({ status: 200, body: { id: ids.alice, email: 'alice@example.com', name: 'Alice', server: { hosted: false } } });
    const page = await fetch(`${dev.url}/v1/repos/notes/pages/busy/11.md`, { headers: { authorization: `Bearer ${LEGACY}` } });
    expect(await page.text()).toBe('# 11\n');
  }, 180_000);
});
