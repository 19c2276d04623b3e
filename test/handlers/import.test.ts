import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import reposImport from '../../functions/repos/import.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';
import { fsck } from '../helpers/env.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** git in `cwd`, with a fixed identity and date and no user configuration. */
const git = (cwd: string, args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Ada Author',
      GIT_AUTHOR_EMAIL: 'ada@example.test',
      GIT_COMMITTER_NAME: 'Ada Author',
      GIT_COMMITTER_EMAIL: 'ada@example.test',
      GIT_AUTHOR_DATE: '1767000000 +0000',
      GIT_COMMITTER_DATE: '1767000000 +0000',
    },
  });

/** A bundle git made of two commits (three pages at the head), and its head's sha. */
async function makeBundle(root: string): Promise<{ bundle: Uint8Array; head: string }> {
  const dir = join(root, 'src');
  await mkdir(join(dir, 'wiki'), { recursive: true });
  git(dir, ['init', '-q', '-b', 'main']);
  await writeFile(join(dir, 'README.md'), '# Docs\n');
  await writeFile(join(dir, 'wiki', 'a.md'), '---\ntitle: A\n---\n## One\nfirst\n');
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'first pages']);
  await writeFile(join(dir, 'wiki', 'a.md'), '---\ntitle: A\n---\n## One\nsecond\n');
  await writeFile(join(dir, 'wiki', 'b.md'), 'b links [[a]]\n');
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'more']);
  git(dir, ['bundle', 'create', '-q', join(root, 'src.bundle'), 'main']);
  return { bundle: new Uint8Array(await readFile(join(root, 'src.bundle'))), head: git(dir, ['rev-parse', 'HEAD']).trim() };
}

const post = async (caller: { request: MountedHandler['request'] }, repo: string, body: Uint8Array | string) => {
  const res = await caller.request(`/v1/repos/${repo}/import`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-git-bundle' },
    body: body as BodyInit,
  });
  return { status: res.status, body: await res.json() };
};

async function team(m: MountedHandler): Promise<{ alice: TestUser; bob: TestUser }> {
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  await m.deps.repos.create('team');
  await m.deps.members.add('team', alice.id, 'owner');
  await m.deps.members.add('team', bob.id, 'member');
  return { alice, bob };
}

describe('POST /v1/repos/:id/import (functions/repos/import.ts)', () => {
  it("201 with the head, commits and pages; the repository is the bundle's history, the importer its owner", async () => {
    h = await mountHandler(reposImport);
    const { bundle, head } = await makeBundle(h.dataRoot);
    const carol = await h.user('carol@example.com');
    expect(await post(carol, 'wiki', bundle)).toEqual({ status: 201, body: { id: 'wiki', head, commits: 2, pages: 3 } });
    expect((await h.deps.repos.head('wiki'))?.sha).toBe(head);
    expect(await h.deps.members.roleOf('wiki', carol.id)).toBe('owner');
    fsck(join(h.dataRoot, 'repos', 'wiki.git'));
  });

  it("an owner's empty repository takes it; a member gets 403 `only an owner can import`", async () => {
    h = await mountHandler(reposImport);
    const { bundle, head } = await makeBundle(h.dataRoot);
    const { alice, bob } = await team(h);
    expect(await post(bob, 'team', bundle)).toEqual({ status: 403, body: { error: 'only an owner can import', code: 'owner_only_import' } });
    expect(await h.deps.repos.head('team')).toBeNull();
    expect(await post(alice, 'team', bundle)).toEqual({ status: 201, body: { id: 'team', head, commits: 2, pages: 3 } });
  });

  it('409 `repository is not empty` once it has a commit, for an owner and the legacy key', async () => {
    h = await mountHandler(reposImport);
    const { bundle } = await makeBundle(h.dataRoot);
    const { alice } = await team(h);
    const before = await h.commit('team', { 'x.md': 'x\n' });
    expect(await post(alice, 'team', bundle)).toEqual({ status: 409, body: { error: 'repository is not empty', code: 'repo_not_empty' } });
    expect(await post(h.legacy, 'team', bundle)).toEqual({ status: 409, body: { error: 'repository is not empty', code: 'repo_not_empty' } });
    expect((await h.deps.repos.head('team'))?.sha).toBe(before);
  });

  it('400 `invalid bundle: …` for garbage, and nothing is left behind', async () => {
    h = await mountHandler(reposImport);
    const carol = await h.user('carol@example.com');
    expect(await post(carol, 'junk', 'hello, not a bundle\n')).toEqual({ status: 400, body: { error: 'invalid bundle: not a git bundle (v2 or v3)', code: 'invalid_bundle' } });
    expect(await post(carol, 'junk', `# v2 git bundle\n${'a'.repeat(40)} refs/heads/main\n\n`)).toEqual({
      status: 400,
      body: { error: 'invalid bundle: no pack after the header', code: 'invalid_bundle' },
    });
    expect(await h.deps.repos.exists('junk')).toBe(false);
    expect(await h.deps.members.roleOf('junk', carol.id)).toBeNull();
  });

  it('401 without credentials; 403 for a user who is not a member of an existing repository', async () => {
    h = await mountHandler(reposImport);
    await team(h);
    const dave = await h.user('dave@example.com');
    expect(await post(h, 'team', 'x')).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
    expect(await post(dave, 'team', 'x')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
  });
});
