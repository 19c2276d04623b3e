/**
 * A team without an identity provider, the whole path as a new team would walk it with nothing but the repository: the server as its
 * own process with no identity provider, the admin command making two users and their tokens, and `kr`
 * alone taking them through create → invite → join → edit → conflict → resolve → history and diff.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { spawnServer, type ServerProc } from './reliability/helpers/server-process.ts';
import { runAdmin as admin } from './helpers/admin.ts';

const PAGE = 'wiki/concepts/decision-log.md';
const V1 = '---\ntitle: Decision log\n---\n## Decision\nUse git.\n## Consequences\nNone yet.\n';
const BOB = '---\ntitle: Decision log\n---\n## Decision\nUse git, one repository per project.\n## Consequences\nNone yet.\n';
const ALICE = '---\ntitle: Decision log\n---\n## Decision\nUse git.\n## Consequences\nHistory for free.\n';
const MERGED = '---\ntitle: Decision log\n---\n## Decision\nUse git, one repository per project.\n## Consequences\nHistory for free.\n';

let root: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;
let alice: KrUser;
let bob: KrUser;

beforeAll(async () => {
  root = await tempDir('kr-team-');
  const dataRoot = join(root.path, 'data');
  // No IDP_* variable: only the legacy key and the admin command's tokens exist.
  server = await spawnServer({ dataRoot });
  alice = await krUser(root.path, 'alice');
  bob = await krUser(root.path, 'bob');
  for (const [who, name] of [
    [alice, 'Alice'],
    [bob, 'Bob'],
  ] as const) {
    const email = `${who.name}@example.test`;
    const added = await admin(dataRoot, 'user', 'add', email, '--name', name, '--json');
    expect(added.code, added.stderr).toBe(0);
    const token = await admin(dataRoot, 'token', email, '--label', 'laptop', '--json');
    expect(token.code, token.stderr).toBe(0);
    const login = await who.kr('login', '--server', server.url, '--token', JSON.parse(token.stdout).token);
    expect(login.code, show(login)).toBe(0);
    expect(login.stdout).toContain(`as ${email}`);
  }
});

afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('a two-person team with no identity provider', () => {
  it('kr login without a token says how to get one: the admin command', async () => {
    const r = await alice.kr('login', '--server', server.url);
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain('npm run admin -- token');
  });

  it('Alice creates a repository, pushes a page and invites Bob, who joins and pulls it', async () => {
    expect((await alice.kr('repos', 'create', 'team')).code).toBe(0);
    expect((await alice.kr('init')).code).toBe(0);
    await alice.write(PAGE, V1);
    const push = await alice.kr('push', '-m', 'first page');
    expect(push.code, show(push)).toBe(0);

    const invite = await alice.kr('invite', 'create', '--label', 'bob', '--json');
    expect(invite.code, show(invite)).toBe(0);
    const join_ = await bob.kr('join', JSON.parse(invite.stdout).token);
    expect(join_.code, show(join_)).toBe(0);
    expect((await bob.kr('init')).code).toBe(0);
    const pull = await bob.kr('pull');
    expect(pull.code, show(pull)).toBe(0);
    expect(await bob.read(PAGE)).toBe(V1);
  });

  it('both edit the page: Bob pushes first, Alice (--no-merge) gets a conflict, merges and resolves, Bob pulls the merge', async () => {
    await bob.write(PAGE, BOB);
    const bobPush = await bob.kr('push', '-m', 'decision');
    expect(bobPush.code, show(bobPush)).toBe(0);

    await alice.write(PAGE, ALICE);
    // Different sections: a merging push would go through; --no-merge keeps the original conflict, and she
    // resolves it by hand.
    const conflict = await alice.kr('push', '--no-merge', '-m', 'consequences');
    expect(conflict.code).not.toBe(0);
    expect(conflict.stdout).toContain(`conflict  ${PAGE}`);
    expect(await alice.read(PAGE)).toBe(ALICE);

    // The pull brings the rest up to date, keeps her file, and says that a (merging) push would take it.
    const alicePull = await alice.kr('pull');
    expect(alicePull.code, show(alicePull)).toBe(0);
    expect(alicePull.stdout).toContain(`will merge on push ${PAGE}: changed here and on the server in different parts; your file was kept`);
    expect(await alice.read(PAGE)).toBe(ALICE);
    await alice.write(PAGE, MERGED);
    const resolve = await alice.kr('resolve', 'decision-log');
    expect(resolve.code, show(resolve)).toBe(0);
    const merged = await alice.kr('push', '-m', 'merge');
    expect(merged.code, show(merged)).toBe(0);

    expect((await bob.kr('pull')).code).toBe(0);
    expect(await bob.read(PAGE)).toBe(MERGED);
  });

  it('history and diff show who changed what', async () => {
    const history = await bob.kr('history', 'decision-log', '--json');
    expect(history.code, show(history)).toBe(0);
    const commits = JSON.parse(history.stdout).commits as Array<{ email: string; message: string }>;
    expect(commits.map((c) => [c.email, c.message])).toEqual([
      ['alice@example.test', 'merge'],
      ['bob@example.test', 'decision'],
      ['alice@example.test', 'first page'],
    ]);
    const diff = await bob.kr('diff', 'decision-log', '--blame');
    expect(diff.code, show(diff)).toBe(0);
    expect(diff.stdout).toContain('## Consequences');
    expect(diff.stdout).toContain('History for free.');
  });
});
