/**
 * `kr links`, `kr export`, `kr repos delete` and `kr members role` through the real `kr` executable against
 * the real server, with real users signed in through the identity-provider stand-in (each with a personal
 * access token for kr). Alice owns the repository, Bob is a member.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startIdpTestServer, signIn, type IdpTestServer, type SignedIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';

let server: IdpTestServer;
let root: { path: string; cleanup: () => Promise<void> };
let alice: KrUser;
let bob: KrUser;
let aliceSession: SignedIn;
let bobSession: SignedIn;

const api = (path: string, token: string, init: RequestInit & { json?: unknown } = {}) => server.api(path, { token, ...init });

/** A personal access token for `who`, and kr logged in with it. */
async function login(u: KrUser, session: SignedIn): Promise<void> {
  const res = await api('/v1/pats', session.token, { method: 'POST', json: { label: 'cli' } });
  const { token } = (await res.json()) as { token: string };
  const r = await u.kr('login', '--server', server.url, '--token', token);
  expect(r.code, show(r)).toBe(0);
}

async function push(repo: string, token: string, files: Array<{ path: string; content: string }>): Promise<void> {
  const r = await api(`/v1/repos/${repo}/sync/push`, token, { method: 'POST', json: { files, message: 'seed' } });
  expect(r.status, await r.text()).toBe(200);
}

/** Alice creates `id` and Bob joins it. */
async function teamRepo(id: string): Promise<void> {
  expect((await api('/v1/repos', aliceSession.token, { method: 'POST', json: { id } })).status).toBe(201);
  const key = (await (await api(`/v1/repos/${id}/invite-keys`, aliceSession.token, { method: 'POST', json: {} })).json()) as { token: string };
  expect((await api('/v1/repos/join', bobSession.token, { method: 'POST', json: { key: key.token } })).status).toBe(200);
}

const exists = async (id: string) => (await api(`/v1/repos/${id}/pages`, 'test-legacy-key')).status === 200;

beforeAll(async () => {
  server = await startIdpTestServer();
  root = await tempDir('kr-cli-lifecycle-');
  aliceSession = await signIn(server, { sub: 'alice-1', email: 'alice@example.com', name: 'Alice' });
  bobSession = await signIn(server, { sub: 'bob-1', email: 'Bob@Example.com', name: 'Bob' });
  alice = await krUser(root.path, 'alice');
  bob = await krUser(root.path, 'bob');
  await login(alice, aliceSession);
  await login(bob, bobSession);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('kr links', () => {
  it('both directions, by slug in the project folder or by path; --json is the server\'s answer', async () => {
    await teamRepo('kb');
    await push('kb', aliceSession.token, [
      { path: 'wiki/concepts/notes.md', content: '---\ntitle: Notes\n---\n[[postgres]] [[caching]] [[ghost]] [r](../entities/redis.md)\n' },
      { path: 'wiki/concepts/caching.md', content: '---\ntitle: Caching\n---\n[[notes]]\n' },
      { path: 'wiki/concepts/postgres.md', content: 'c' },
      { path: 'wiki/entities/postgres.md', content: 'e' },
      { path: 'wiki/entities/redis.md', content: 'r' },
    ]);
    for (const args of [['init', '--repo', 'kb', '--no-mcp'], ['pull']]) {
      const r = await bob.kr(...args);
      expect(r.code, show(r)).toBe(0);
    }
    const r = await bob.kr('links', 'notes');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(
      [
        'wiki/concepts/notes.md in kb',
        '',
        'Links to (4, in the order they appear):',
        '  postgres              ambiguous: a page of that slug under several types ([[type/slug]] picks one)',
        '  caching               → wiki/concepts/caching.md',
        '  ghost                 unresolved: no such page',
        '  ../entities/redis.md  → wiki/entities/redis.md',
        '',
        'Linked from (1):',
        '  wiki/concepts/caching.md  Caching',
        '',
      ].join('\n'),
    );
    const j = await bob.kr('links', 'wiki/entities/redis.md', '--json');
    expect(j.code, show(j)).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({ path: 'wiki/entities/redis.md', outgoing: [], incoming: [{ path: 'wiki/concepts/notes.md', title: 'Notes' }] });
    const none = await bob.kr('links', 'redis');
    expect(none.stdout).toContain('Links to: none');
    const missing = await bob.kr('links', 'wiki/concepts/nope.md');
    expect([missing.code, missing.stderr.trim()]).toEqual([1, 'error: page not found']);
  });
});

describe('kr members role', () => {
  it('promotes and demotes by email (any case); the last owner stays; bad roles are usage errors', async () => {
    await teamRepo('team');
    const promote = await alice.kr('--repo', 'team', 'members', 'role', 'BOB@example.COM', 'owner');
    expect(promote.code, show(promote)).toBe(0);
    expect(promote.stdout).toBe('bob@example.com is now an owner of team.\n');
    const again = await alice.kr('--repo', 'team', 'members', 'role', 'bob@example.com', 'owner', '--json');
    expect(JSON.parse(again.stdout)).toEqual({ user_id: bobSession.user.id, email: 'bob@example.com', role: 'owner' });
    const demoteAlice = await bob.kr('--repo', 'team', 'members', 'role', 'alice@example.com', 'member');
    expect(demoteAlice.stdout).toBe('alice@example.com is now a member of team.\n');
    const last = await bob.kr('--repo', 'team', 'members', 'role', 'bob@example.com', 'member');
    expect([last.code, last.stderr.trim()]).toEqual([1, "error: can't remove the last owner"]);
    const notOwner = await alice.kr('--repo', 'team', 'members', 'role', 'bob@example.com', 'member');
    expect([notOwner.code, notOwner.stderr.trim()]).toEqual([1, 'error: only an owner can change roles']);
    const stranger = await bob.kr('--repo', 'team', 'members', 'role', 'carol@example.com', 'owner');
    expect([stranger.code, stranger.stderr.trim()]).toEqual([1, 'error: carol@example.com is not a member of team']);
    const bad = await bob.kr('--repo', 'team', 'members', 'role', 'alice@example.com', 'admin');
    expect([bad.code, bad.stderr.trim()]).toEqual([2, 'error: the role must be owner or member, not "admin"']);
  });
});

describe('kr export and kr repos delete', () => {
  it('kr export writes a bundle git clones; an existing file is kept unless --force', async () => {
    await teamRepo('exp');
    await push('exp', aliceSession.token, [{ path: 'wiki/concepts/a.md', content: 'a\n' }]);
    const r = await alice.kr('--repo', 'exp', 'export');
    expect(r.code, show(r)).toBe(0);
    const file = join(alice.project, 'exp.bundle');
    expect(r.stdout).toContain(`Exported exp (`);
    execFileSync('git', ['clone', '-q', file, join(root.path, 'exp-clone')]);
    expect(existsSync(join(root.path, 'exp-clone', 'wiki', 'concepts', 'a.md'))).toBe(true);
    const twice = await alice.kr('--repo', 'exp', 'export');
    expect([twice.code, twice.stderr.trim()]).toEqual([1, `error: ${file} exists already: give another file (or --force to replace it)`]);
    expect((await alice.kr('--repo', 'exp', 'export', '--force')).code).toBe(0);
    const member = await bob.kr('--repo', 'exp', 'export', '-o', join(bob.home, 'x.bundle'));
    expect([member.code, member.stderr.trim()]).toEqual([1, 'error: only an owner can export']);
  });

  it('asks to type the id, after offering an export; a wrong answer or no answer deletes nothing', async () => {
    await teamRepo('gone1');
    await push('gone1', aliceSession.token, [{ path: 'wiki/concepts/a.md', content: 'a\n' }]);
    // No input at all (a script that forgot --confirm): nothing happens, not even the export.
    const silent = await alice.kr('repos', 'delete', 'gone1');
    expect([silent.code, silent.stderr.split('\n').at(-2)]).toEqual([1, 'error: not deleted: no answer (type the id when asked, or pass --confirm gone1)']);
    expect(existsSync(join(alice.project, 'gone1.bundle'))).toBe(false);
    const wrong = await alice.krWith({ input: 'n\ngone\n' }, 'repos', 'delete', 'gone1');
    expect(wrong.code, show(wrong)).toBe(1);
    expect(wrong.stderr).toContain('There is no undo.');
    expect(wrong.stderr).toContain('Export it first to gone1.bundle? [Y/n] ');
    expect(wrong.stderr).toContain('Type the repository id to delete it (gone1): ');
    expect(wrong.stderr).toContain('error: not deleted: "gone" is not "gone1"');
    expect(await exists('gone1')).toBe(true);
    // Yes to the export (the default), then the id: exported, then deleted.
    const ok = await alice.krWith({ input: '\ngone1\n' }, 'repos', 'delete', 'gone1');
    expect(ok.code, show(ok)).toBe(0);
    expect(ok.stderr).toContain(`Exported gone1 to ${join(alice.project, 'gone1.bundle')}.`);
    expect(ok.stdout).toBe('Deleted repository gone1: its pages, history, members, invite keys and activity are gone.\n');
    expect(existsSync(join(alice.project, 'gone1.bundle'))).toBe(true);
    expect(await exists('gone1')).toBe(false);
  });

  it('--confirm <id> and --yes do not ask; --export writes the bundle first; refusals come from the server', async () => {
    await teamRepo('gone2');
    await teamRepo('gone3');
    await push('gone2', aliceSession.token, [{ path: 'wiki/concepts/a.md', content: 'a\n' }]);
    const mismatch = await alice.kr('repos', 'delete', 'gone2', '--confirm', 'gone3');
    expect([mismatch.code, mismatch.stderr.trim()]).toEqual([2, 'error: --confirm must repeat the repository id exactly ("gone2"), not "gone3"']);
    const member = await bob.kr('repos', 'delete', 'gone2', '--yes');
    expect([member.code, member.stderr.trim()]).toEqual([1, 'error: only an owner can delete a repository']);
    const bundle = join(alice.home, 'gone2.bundle');
    const confirmed = await alice.kr('repos', 'delete', 'gone2', '--confirm', 'gone2', '--export', bundle, '--json');
    expect(confirmed.code, show(confirmed)).toBe(0);
    expect(JSON.parse(confirmed.stdout)).toEqual({ deleted: 'gone2', exported: bundle });
    expect(existsSync(bundle)).toBe(true);
    expect(await exists('gone2')).toBe(false);
    // An empty repository has nothing to export: said, and the deletion goes on.
    const empty = await alice.kr('repos', 'delete', 'gone3', '--yes', '--export', join(alice.home, 'gone3.bundle'));
    expect(empty.code, show(empty)).toBe(0);
    expect(empty.stderr).toContain('gone3 has no commit yet: nothing to export.');
    expect(await exists('gone3')).toBe(false);
    const again = await alice.kr('repos', 'delete', 'gone3', '--yes');
    expect([again.code, again.stderr.trim()]).toEqual([1, 'error: not a member of this repo: gone3 does not exist, or you do not belong to it ("kr repos" lists yours)']);
    const bad = await alice.kr('repos', 'delete', 'a;b', '--yes');
    expect(bad.code).toBe(2);
  });
});

describe('kr repos import', () => {
  it('streams a git bundle into a new repository (--json is the server\'s answer); refusals are the server\'s words', async () => {
    const src = join(root.path, 'import-src');
    execFileSync('git', ['init', '-q', '-b', 'main', src]);
    const g = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', ...args], { cwd: src, encoding: 'utf8' });
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(src, 'page.md'), `# Page\n\nversion ${i}\n`);
      g('add', '-A');
      g('commit', '-q', '-m', `version ${i}`);
    }
    g('bundle', 'create', '-q', join(root.path, 'docs.bundle'), 'HEAD', 'main');
    const head = g('rev-parse', 'HEAD').trim();
    const r = await alice.kr('repos', 'import', 'imported', join(root.path, 'docs.bundle'));
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(`Imported ${join(root.path, 'docs.bundle')} into imported: 3 commits, 1 page at head ${head}.\n`);
    const again = await alice.kr('repos', 'import', 'imported', join(root.path, 'docs.bundle'));
    expect([again.code, again.stderr.trim()]).toEqual([1, 'error: repository is not empty']);
    const j = await bob.kr('repos', 'import', 'imported2', join(root.path, 'docs.bundle'), '--json');
    expect(j.code, show(j)).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({ id: 'imported2', head, commits: 3, pages: 1 });
    writeFileSync(join(root.path, 'junk.bundle'), 'not a bundle\n');
    const junk = await alice.kr('repos', 'import', 'junk', join(root.path, 'junk.bundle'));
    expect([junk.code, junk.stderr.trim()]).toEqual([1, 'error: invalid bundle: not a git bundle (v2 or v3)']);
    expect(await exists('junk')).toBe(false);
    const missing = await alice.kr('repos', 'import', 'junk', join(root.path, 'nope.bundle'));
    expect(missing.code).toBe(2);
  });
});
