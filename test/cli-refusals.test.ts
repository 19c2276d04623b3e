/**
 * The command-line client's refusals and edges, each through the real `kr` executable (HOME in a temp
 * dir): missing or unreadable credentials, an unset server URL for join, --local with a range or blame,
 * ambiguous slugs, server paths that would escape .kr/ on pull (lexically and through a symbolic link), bad
 * usage (exit 2), server error messages (exit 1); plus the config rules and the one-request status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { krUser, runKr, show, type KrUser } from './helpers/cli.ts';

const LEGACY = 'test-legacy-key';
const page = (title: string, body = '## Notes\nSome notes.\n') => `---\ntitle: ${title}\n---\n${body}`;

let server: TestServer;
let root: { path: string; cleanup: () => Promise<void> };
let n = 0;
/** A loopback URL where nothing listens. */
let deadUrl = '';
/** A fresh user (own HOME and project folder) per test. */
const user = async () => krUser(root.path, `u${++n}`);

/** A user logged in with the legacy key, repo `r<n>` set and `kr init` done. */
async function legacyUser(): Promise<KrUser & { repo: string }> {
  const u = await user();
  const repo = `r${n}`;
  await writeCreds(u, { server_url: server.url, token: LEGACY });
  await writeConfig(u, { repo });
  await layout(u);
  return Object.assign(u, { repo });
}

/** What `kr init` makes (tested in cli.test.ts), made directly to save a process start. */
async function layout(u: KrUser): Promise<void> {
  for (const d of ['wiki/concepts', 'wiki/entities', 'wiki/analyses', 'raw/sessions']) await mkdir(join(u.project, '.kr', d), { recursive: true });
  await writeFile(join(u.project, '.kr', 'state.json'), JSON.stringify({ version: 1, head: '', pages: {} }));
}

async function writeCreds(u: KrUser, value: unknown): Promise<void> {
  await mkdir(u.configDir, { recursive: true });
  await writeFile(join(u.configDir, 'credentials.json'), typeof value === 'string' ? value : JSON.stringify(value), { mode: 0o600 });
}
async function writeConfig(u: KrUser, value: unknown): Promise<void> {
  await mkdir(u.configDir, { recursive: true });
  await writeFile(join(u.configDir, 'config.json'), JSON.stringify(value));
}

/** Pushes pages straight through the API (legacy key). */
async function seed(repo: string, files: Record<string, string>): Promise<void> {
  const res = await server.api(`/v1/repos/${repo}/sync/push`, {
    method: 'POST',
    json: { files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  server = await startTestServer();
  root = await tempDir('kr-cli-refusals-');
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
});
afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('kr refuses without usable credentials', () => {
  it('a missing credentials file stops the command (exit 1) with a clear message', async () => {
    const u = await user();
    const r = await u.kr('repos');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain(`not logged in: no credentials file at ${join(u.configDir, 'credentials.json')}`);
    expect(r.stderr).toContain('kr login');
  });

  it('an unreadable credentials file stops the command: not JSON, no token, a directory, no permission', async () => {
    const u = await user();
    await writeCreds(u, '{not json');
    let r = await u.kr('members');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('cannot read credentials file');

    await writeCreds(u, { server_url: server.url });
    r = await u.kr('members');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot read credentials file .*token/);

    const v = await user();
    await mkdir(join(v.configDir, 'credentials.json'), { recursive: true });
    r = await v.kr('log');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot read credentials file');

    // No permission. Root reads any file whatever its mode, so as root the credentials file is instead a
    // link to a file the kernel lets no one read (a write-only sysctl: EACCES even for root).
    const w = await user();
    const credsPath = join(w.configDir, 'credentials.json');
    if (process.getuid?.() === 0) {
      const writeOnly = '/proc/sys/vm/drop_caches';
      await expect(readFile(writeOnly)).rejects.toMatchObject({ code: 'EACCES' });
      await mkdir(w.configDir, { recursive: true });
      await symlink(writeOnly, credsPath);
    } else {
      await writeCreds(w, { server_url: server.url, token: LEGACY });
      await chmod(credsPath, 0o000);
    }
    r = await w.kr('repos');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain(`cannot read credentials file ${credsPath}: permission denied`);
  });

  it('an unset server URL stops join', async () => {
    const u = await user();
    await writeCreds(u, { token: 'some-session-token' });
    const r = await u.kr('join', 'kri_abcdefghijklmnopqrstuvwxyz012345');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('no server URL set');
  });

  it('the credentials file’s URL wins over the config’s; login verifies the token first', async () => {
    const u = await user();
    await writeConfig(u, { server_url: deadUrl });
    const bad = await u.kr('login', '--token', 'wrong-token');
    expect(bad.code, show(bad)).toBe(1);
    expect(bad.stderr).toContain(`login failed: cannot reach the server at ${deadUrl}`);

    const wrong = await u.kr('login', '--server', server.url, '--token', 'wrong-token');
    expect(wrong.code, show(wrong)).toBe(1);
    expect(wrong.stderr).toContain(`login failed: ${server.url} does not accept this token (invalid token: unknown, expired or revoked)`);

    const ok = await u.kr('login', '--server', server.url, '--token', LEGACY);
    expect(ok.code, show(ok)).toBe(0);
    expect(ok.stdout).toContain('legacy shared key');
    // config still names the dead URL; the credentials' URL is used.
    expect((await u.kr('repos')).code).toBe(0);
    const set = await u.kr('remote', 'set', 'http://127.0.0.1:10');
    expect(set.code).toBe(0);
    expect(set.stderr).toContain('their URL takes precedence');
    const get = JSON.parse((await u.kr('remote', 'get', '--json')).stdout);
    expect(get).toMatchObject({ server_url: server.url, server_url_from: 'credentials' });
  });

  it('XDG_CONFIG_HOME, when set, holds the files instead of ~/.config', async () => {
    const u = await user();
    const xdg = join(u.home, 'xdg');
    const r = await u.krWith({ env: { XDG_CONFIG_HOME: xdg } }, 'login', '--server', server.url, '--token', LEGACY);
    expect(r.code, show(r)).toBe(0);
    expect((await stat(join(xdg, 'kr', 'credentials.json'))).mode & 0o777).toBe(0o600);
    await expect(stat(join(u.configDir, 'credentials.json'))).rejects.toThrow();
  });

  it('no token and no terminal: bad usage', async () => {
    const u = await user();
    const r = await u.kr('login', '--server', server.url);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain('no token given');
  });
});

describe('kr diff and slugs', () => {
  it('--local with --from, --to or --blame is refused (exit 2) before any request', async () => {
    // No credentials, no project, a server that does not exist: only the flag check can answer.
    const u = await user();
    await writeCreds(u, { server_url: deadUrl, token: LEGACY });
    for (const extra of [['--from', 'abc123'], ['--to', 'abc123'], ['--blame']]) {
      const r = await u.kr('diff', 'anything', '--local', ...extra);
      expect(r.code, show(r)).toBe(2);
      expect(r.stderr).toContain(`cannot be combined with ${extra[0]}`);
    }
  });

  it('a slug under two types asks for --type; slugs resolve only against local page folders', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/acme.md': page('Acme idea'), 'wiki/entities/acme.md': page('Acme Corp') });
    expect((await u.kr('pull')).code).toBe(0);
    const r = await u.kr('diff', 'acme');
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain('slug "acme" is ambiguous');
    expect(r.stderr).toContain('--type concept|entity');

    const h = await u.kr('history', 'acme', '--type', 'entity', '--json');
    expect(h.code, show(h)).toBe(0);
    expect(JSON.parse(h.stdout).path).toBe('wiki/entities/acme.md');

    const missing = await u.kr('history', 'nowhere');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no local page "nowhere"');
  });

  it('server errors are shown as their message with exit 1', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/solo.md': page('Solo') });
    expect((await u.kr('pull')).code).toBe(0);
    let r = await u.kr('diff', 'solo', '--from', 'zzzz');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe('error: unknown sha: zzzz\n');
    r = await u.kr('repos', 'create', 'newrepo');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('user session required');
    r = await u.kr('join', 'kri_abcdefghijklmnopqrstuvwxyz012345');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('user session required');
    r = await u.kr('me-not-a-command');
    expect(r.code).toBe(2);
  });
});

describe('kr pull writes only inside .kr/', () => {
  let fake: Server;
  let fakeUrl = '';
  let pullBody: unknown = {};
  beforeAll(async () => {
    fake = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/v1/repos/evil/sync/pull')) res.end(JSON.stringify(pullBody));
      else res.writeHead(404).end('{"error":"not found","code":"not_found"}');
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => fake.close(() => r())));

  it('refuses a server path that would escape, writing nothing at all', async () => {
    for (const bad of ['../escaped.md', '/etc/kr-escape', 'wiki/../../escaped.md', 'state.json', 'wiki\\..\\..\\x']) {
      const u = await user();
      await writeCreds(u, { server_url: fakeUrl, token: 't' });
      await writeConfig(u, { repo: 'evil' });
      await layout(u);
      pullBody = {
        new_head: 'a'.repeat(40),
        files: [
          { path: 'wiki/concepts/fine.md', content: 'fine', sha: 'a'.repeat(40) },
          { path: bad, content: 'pwned', sha: 'a'.repeat(40) },
        ],
        deleted: [],
      };
      const r = await u.kr('pull');
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr).toContain(`refusing server path ${JSON.stringify(bad)}`);
      expect(await readdir(join(u.project, '.kr', 'wiki', 'concepts'))).toEqual([]);
      expect(await readdir(join(u.project))).toEqual(['.kr']);
      expect(JSON.parse(await readFile(join(u.project, '.kr', 'state.json'), 'utf8'))).toMatchObject({ head: '', pages: {} });
    }
  });

  it('refuses to write through a symbolic link leading out of .kr/', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/linked.md': page('Linked') });
    const outside = join(u.home, 'outside');
    await mkdir(outside);
    const concepts = join(u.project, '.kr', 'wiki', 'concepts');
    await (await import('node:fs/promises')).rm(concepts, { recursive: true });
    await symlink(outside, concepts);
    const r = await u.kr('pull');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('symbolic link leading out of .kr/');
    expect(await readdir(outside)).toEqual([]);
  });
});

describe('kr: bad usage exits 2', () => {
  it.concurrent.each([
    [['frobnicate'], 'unknown command'],
    [['push', '--bogus'], 'unknown option'],
    [['join'], 'missing required argument'],
    [['diff', 'x', '--type', 'widget'], 'Allowed choices are concept, entity, analysis, source'],
    [['log', '--limit', 'many'], '--limit must be an integer'],
    [['repos', 'create', 'bad id!'], 'invalid repository id'],
    [['remote', 'set', 'not a url'], 'not a URL'],
    [['remote', 'set-repo', 'a/b'], 'invalid repository id'],
    [['invite', 'revoke', 'kri_abcdef'], 'revoking takes the key id'],
    [['join', 'not-a-token'], 'not an invite token'],
    [['status', 'extra'], 'too many arguments'],
  ])('kr %j', async (args, message) => {
    const u = await user();
    await writeCreds(u, { server_url: deadUrl, token: LEGACY });
    const r = await u.kr(...args);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain(message);
  });
});

describe('kr status and push against the server', () => {
  it('status costs the same few requests whatever the number of pages, and sees every state', async () => {
    const u = await legacyUser();
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`wiki/concepts/p${i}.md`] = page(`P${i}`);
    await seed(u.repo, files);
    expect((await u.kr('pull')).code).toBe(0);
    await seed(u.repo, { 'wiki/concepts/p1.md': page('P1', '## Notes\nChanged on the server.\n'), 'wiki/concepts/p2.md': page('P2', '## Notes\nServer.\n') });
    await u.write('wiki/concepts/p0.md', page('P0', '## Notes\nChanged locally.\n'));
    await u.write('wiki/concepts/p2.md', page('P2', '## Notes\nLocal.\n'));
    await u.write('wiki/entities/fresh.md', page('Fresh'));
    await (await import('node:fs/promises')).unlink(join(u.project, '.kr', 'wiki', 'concepts', 'p3.md'));

    const before = server.logs.length;
    const r = await u.kr('status', '--json');
    expect(r.code, show(r)).toBe(0);
    // One request for the listing, plus two per apparent conflict: before calling a page a conflict,
    // status looks at the server's copy (it may be a push whose answer was lost) and at the page as of the
    // file's base (?at=, to tell a change that will merge on push from a conflict); then one for the server's
    // head ("up to date with the server at <sha>"), asked for beside the listing.
    const requests = server.logs.slice(before).filter((l) => l.includes('"request"'));
    expect(requests).toHaveLength(4);
    const paths = requests.map((l) => JSON.parse(l).path as string);
    expect(paths.filter((p) => p !== `/v1/repos/${u.repo}/timeline`)).toEqual([
      `/v1/repos/${u.repo}/pages`,
      `/v1/repos/${u.repo}/pages/wiki/concepts/p2.md`,
      `/v1/repos/${u.repo}/pages/wiki/concepts/p2.md`,
    ]);
    expect(paths.filter((p) => p === `/v1/repos/${u.repo}/timeline`)).toHaveLength(1);
    expect(JSON.parse(r.stdout).pages.map((p: { path: string; status: string }) => `${p.status} ${p.path}`)).toEqual([
      'modified wiki/concepts/p0.md',
      'behind wiki/concepts/p1.md',
      'conflict wiki/concepts/p2.md',
      'deleted wiki/concepts/p3.md',
      'new wiki/entities/fresh.md',
    ]);
  });

  it('a new local page never overwrites one that exists on the server', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/taken.md': page('Theirs') });
    await u.write('wiki/concepts/taken.md', page('Mine'));
    const r = await u.kr('push');
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toContain('the page already exists on the server');
    const res = await server.api(`/v1/repos/${u.repo}/pages/wiki/concepts/taken.md`);
    expect(await res.text()).toBe(page('Theirs'));
    // Taking theirs makes the project clean again.
    expect((await u.kr('resolve', 'taken', '--theirs')).code).toBe(0);
    expect(await u.read('wiki/concepts/taken.md')).toBe(page('Theirs'));
    expect((await u.kr('status')).stdout).toContain('Up to date');
  });

  it('pull applies deletions and refuses a project linked to another repository', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/a.md': page('A'), 'raw/sessions/s1': 'session log' });
    expect((await u.kr('pull')).code).toBe(0);
    expect(await u.read('raw/sessions/s1')).toBe('session log');
    const del = await server.api(`/v1/repos/${u.repo}/sync/push`, { method: 'POST', json: { files: [{ path: 'raw/sessions/s1', delete: true }] } });
    expect(del.status).toBe(200);
    const r = await u.kr('pull');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('deleted  raw/sessions/s1');
    await expect(stat(join(u.project, '.kr', 'raw', 'sessions', 's1'))).rejects.toThrow();

    const other = await u.kr('--repo', 'elsewhere', 'pull');
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`linked to repository "${u.repo}"`);
  });

  it('an unreachable server is a refusal (exit 1), not a crash', async () => {
    const u = await user();
    await writeCreds(u, { server_url: deadUrl, token: LEGACY });
    const r = await u.kr('repos');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe(`error: cannot reach the server at ${deadUrl}: ECONNREFUSED\n`);
  });
});
