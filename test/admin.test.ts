/**
 * The server's admin command (admin/main.ts), run as an operator runs it: its own process
 * (`node --import tsx admin/main.ts …`, and the bundle `node dist/admin.mjs …` the image runs), configured by
 * SERVICE_DATA_ROOT only, against the data root of a real server process that keeps running meanwhile.
 * Every effect is checked through that server's HTTP API: tokens minted by the command work at once, a
 * disabled user's session and PAT stop at once, an owner given by the command can act as one.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { LEGACY_KEY, PROJECT_ROOT, spawnServer, type ServerProc } from './reliability/helpers/server-process.ts';
import { TSX_LOADER, runNode as node, type Run } from './helpers/admin.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PAT = /^krp_[A-Za-z0-9_-]{32}$/;

let dir: string;
let dataRoot: string;
let server: ServerProc;
let idp: IdpStandIn;

/** The admin command from the sources, as `npm run admin --` runs it (tsx). */
const admin = (...args: string[]) => node(['--import', TSX_LOADER, 'admin/main.ts', ...args], { SERVICE_DATA_ROOT: dataRoot });

async function api(path: string, token: string, init: { method?: string; json?: unknown } = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : (JSON.parse(text) as any) };
}

async function signIn(sub: string, email: string) {
  const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
  const res = await fetch(`${server.url}/v1/auth/idp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id_token: idToken }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const push = (token: string, repo: string, path: string, content: string) =>
  api(`/v1/repos/${repo}/sync/push`, token, { method: 'POST', json: { files: [{ path, content }] } });

/** Checks a run printed exactly `stdout` and `stderr` and exited with `code`. */
function expectRun(r: Run, code: number, stdout: string, stderr = '') {
  expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code, stdout, stderr });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kr-admin-'));
  dataRoot = join(dir, 'data');
  idp = await startIdp();
  server = await spawnServer({
    dataRoot,
    env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
  });
});

afterAll(async () => {
  await server?.stop();
  await idp?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('admin command against a running server', () => {
  const ids: Record<string, string> = {};
  const tokens: Record<string, string> = {};

  it('refuses a data root that does not exist, and bad usage with exit code 2', async () => {
    const missing = join(dir, 'nowhere');
    const runs = await Promise.all([
      node(['--import', TSX_LOADER, 'admin/main.ts', 'user', 'list'], { SERVICE_DATA_ROOT: missing }),
      admin('user', 'frob'),
      admin('user', 'add', '--json'),
      admin('token', 'alice@example.com', '--days', '0'),
      admin('token', 'alice@example.com', '--days', '367', '--json'),
      admin('user', 'add', 'a@example.com', 'extra'),
      admin('--help'),
    ]);
    const expected: Array<[number, string, string]> = [
      [1, '', `error: data root ${missing} does not exist: set SERVICE_DATA_ROOT to the server's (the server creates it when it first starts)\n`],
      [2, '', "error: unknown command 'frob'\n(run with --help for usage)\n"],
      [2, '', '{"error":"missing required argument \'email\'"}\n'],
      [2, '', "error: option '--days <n>' argument '0' is invalid. must be an integer from 1 to 366\n(run with --help for usage)\n"],
      [2, '', `{"error":"option '--days <n>' argument '367' is invalid. must be an integer from 1 to 366"}\n`],
      [2, '', "error: too many arguments for 'add'. Expected 1 argument but got 2.\n(run with --help for usage)\n"],
    ];
    expected.forEach(([code, stdout, stderr], i) => expectRun(runs[i]!, code, stdout, stderr));
    const help = runs[6]!;
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: admin [options] [command]');
    // Nothing was written: still no user.
    expectRun(await admin('user', 'list'), 0, 'no users\n');
    expectRun(await admin('user', 'list', '--json'), 0, '{"users":[]}\n');
  });

  it('user add: the first user adopts the repositories the legacy key created; --json prints {id,email,name}', async () => {
    expect((await api('/v1/repos/early', LEGACY_KEY, { method: 'POST' })).status).toBe(201);
    expect((await push(LEGACY_KEY, 'early', 'a.md', '# A\n')).status).toBe(200);

    const a = await admin('user', 'add', 'Alice@Example.com', '--name', 'Alice');
    const m = /^added alice@example\.com \(Alice\), user id (\S+)\n/.exec(a.stdout);
    expect(m, a.stdout).not.toBeNull();
    ids.alice = m![1]!;
    expect(ids.alice).toMatch(UUID);
    expectRun(a, 0, `added alice@example.com (Alice), user id ${ids.alice}\nfirst user: now owner of 1 ownerless repository: early\n`);

    const b = await admin('user', 'add', 'bob@example.com', '--json');
    expect(b.code).toBe(0);
    const bob = JSON.parse(b.stdout);
    expect(Object.keys(bob)).toEqual(['id', 'email', 'name']);
    expect(bob).toEqual({ id: expect.stringMatching(UUID), email: 'bob@example.com', name: '' });
    ids.bob = bob.id;
    expectRun(b, 0, `${JSON.stringify({ id: ids.bob, email: 'bob@example.com', name: '' })}\n`);
  });

  it('user add refuses a duplicate (any case, any issuer) and an invalid email with exit code 1', async () => {
    const [upper, json, bad, badJson, carol] = await Promise.all([
      admin('user', 'add', 'BOB@example.com'),
      admin('user', 'add', 'bob@example.com', '--json'),
      admin('user', 'add', 'not-an-email'),
      admin('user', 'add', 'a b@example.com', '--json'),
      // A user who signed in through the identity provider holds their email too.
      signIn('carol-sub', 'carol@example.com'),
    ]);
    expectRun(upper, 1, '', `error: user bob@example.com already exists (id ${ids.bob}, issuer admin)\n`);
    expectRun(json, 1, '', `${JSON.stringify({ error: `user bob@example.com already exists (id ${ids.bob}, issuer admin)` })}\n`);
    expectRun(bad, 1, '', 'error: invalid email: "not-an-email"\n');
    expectRun(badJson, 1, '', '{"error":"invalid email: \\"a b@example.com\\""}\n');
    expect(carol.status).toBe(200);
    ids.carol = carol.body.user.id;
    tokens.carolSession = carol.body.access_token;
    expectRun(await admin('user', 'add', 'carol@example.com'), 1, '', `error: user carol@example.com already exists (id ${ids.carol}, issuer ${idp.issuer})\n`);
  });

  it('token: prints a krp_ token once, which the running server accepts at once', async () => {
    const t = await admin('token', 'alice@example.com');
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/^krp_[A-Za-z0-9_-]{32}\n$/);
    expect(t.stderr).toBe('personal access token for alice@example.com (label "admin", does not expire); it is shown only this once\n');
    tokens.alice = t.stdout.trim();
    expect(await api('/v1/me', tokens.alice)).toEqual({ status: 200, body: { id: ids.alice, email: 'alice@example.com', name: 'Alice', server: { hosted: false } } });
    // Alice owns the adopted repository: she may mint invite keys for it.
    expect((await api('/v1/repos/early/invite-keys', tokens.alice, { method: 'POST', json: {} })).status).toBe(201);

    const before = Math.floor(Date.now() / 1000);
    const j = await admin('token', 'bob@example.com', '--label', 'laptop', '--days', '30', '--json');
    const after = Math.floor(Date.now() / 1000);
    expect(j.code).toBe(0);
    expect(j.stderr).toBe('');
    const out = JSON.parse(j.stdout);
    expect(Object.keys(out)).toEqual(['token', 'expires_at']);
    expect(out.token).toMatch(PAT);
    expect(out.expires_at).toBeGreaterThanOrEqual(before + 30 * 86400);
    expect(out.expires_at).toBeLessThanOrEqual(after + 30 * 86400);
    tokens.bob = out.token;
    const pats = await api('/v1/pats', tokens.bob);
    expect(pats.status).toBe(200);
    expect(pats.body.pats).toEqual([{ id: expect.stringMatching(UUID), label: 'laptop', created_at: expect.any(Number), expires_at: out.expires_at, last_used_at: expect.any(Number), current: true }]);

    const [n, zed, noId] = await Promise.all([
      admin('token', ids.alice, '--json'),
      admin('token', 'zed@example.com'),
      admin('token', '00000000-0000-4000-8000-000000000000', '--json'),
    ]);
    // No expiry without --days: {"token"} only.
    expect(Object.keys(JSON.parse(n.stdout))).toEqual(['token']);
    expectRun(zed, 1, '', 'error: no user with email zed@example.com (see: user list)\n');
    expectRun(noId, 1, '', '{"error":"no user with id 00000000-0000-4000-8000-000000000000"}\n');
  });

  it('repo owner: an ownerless repository created by the legacy key after the first user gets an owner, who can then invite', async () => {
    expect((await api('/v1/repos/late', LEGACY_KEY, { method: 'POST' })).status).toBe(201);
    expect((await push(LEGACY_KEY, 'late', 'notes/b.md', '# B\n')).status).toBe(200);
    expect(await api('/v1/repos/late/invite-keys', tokens.bob, { method: 'POST', json: {} })).toEqual({
      status: 403,
      body: { error: 'not a member of this repo', code: 'not_a_member' },
    });

    expectRun(await admin('repo', 'owner', 'late', 'bob@example.com'), 0, 'bob@example.com is now an owner of late\n');
    const invite = await api('/v1/repos/late/invite-keys', tokens.bob, { method: 'POST', json: { label: 'alice' } });
    expect(invite.status).toBe(201);
    expectRun(await admin('repo', 'owner', 'late', 'bob@example.com'), 0, 'bob@example.com is already an owner of late\n');

    // A member is promoted.
    expect(await api('/v1/repos/join', tokens.alice, { method: 'POST', json: { key: invite.body.token } })).toEqual({
      status: 200,
      body: { repo_id: 'late', role: 'member' },
    });
    expectRun(
      await admin('repo', 'owner', 'late', 'alice@example.com', '--json'),
      0,
      `${JSON.stringify({ repo: 'late', user_id: ids.alice, email: 'alice@example.com', role: 'owner', previous_role: 'member' })}\n`,
    );
    const members = await api('/v1/repos/late/members', tokens.alice);
    expect(members.body.members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      ['bob@example.com', 'owner'],
      ['alice@example.com', 'owner'],
    ]);

    const [variant, missing, invalid, nobody] = await Promise.all([
      admin('repo', 'owner', 'LATE', 'bob@example.com'),
      admin('repo', 'owner', 'nope', 'bob@example.com'),
      admin('repo', 'owner', 'a.b', 'bob@example.com', '--json'),
      admin('repo', 'owner', 'late', 'zed@example.com'),
    ]);
    expectRun(variant, 1, '', 'error: repository LATE not found; late exists (ids are exact: use late)\n');
    expectRun(missing, 1, '', 'error: repository nope not found (see: repo list)\n');
    expectRun(invalid, 1, '', '{"error":"invalid repo id: \\"a.b\\" (1 to 64 of A-Z a-z 0-9 _ -)"}\n');
    expectRun(nobody, 1, '', 'error: no user with email zed@example.com (see: user list)\n');
  });

  it('repo list and user list: exact output, text and --json', async () => {
    expect((await api('/v1/repos/empty', LEGACY_KEY, { method: 'POST' })).status).toBe(201);
    expectRun(
      await admin('repo', 'list'),
      0,
      [
        'ID     OWNERS                             MEMBERS  PAGES',
        'early  alice@example.com                  1        1',
        'empty  (none)                             0        0',
        'late   bob@example.com,alice@example.com  2        1',
        '',
      ].join('\n'),
    );
    expectRun(
      await admin('repo', 'list', '--json'),
      0,
      `${JSON.stringify({
        repos: [
          { id: 'early', owners: ['alice@example.com'], members: 1, page_count: 1 },
          { id: 'empty', owners: [], members: 0, page_count: 0 },
          { id: 'late', owners: ['bob@example.com', 'alice@example.com'], members: 2, page_count: 1 },
        ],
      })}\n`,
    );

    const j = await admin('user', 'list', '--json');
    expect(j.code).toBe(0);
    const { users } = JSON.parse(j.stdout);
    expect(users).toEqual([
      { id: ids.alice, email: 'alice@example.com', name: 'Alice', issuer: 'admin', created_at: expect.any(Number) },
      { id: ids.bob, email: 'bob@example.com', name: '', issuer: 'admin', created_at: expect.any(Number) },
      { id: ids.carol, email: 'carol@example.com', name: 'carol', issuer: idp.issuer, created_at: expect.any(Number) },
    ]);
    const t = (s: number) => new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const w = idp.issuer.length;
    expectRun(
      await admin('user', 'list'),
      0,
      [
        `EMAIL              NAME   ${'ISSUER'.padEnd(w)}  STATUS  CREATED               ID`,
        `alice@example.com  Alice  ${'admin'.padEnd(w)}  active  ${t(users[0].created_at)}  ${ids.alice}`,
        `bob@example.com    -      ${'admin'.padEnd(w)}  active  ${t(users[1].created_at)}  ${ids.bob}`,
        `carol@example.com  carol  ${idp.issuer}  active  ${t(users[2].created_at)}  ${ids.carol}`,
        '',
      ].join('\n'),
    );
  });

  it('user disable: the session and PAT of that user get 401 at once on the running server, sign-in 403; enable restores them', async () => {
    const carolPat = await api('/v1/pats', tokens.carolSession, { method: 'POST', json: { label: 'ci' } });
    expect(carolPat.status).toBe(201);
    const creds = { session: tokens.carolSession, pat: carolPat.body.token as string };
    for (const t of Object.values(creds)) expect((await api('/v1/me', t)).status).toBe(200);

    expectRun(await admin('user', 'disable', 'Carol@Example.com'), 0, 'disabled carol@example.com: their sessions and access tokens no longer work, and they cannot sign in\n');
    for (const t of Object.values(creds)) expect(await api('/v1/me', t)).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    expect(await push(creds.pat, 'late', 'c.md', '# C\n')).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    expect(await signIn('carol-sub', 'carol@example.com')).toEqual({ status: 403, body: { error: 'account disabled', code: 'account_disabled' } });

    const again = await admin('user', 'disable', ids.carol, '--json');
    expect(again.code).toBe(0);
    const disabled = JSON.parse(again.stdout);
    expect(disabled).toEqual({ id: ids.carol, email: 'carol@example.com', disabled_at: expect.any(Number) });
    const since = new Date(disabled.disabled_at * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expectRun(await admin('user', 'disable', 'carol@example.com'), 0, `carol@example.com was already disabled (since ${since})\n`);
    expect(JSON.parse((await admin('user', 'list', '--json')).stdout).users[2]).toEqual({
      id: ids.carol,
      email: 'carol@example.com',
      name: 'carol',
      issuer: idp.issuer,
      created_at: expect.any(Number),
      disabled_at: disabled.disabled_at,
    });
    expect((await admin('user', 'list')).stdout.split('\n')[3]).toContain('  disabled  ');
    expectRun(await admin('token', 'carol@example.com'), 1, '', 'error: carol@example.com is disabled (user enable carol@example.com first)\n');
    expectRun(await admin('repo', 'owner', 'late', 'carol@example.com'), 1, '', 'error: carol@example.com is disabled (user enable carol@example.com first)\n');

    expectRun(await admin('user', 'enable', 'carol@example.com', '--json'), 0, `${JSON.stringify({ id: ids.carol, email: 'carol@example.com' })}\n`);
    for (const t of Object.values(creds)) expect((await api('/v1/me', t)).status).toBe(200);
    expect((await signIn('carol-sub', 'carol@example.com')).status).toBe(200);
    expectRun(await admin('user', 'enable', 'carol@example.com'), 0, 'carol@example.com is not disabled\n');

    // An admin-made user's admin-made token stops too.
    expect((await admin('user', 'disable', 'bob@example.com')).code).toBe(0);
    expect(await api('/v1/me', tokens.bob)).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    expect((await admin('user', 'enable', 'bob@example.com')).code).toBe(0);
    expect((await api('/v1/me', tokens.bob)).status).toBe(200);
  });

  it('someone added here who signs in through the identity provider gets a separate account; the email is then ambiguous', async () => {
    const d = JSON.parse((await admin('user', 'add', 'dave@example.com', '--json')).stdout);
    const viaIdp = await signIn('dave-sub', 'dave@example.com');
    expect(viaIdp.status).toBe(200);
    expect(viaIdp.body.user.id).not.toBe(d.id);
    expectRun(
      await admin('token', 'dave@example.com'),
      1,
      '',
      `error: several accounts have the email dave@example.com: ${d.id} (admin), ${viaIdp.body.user.id} (${idp.issuer}); give the user id instead\n`,
    );
    const t = await admin('token', d.id);
    expect(t.code).toBe(0);
    expect((await api('/v1/me', t.stdout.trim())).body.id).toBe(d.id);
  });

  it('writes while the server is busy writing: every command and every push succeeds', async () => {
    const pushes = Array.from({ length: 40 }, (_, i) => push(tokens.alice, 'early', `busy/${i}.md`, `# ${i}\n`));
    const runs = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => admin('token', 'alice@example.com', '--label', `busy-${i}`, '--json')),
      admin('user', 'add', 'erin@example.com', '--json'),
      admin('user', 'disable', 'erin-never-added@example.com', '--json'),
    ]);
    const refused = runs.pop()!;
    expectRun(refused, 1, '', '{"error":"no user with email erin-never-added@example.com (see: user list)"}\n');
    for (const r of runs) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    for (const r of await Promise.all(pushes)) expect(r.status).toBe(200);
    for (const r of runs.slice(0, 4)) expect((await api('/v1/me', JSON.parse(r.stdout).token)).status).toBe(200);
    expect(server.alive()).toBe(true);
    expect(server.events().filter((e) => e.level === 'error')).toEqual([]);
  });

  it('the bundle the image runs (npm run build:admin → node dist/admin.mjs) lists the users', async () => {
    const built = await npmBuildAdmin();
    expect(built.code, built.stderr).toBe(0);
    const viaBundle = await node(['dist/admin.mjs', 'user', 'list', '--json'], { SERVICE_DATA_ROOT: dataRoot });
    const viaTsx = await admin('user', 'list', '--json');
    expect(viaBundle.code).toBe(0);
    expect(viaBundle.stdout).toBe(viaTsx.stdout);
    expect(JSON.parse(viaBundle.stdout).users.map((u: { email: string }) => u.email)).toContain('erin@example.com');
    // The image installs no dev dependencies: the bundle loads only runtime ones (Miniflare, which only
    // --target worker-local needs, is imported when that target runs).
    const bundle = await readFile(join(PROJECT_ROOT, 'dist/admin.mjs'), 'utf8');
    const runtime = Object.keys(JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')).dependencies);
    // Each import by its package's name (`@scope/name/sub.js` is `@scope/name`'s).
    const packageOf = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
    const loaded = [...bundle.matchAll(/^import\b[^'"]*["']([^"']+)["'];?$/gm)].map((m) => packageOf(m[1]!)).filter((s) => !s.startsWith('node:'));
    expect(loaded.length).toBeGreaterThan(0);
    expect(loaded.filter((s) => !runtime.includes(s))).toEqual([]);
    expect(bundle).toContain('await import("miniflare")');
  });
});

/** `npm run --silent build:admin`, as the Dockerfile runs it. */
function npmBuildAdmin(): Promise<Run> {
  const child = spawn('npm', ['run', '--silent', 'build:admin'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
