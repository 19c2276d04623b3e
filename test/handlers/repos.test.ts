import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import reposCreate from '../../functions/repos/create.ts';
import reposCreateLegacy from '../../functions/repos/create-legacy.ts';
import reposList from '../../functions/repos/list.ts';
import reposExport from '../../functions/repos/export.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('POST /v1/repos (functions/repos/create.ts)', () => {
  it('creates the repository with the caller as owner: 201 {"id","role":"owner"}', async () => {
    h = await mountHandler(reposCreate);
    const alice = await h.user('alice@example.com');
    const res = await alice.request('/v1/repos', { method: 'POST', json: { id: 'notes' } });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 'notes', role: 'owner' });
    expect(await h.deps.repos.exists('notes')).toBe(true);
    expect(await h.deps.members.roleOf('notes', alice.id)).toBe('owner');
  });

  it('409 when it exists, also ignoring letter case; 400 on a bad id; 403 for the legacy key', async () => {
    h = await mountHandler(reposCreate);
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    for (const id of ['notes', 'Notes']) {
      const res = await alice.request('/v1/repos', { method: 'POST', json: { id } });
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ error: 'repo already exists', code: 'repo_exists' });
    }
    const bad = await alice.request('/v1/repos', { method: 'POST', json: { id: '-x' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'id must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}', code: 'invalid_new_repo_id' });
    const legacy = await h.legacy.request('/v1/repos', { method: 'POST', json: { id: 'other' } });
    expect(legacy.status).toBe(403);
    expect(await legacy.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    expect(await h.deps.repos.list()).toEqual(['notes']);
  });

  it('hosted: one over the free plan is 402 quota_repos and nothing is created', async () => {
    h = await mountHandler(reposCreate, { env: { SERVICE_HOSTED: '1', SERVICE_PLAN_FREE_REPOS: '1' } });
    const alice = await h.user('alice@example.com');
    expect((await alice.request('/v1/repos', { method: 'POST', json: { id: 'one' } })).status).toBe(201);
    const res = await alice.request('/v1/repos', { method: 'POST', json: { id: 'two' } });
    expect(res.status).toBe(402);
    expect(await res.json()).toEqual({
      error: 'repository limit reached for your plan (1)',
      code: 'quota_repos',
      limit: 1,
      upgrade_url: 'http://localhost:5173/billing',
    });
    expect(await h.deps.repos.exists('two')).toBe(false);
  });
});

describe('POST /v1/repos/:id (functions/repos/create-legacy.ts)', () => {
  it('creates idempotently: 201 {"repo_id"} with the id stripped; a new one gets its creator as owner', async () => {
    h = await mountHandler(reposCreateLegacy);
    const alice = await h.user('alice@example.com');
    const res = await alice.request('/v1/repos/my.notes', { method: 'POST' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ repo_id: 'mynotes' });
    expect(await h.deps.members.roleOf('mynotes', alice.id)).toBe('owner');
    const again = await h.legacy.request('/v1/repos/mynotes', { method: 'POST' });
    expect(again.status).toBe(201);
    expect(await again.json()).toEqual({ repo_id: 'mynotes' });
  });

  it('a non-member on an existing repository gets 403; a stripped-empty id 400', async () => {
    h = await mountHandler(reposCreateLegacy);
    const bob = await h.user('bob@example.com');
    await h.deps.repos.create('notes');
    const res = await bob.request('/v1/repos/notes', { method: 'POST' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    expect(await h.deps.members.roleOf('notes', bob.id)).toBeNull();
    const bad = await h.legacy.request('/v1/repos/...', { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid repo id', code: 'invalid_repo_id' });
  });
});

describe('GET /v1/repos (functions/repos/list.ts)', () => {
  it('a user sees their own repositories with role and last commit; the legacy key sees all', async () => {
    h = await mountHandler(reposList, { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const sha = await h.commit('notes', { 'a.md': 'a', 'b.md': 'b' }, { message: 'two pages' });
    await h.deps.repos.create('empty');
    await h.deps.repos.create('others');
    await h.deps.members.add('notes', alice.id, 'member');
    await h.deps.members.add('empty', alice.id, 'owner');
    const lastCommit = { sha, author: 'Test', email: 'test@example.com', time: '2026-01-01T00:00:00Z', message: 'two pages' };

    const mine = await alice.request('/v1/repos');
    expect(mine.status).toBe(200);
    expect(await mine.json()).toEqual({
      repos: [
        { id: 'empty', page_count: 0, role: 'owner' },
        { id: 'notes', page_count: 2, last_commit: lastCommit, role: 'member' },
      ],
    });
    const all = await h.legacy.request('/v1/repos');
    expect(await all.json()).toEqual({
      repos: [
        { id: 'empty', page_count: 0 },
        { id: 'notes', page_count: 2, last_commit: lastCommit },
        { id: 'others', page_count: 0 },
      ],
    });
  });
});

describe('GET /v1/repos/:id/export (functions/repos/export.ts)', () => {
  it('answers a git bundle that the git command reads, for an owner', async () => {
    h = await mountHandler(reposExport);
    const alice = await h.user('alice@example.com');
    const sha = await h.commit('notes', { 'a.md': '# A\n' });
    await h.deps.members.add('notes', alice.id, 'owner');
    const res = await alice.request('/v1/repos/notes/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-git-bundle');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="notes.bundle"');
    const file = join(h.dataRoot, 'notes.bundle');
    await writeFile(file, new Uint8Array(await res.arrayBuffer()));
    const heads = execFileSync('git', ['bundle', 'list-heads', file, 'refs/heads/main'], { encoding: 'utf8' });
    expect(heads).toBe(`${sha} refs/heads/main\n`);
    const clone = join(h.dataRoot, 'clone');
    execFileSync('git', ['clone', '--quiet', file, clone], { stdio: 'pipe' });
    expect(execFileSync('git', ['-C', clone, 'show', 'HEAD:a.md'], { encoding: 'utf8' })).toBe('# A\n');
  });

  it('a member gets 403, an empty repository 409', async () => {
    h = await mountHandler(reposExport);
    const bob = await h.user('bob@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', bob.id, 'member');
    const member = await bob.request('/v1/repos/notes/export');
    expect(member.status).toBe(403);
    expect(await member.json()).toEqual({ error: 'only an owner can export', code: 'owner_only_export' });
    const empty = await h.legacy.request('/v1/repos/notes/export');
    expect(empty.status).toBe(409);
    expect(await empty.json()).toEqual({ error: 'repo is empty: nothing to export', code: 'repo_empty' });
  });
});
