/**
 * GET /v1/repos/:id/export: the repository as a git bundle that plain git verifies and clones, with every
 * page and the whole history, byte for byte.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gitIn, tempDir } from './helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from './helpers/idp.ts';

let srv: IdpTestServer;
let work: { path: string; cleanup: () => Promise<void> };
let owner: SignedIn;
let member: SignedIn;

const push = async (repo: string, token: string, files: unknown[], message: string) => {
  const r = await srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { files, message } });
  expect(r.status).toBe(200);
};
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

beforeAll(async () => {
  srv = await startIdpTestServer();
  work = await tempDir('kr-export-');
  owner = await signIn(srv, { sub: 'o', email: 'owner@example.test', name: 'Owner' });
  member = await signIn(srv, { sub: 'm', email: 'member@example.test', name: 'Member' });
  expect((await srv.api('/v1/repos', { method: 'POST', token: owner.token, json: { id: 'kb' } })).status).toBe(201);
  const key = (await (await srv.api('/v1/repos/kb/invite-keys', { method: 'POST', token: owner.token, json: {} })).json()) as { token: string };
  expect((await srv.api('/v1/repos/join', { method: 'POST', token: member.token, json: { key: key.token } })).status).toBe(200);
});
afterAll(async () => {
  await srv?.stop();
  await work?.cleanup();
});

describe('export', () => {
  it('an empty repository has nothing to bundle: 409', async () => {
    const r = await srv.api('/v1/repos/kb/export', { token: owner.token });
    expect({ status: r.status, body: await r.json() }).toEqual({ status: 409, body: { error: 'repo is empty: nothing to export', code: 'repo_empty' } });
  });

  it('a bundle that git verifies and clones with every page and the whole history', async () => {
    await push('kb', owner.token, [
      { path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nfirst\n' },
      { path: 'wiki/entities/b.md', content: 'b\n' },
    ], 'first pages');
    await push('kb', member.token, [{ path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nsecond\n' }], 'edit a');
    await push('kb', owner.token, [{ path: 'wiki/entities/b.md', delete: true }, { path: 'raw/sessions/s1', content: 'log\u00e9\n' }], 'swap');

    const r = await srv.api('/v1/repos/kb/export', { token: owner.token });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/x-git-bundle');
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="kb.bundle"');
    const file = join(work.path, 'kb.bundle');
    writeFileSync(file, new Uint8Array(await r.arrayBuffer()));

    const gitdir = join(srv.dataRoot, 'repos', 'kb.git');
    const head = gitIn(gitdir, 'rev-parse', 'main').trim();
    // `git bundle verify` needs a repository to run in; an empty one has every prerequisite (none).
    git(work.path, 'init', '-q', 'verify');
    expect(git(join(work.path, 'verify'), 'bundle', 'list-heads', file).trim().split('\n').sort()).toEqual(
      [`${head} HEAD`, `${head} refs/heads/main`].sort(),
    );
    execFileSync('git', ['bundle', 'verify', '-q', file], { cwd: join(work.path, 'verify'), stdio: 'pipe' });

    git(work.path, 'clone', '-q', file, 'clone');
    const clone = join(work.path, 'clone');
    git(clone, 'fsck', '--strict', '--no-dangling');
    expect(git(clone, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(clone, 'log', '--format=%H %an %s', 'HEAD')).toBe(gitIn(gitdir, 'log', '--format=%H %an %s', 'main'));
    expect(readFileSync(join(clone, 'wiki/concepts/a.md'), 'utf8')).toBe('---\ntitle: A\n---\n## One\nsecond\n');
    expect(readFileSync(join(clone, 'raw/sessions/s1'), 'utf8')).toBe('log\u00e9\n');
    expect(git(clone, 'ls-files').trim().split('\n')).toEqual(['raw/sessions/s1', 'wiki/concepts/a.md']);
    expect(git(clone, 'show', 'HEAD~2:wiki/entities/b.md')).toBe('b\n');
  });

  it('owners and the legacy key may export; a member may not', async () => {
    expect((await srv.api('/v1/repos/kb/export', {})).status).toBe(200);
    const r = await srv.api('/v1/repos/kb/export', { token: member.token });
    expect({ status: r.status, body: await r.json() }).toEqual({ status: 403, body: { error: 'only an owner can export', code: 'owner_only_export' } });
  });
});
