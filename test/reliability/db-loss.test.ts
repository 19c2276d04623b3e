import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from '@libsql/client';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { call, logProblems, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { fsckStrict, git, repoDirs, revList } from './helpers/git.ts';

/**
 * Loss of the relational database: with the server stopped, service.db and its -wal/-shm are deleted.
 * After a restart every page, its content, its sha, its history, the timeline, pulls, diffs and
 * evolution are served exactly as before (legacy key), the derived index is rebuilt from git, accounts,
 * tokens, membership and activity are gone (old session and PAT → 401), the first user to sign in again
 * adopts every repository, and nothing in the log is an error.
 */

let idp: IdpStandIn;
let dir: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;
const dataRoot = () => join(dir.path, 'data');
let session = '';
let pat = '';
const REPOS = ['team-wiki', 'legacy-notes', 'empty-one'];

/** Everything the API says about the pages of a repository, as the legacy admin. */
async function served(repo: string): Promise<Record<string, unknown>> {
  const get = async (path: string) => {
    const res = await call(server.url, path);
    const text = await res.text();
    return { status: res.status, sha: res.headers.get('x-page-sha'), body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
  };
  const out: Record<string, unknown> = {};
  out.pages = await get(`/v1/repos/${repo}/pages`);
  out.timeline = await get(`/v1/repos/${repo}/timeline?limit=1000`);
  out.pull = await get(`/v1/repos/${repo}/sync/pull`);
  const pages = (out.pages as { body: { pages: Array<{ path: string }> } }).body.pages;
  const timeline = (out.timeline as { body: { commits: Array<{ sha: string }> } }).body.commits;
  if (timeline.length > 2) out.pullSince = await get(`/v1/repos/${repo}/sync/pull?since=${timeline[timeline.length - 2]!.sha.slice(0, 8)}`);
  for (const p of pages) {
    out[`page ${p.path}`] = await get(`/v1/repos/${repo}/pages/${p.path}`);
    out[`history ${p.path}`] = await get(`/v1/repos/${repo}/history/${p.path}`);
    out[`evolution ${p.path}`] = await get(`/v1/repos/${repo}/evolution/${p.path}?blame=true`);
    const diff = await get(`/v1/repos/${repo}/diff/${p.path}?blame=true`);
    out[`diff ${p.path}`] = diff;
  }
  return out;
}

beforeAll(async () => {
  idp = await startIdp();
  dir = await tempDir('kr-dbloss-');
  const env = { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer };
  server = await spawnServer({ dataRoot: dataRoot(), env });
  const idToken = await idp.signIdToken({ sub: 'ann', email: 'ann@example.test', name: 'Ann' });
  session = ((await (await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } })).json()) as { access_token: string }).access_token;
  pat = ((await (await call(server.url, '/v1/pats', { method: 'POST', token: session, json: {} })).json()) as { token: string }).token;
  expect((await call(server.url, '/v1/repos', { method: 'POST', token: session, json: { id: 'team-wiki' } })).status).toBe(201);
  const pushes: Array<[string, string | undefined, unknown[]]> = [
    ['team-wiki', session, [{ path: 'wiki/concepts/cache.md', content: '---\ntags: [a, b]\n---\nIntro\n## Why\nspeed\n## How\nLRU\n' }]],
    ['team-wiki', pat, [{ path: 'wiki/concepts/cache.md', content: '---\ntags: [b, c]\n---\nIntro\n## Why\nspeed and cost\n## How\nLRU\n## Risks\nstale\n' }, { path: 'wiki/entities/redis.md', content: '## Redis\nkv\n' }]],
    ['team-wiki', session, [{ path: 'wiki/entities/redis.md', delete: true }, { path: 'raw/sessions/2026-01-01', content: 'transcript\n' }]],
    ['team-wiki', pat, [{ path: 'wiki/entities/redis.md', content: '## Redis\nback\n' }]],
    ['legacy-notes', undefined, [{ path: 'a.md', content: 'one\n' }, { path: 'deep/er/b.md', content: 'two\n' }]],
    ['legacy-notes', undefined, [{ path: 'a.md', content: 'one, edited\n' }]],
  ];
  for (const [repo, token, files] of pushes) {
    const res = await call(server.url, `/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { files, author_name: 'Leg Acy', author_email: 'leg@example.test' } });
    expect(res.status, await res.text()).toBe(200);
  }
  expect((await call(server.url, '/v1/repos/empty-one', { method: 'POST' })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await dir?.cleanup();
});

describe('losing service.db', () => {
  it('serves every page and its history from git, rebuilds the index, and forgets accounts', async () => {
    const before: Record<string, unknown> = {};
    for (const repo of REPOS) before[repo] = await served(repo);
    const listBefore = ((await (await call(server.url, '/v1/repos')).json()) as { repos: unknown[] }).repos;
    expect(listBefore).toHaveLength(3);

    await server.stop();
    const firstRun = server;
    expect(logProblems(firstRun.events())).toEqual([]);
    for (const f of ['service.db', 'service.db-wal', 'service.db-shm']) await rm(join(dataRoot(), f), { force: true });
    expect(existsSync(join(dataRoot(), 'service.db'))).toBe(false);

    server = await spawnServer({
      dataRoot: dataRoot(),
      env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
    });
    expect((await call(server.url, '/health', { token: null })).status).toBe(200);
    // Pages and history, exactly as before.
    expect(((await (await call(server.url, '/v1/repos')).json()) as { repos: unknown[] }).repos).toEqual(listBefore);
    for (const repo of REPOS) expect(await served(repo), repo).toEqual(before[repo]);

    // The index was rebuilt from git: one row per commit, in order, and the pages at head.
    const db = createClient({ url: pathToFileURL(join(dataRoot(), 'service.db')).href });
    try {
      for (const repo of REPOS) {
        const gitdir = join(dataRoot(), 'repos', `${repo}.git`);
        const commits = await revList(gitdir);
        const rows = await db.execute({ sql: 'SELECT sha FROM git_commits WHERE repo_id = ? ORDER BY seq DESC', args: [repo] });
        expect(rows.rows.map((r) => String(r.sha)), repo).toEqual(commits);
        const head = await db.execute({ sql: 'SELECT path FROM git_head WHERE repo_id = ? ORDER BY path', args: [repo] });
        const files = commits.length ? (await git(gitdir, 'ls-tree', '-r', '--name-only', 'main')).trim().split('\n').sort() : [];
        expect(head.rows.map((r) => String(r.path)), repo).toEqual(files);
      }
      // Accounts, tokens, membership and activity are gone.
      for (const table of ['users', 'pats', 'members', 'invite_keys', 'activity']) {
        const n = await db.execute(`SELECT COUNT(*) AS n FROM ${table}`);
        expect(Number(n.rows[0]!.n), table).toBe(0);
      }
    } finally {
      db.close();
    }
    for (const token of [session, pat]) {
      const res = await call(server.url, '/v1/me', { token });
      expect([res.status, await res.json()]).toEqual([401, { error: 'invalid token', code: 'invalid_token' }]);
      expect((await call(server.url, '/v1/repos/team-wiki/pages', { token })).status).toBe(401);
    }

    // The same person signs in again: a new account, which (as the first user) adopts every repository.
    const idToken = await idp.signIdToken({ sub: 'ann', email: 'ann@example.test', name: 'Ann' });
    const again = (await (await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } })).json()) as { access_token: string };
    const mine = ((await (await call(server.url, '/v1/repos', { token: again.access_token })).json()) as { repos: Array<{ id: string; role: string }> }).repos;
    expect(mine.map((r) => [r.id, r.role])).toEqual([...REPOS].sort().map((id) => [id, 'owner']));
    // And can keep working on top of the old history.
    const head = (before['team-wiki'] as { timeline: { body: { commits: Array<{ sha: string }> } } }).timeline.body.commits[0]!.sha;
    const res = await call(server.url, '/v1/repos/team-wiki/sync/push', {
      method: 'POST',
      token: again.access_token,
      json: { files: [{ path: 'wiki/entities/redis.md', content: '## Redis\nafter the loss\n', parent_sha: head }] },
    });
    expect(res.status).toBe(200);

    for (const d of await repoDirs(dataRoot())) await fsckStrict(join(dataRoot(), 'repos', d));
    expect(logProblems(server.events())).toEqual([]);
  });
});
