/**
 * The command-line client end to end: the real `kr` executable (node + cli/kr.mjs) as a child process,
 * HOME in a temp dir, against the real server on port 0 with two real users signed in through the
 * identity-provider stand-in. One walk through the two-user loop (docs/cli.md): create, push, invite, join,
 * pull, edit, conflict, resolve, diff --local, blame, members remove. The steps run in order and share state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startIdpTestServer, signIn, type IdpTestServer, type SignedIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';

const DECISION = 'wiki/concepts/decision-log.md';
const ACME = 'wiki/entities/acme.md';

const decisionV1 = `---
title: Decision log
tags: [architecture, storage]
---
Why the service stores pages the way it does.

## Context
We need a store for project knowledge pages.

## Decision
Use git as the source of truth.

## Consequences
History comes for free.
`;

// Bob: a new Decision and a new Risks section.
const decisionBob = decisionV1
  .replace('Use git as the source of truth.', 'Use git as the source of truth, one bare repository per project.')
  .concat('\n## Risks\nisomorphic-git never packs objects.\n');

// Alice, from v1: a longer Consequences section and a new tag.
const decisionAlice = decisionV1
  .replace('History comes for free.', 'History comes for free.\nBackups are plain git clones.')
  .replace('tags: [architecture, storage]', 'tags: [architecture, storage, backups]');

// Alice's merge of both.
const decisionMerged = decisionBob
  .replace('History comes for free.', 'History comes for free.\nBackups are plain git clones.')
  .replace('tags: [architecture, storage]', 'tags: [architecture, storage, backups]');

const acmeV1 = `---
title: ACME Corp
---
## Profile
The customer who asked for the service.
`;

let server: IdpTestServer;
let root: { path: string; cleanup: () => Promise<void> };
let alice: KrUser;
let bob: KrUser;
let aliceSession: SignedIn;
let bobSession: SignedIn;
let inviteToken = '';
let inviteKeyId = '';

beforeAll(async () => {
  server = await startIdpTestServer();
  root = await tempDir('kr-cli-');
  alice = await krUser(root.path, 'alice');
  bob = await krUser(root.path, 'bob');
  aliceSession = await signIn(server, { sub: 'alice-1', email: 'alice@example.com', name: 'Alice' });
  bobSession = await signIn(server, { sub: 'bob-1', email: 'bob@example.com', name: 'Bob' });
});

afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('kr: the two-user loop', () => {
  it('logs in after verifying the token, and stores it in a 0600 credentials file', async () => {
    const r = await alice.kr('login', '--server', server.url, '--token', aliceSession.token);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('as alice@example.com');
    const credsPath = join(alice.configDir, 'credentials.json');
    expect((await stat(credsPath)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(credsPath, 'utf8'))).toEqual({ server_url: server.url, token: aliceSession.token });

    // The token may also come from stdin.
    const b = await bob.krWith({ input: `${bobSession.token}\n` }, 'login', '--server', server.url, '--token', '-');
    expect(b.code, show(b)).toBe(0);
    expect(b.stdout).toContain('as bob@example.com');
  });

  it('creates a repository, which becomes the current one', async () => {
    const r = await alice.kr('repos', 'create', 'demo');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Created repository demo');
    expect(JSON.parse(await readFile(join(alice.configDir, 'config.json'), 'utf8'))).toMatchObject({ repo: 'demo' });
    const get = await alice.kr('remote', 'get', '--json');
    expect(JSON.parse(get.stdout)).toMatchObject({ server_url: server.url, server_url_from: 'credentials', repo: 'demo', logged_in: true });
    const list = await alice.kr('repos', '--json');
    expect(JSON.parse(list.stdout).repos).toEqual([expect.objectContaining({ id: 'demo', role: 'owner', page_count: 0 })]);
  });

  it('initialises the project layout and pushes new pages', async () => {
    const init = await alice.kr('init');
    expect(init.code, show(init)).toBe(0);
    for (const d of ['wiki/concepts', 'wiki/entities', 'wiki/analyses', 'raw/sessions']) {
      expect((await stat(join(alice.project, '.kr', d))).isDirectory()).toBe(true);
    }
    await alice.write(DECISION, decisionV1);
    await alice.write(ACME, acmeV1);

    const st = await alice.kr('status', '--json');
    expect(st.code, show(st)).toBe(0);
    expect(JSON.parse(st.stdout).pages).toEqual([
      { path: DECISION, status: 'new' },
      { path: ACME, status: 'new' },
    ]);

    const dry = await alice.kr('push', '--dry-run');
    expect(dry.code, show(dry)).toBe(0);
    expect(dry.stdout).toContain(DECISION);

    const push = await alice.kr('push', '-m', 'first pages');
    expect(push.code, show(push)).toBe(0);
    expect(push.stdout).toMatch(/Pushed 2 page\(s\) to demo/);

    const again = await alice.kr('push');
    expect(again.stdout).toContain('Nothing to push');
    const clean = await alice.kr('status');
    expect(clean.stdout).toContain('Up to date');

    const res = await server.api('/v1/repos/demo/pages/' + DECISION, { token: aliceSession.token });
    expect(await res.text()).toBe(decisionV1);
  });

  it('mints an invite key and lists it: key id first, label, UTC expiry, status', async () => {
    const r = await alice.kr('invite', 'create', '--label', 'for bob', '--json');
    expect(r.code, show(r)).toBe(0);
    const minted = JSON.parse(r.stdout);
    inviteToken = minted.token;
    inviteKeyId = minted.key.id;
    expect(inviteToken).toMatch(/^kri_[A-Za-z0-9_-]{32}$/);

    const human = await alice.kr('invite', 'create', '--label', 'spare');
    expect(human.stdout).toContain('shown only this once');
    expect(human.stdout).toMatch(/kr join kri_/);

    const list = await alice.kr('invite', 'list');
    expect(list.code, show(list)).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^KEY ID\s+LABEL\s+EXPIRES \(UTC\)\s+STATUS$/);
    const row = lines.find((l) => l.startsWith(inviteKeyId));
    expect(row).toMatch(new RegExp(`^${inviteKeyId}\\s+for bob\\s+\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\s+active$`));
    const json = JSON.parse((await alice.kr('invite', 'list', '--json')).stdout);
    expect(json.keys).toHaveLength(2);
    expect(json.keys.every((k: { status: string }) => k.status === 'active')).toBe(true);
  });

  it('joins with the invite token and pulls every page', async () => {
    const join_ = await bob.kr('join', inviteToken);
    expect(join_.code, show(join_)).toBe(0);
    expect(join_.stdout).toContain('Joined demo as member');
    expect(JSON.parse(await readFile(join(bob.configDir, 'config.json'), 'utf8'))).toMatchObject({ repo: 'demo' });

    expect((await bob.kr('init')).code).toBe(0);
    const pull = await bob.kr('pull');
    expect(pull.code, show(pull)).toBe(0);
    // The first pull adds pages; it does not "update" them.
    expect(pull.stdout).toContain('Pulled demo at ');
    expect(pull.stdout).toContain(': 2 added, 0 updated, 0 deleted.');
    expect(pull.stdout).toContain(`  added    ${DECISION}`);
    expect(await bob.read(DECISION)).toBe(decisionV1);
    expect(await bob.read(ACME)).toBe(acmeV1);

    const again = await bob.kr('pull');
    expect(again.stdout).toContain('Already up to date');

    const members = await bob.kr('members');
    expect(members.code, show(members)).toBe(0);
    expect(members.stdout).toMatch(/alice@example\.com\s+owner/);
    expect(members.stdout).toMatch(/bob@example\.com\s+member/);
  });

  it('edits on both sides, pushed with --no-merge: the second push is a conflict with a section summary, the file untouched', async () => {
    await bob.write(DECISION, decisionBob);
    const bp = await bob.kr('push', 'decision-log', '-m', 'sharpen the decision');
    expect(bp.code, show(bp)).toBe(0);

    await alice.write(DECISION, decisionAlice);
    // Different sections (and a tag): status says a merging push would go through ...
    const st = await alice.kr('status', '--json');
    expect(JSON.parse(st.stdout).pages).toEqual([expect.objectContaining({ path: DECISION, status: 'mergeable' })]);

    // ... and --no-merge keeps the original conflict.
    const ap = await alice.kr('push', '--no-merge');
    expect(ap.code, show(ap)).toBe(1);
    expect(ap.stdout).toContain(`conflict  ${DECISION}`);
    expect(ap.stdout).toMatch(/changed on the server\s+## Decision/);
    expect(ap.stdout).toMatch(/changed by you\s+## Consequences/);
    expect(ap.stdout).toMatch(/changed on the server\s+## Risks/);
    expect(ap.stdout).toMatch(/changed by you\s+frontmatter: tags/);
    expect(ap.stderr).toContain('not pushed because they changed on the server');
    expect(await alice.read(DECISION)).toBe(decisionAlice);

    // A pull keeps her edit and says that a push will merge it (the edits are in different parts).
    const pull = await alice.kr('pull');
    expect(pull.code, show(pull)).toBe(0);
    expect(pull.stdout).toContain(`will merge on push ${DECISION}: changed here and on the server in different parts; your file was kept`);
    expect(await alice.read(DECISION)).toBe(decisionAlice);
  });

  it('diff --local compares the file with the server copy in-process', async () => {
    const r = await alice.kr('diff', 'decision-log', '--local', '--json');
    expect(r.code, show(r)).toBe(0);
    const d = JSON.parse(r.stdout);
    const page = await server.api('/v1/repos/demo/pages/' + DECISION, { token: aliceSession.token });
    expect(d.from_sha).toBe(page.headers.get('x-page-sha'));
    const byHeading = Object.fromEntries(d.sections.map((s: { heading: string; status: string }) => [s.heading, s.status]));
    expect(byHeading).toMatchObject({ '## Context': 'unchanged', '## Decision': 'modified', '## Consequences': 'modified', '## Risks': 'removed' });
    expect(d.frontmatter.added).toEqual([{ field: 'tags', to: 'backups' }]);

    const human = await alice.kr('diff', 'decision-log', '--local');
    expect(human.code, show(human)).toBe(0);
    expect(human.stdout).toContain(`${DECISION}  server ${d.from_sha.slice(0, 7)} → your file`);
    expect(human.stdout).toContain('+ Backups are plain git clones.');

    // A page not yet on the server: an empty left side.
    await alice.write('wiki/analyses/draft.md', '---\ntitle: Draft\n---\n## Idea\nLater.\n');
    const fresh = await alice.kr('diff', 'draft', '--local');
    expect(fresh.code, show(fresh)).toBe(0);
    expect(fresh.stdout).toContain('not yet on the server');
    expect(fresh.stdout).toMatch(/## Idea\s+added/);
  });

  it('resolves: the merged file, based on the server version, pushes', async () => {
    await alice.write(DECISION, decisionMerged);
    const r = await alice.kr('resolve', 'decision-log');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('based on the server');
    const push = await alice.kr('push', DECISION.replace('wiki', '.kr/wiki'), '-m', 'merge decision and consequences');
    expect(push.code, show(push)).toBe(0);
    expect(push.stdout).toContain('Pushed 1 page(s)');

    const pull = await bob.kr('pull');
    expect(pull.code, show(pull)).toBe(0);
    expect(await bob.read(DECISION)).toBe(decisionMerged);
  });

  it('diff with blame names who introduced each heading; history, evolution, timeline', async () => {
    const r = await bob.kr('diff', 'decision-log', '--blame', '--json');
    expect(r.code, show(r)).toBe(0);
    const d = JSON.parse(r.stdout);
    const by = (h: string) => d.sections.find((s: { heading: string }) => s.heading === h);
    expect(by('## Context').introduced_by.email).toBe('alice@example.com');
    expect(by('## Risks').introduced_by.email).toBe('bob@example.com');
    expect(by('## Consequences').status).toBe('modified');

    const human = await bob.kr('diff', 'decision-log', '--blame');
    expect(human.stdout).toMatch(/## Risks\s+unchanged\s+\[introduced by Bob <bob@example\.com>/);

    const hist = await bob.kr('history', 'decision-log', '--json');
    const commits = JSON.parse(hist.stdout).commits;
    expect(commits.map((c: { message: string }) => c.message)).toEqual(['merge decision and consequences', 'sharpen the decision', 'first pages']);

    const range = await bob.kr('diff', 'decision-log', '--from', commits[2].sha.slice(0, 8), '--to', commits[1].sha);
    expect(range.code, show(range)).toBe(0);
    expect(range.stdout).toMatch(/## Risks\s+added/);

    const evo = await bob.kr('evolution', 'decision-log');
    expect(evo.code, show(evo)).toBe(0);
    expect(evo.stdout).toContain('sharpen the decision');
    expect(evo.stdout).toMatch(/added\s+## Risks/);

    const tl = await bob.kr('timeline', '--json');
    expect(JSON.parse(tl.stdout).commits).toHaveLength(3);
  });

  it('log shows three columns: actor email, action, UTC timestamp; pulls are recorded as kr-cli', async () => {
    const r = await alice.kr('log');
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ACTOR\s+ACTION\s+TIME \(UTC\)$/);
    for (const l of lines.slice(1)) expect(l).toMatch(/^\S+@example\.com\s+(push|pull)\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(lines[1]).toMatch(/^bob@example\.com\s+pull/);
    const json = JSON.parse((await alice.kr('log', '--json')).stdout);
    expect(json.events.find((e: { action: string }) => e.action === 'pull').detail).toEqual({ client: 'kr-cli' });
  });

  it('removes a member by email (any case); the removed member is refused afterwards', async () => {
    const notOwner = await bob.kr('members', 'remove', 'alice@example.com');
    expect(notOwner.code, show(notOwner)).toBe(1);
    expect(notOwner.stderr).toContain('only an owner can remove members');

    const r = await alice.kr('members', 'remove', 'BOB@Example.com');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Removed bob@example.com from demo');
    const members = JSON.parse((await alice.kr('members', '--json')).stdout).members;
    expect(members.map((m: { email: string }) => m.email)).toEqual(['alice@example.com']);

    const gone = await alice.kr('members', 'remove', 'bob@example.com');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('bob@example.com is not a member of demo');

    const pull = await bob.kr('pull');
    expect(pull.code, show(pull)).toBe(1);
    expect(pull.stderr).toContain('not a member of this repo');
  });

  it('revokes an invite key by its id, and mints a personal access token into the credentials', async () => {
    const r = await alice.kr('invite', 'revoke', inviteKeyId);
    expect(r.code, show(r)).toBe(0);
    const keys = JSON.parse((await alice.kr('invite', 'list', '--json')).stdout).keys;
    expect(keys.map((k: { id: string }) => k.id)).not.toContain(inviteKeyId);
    const rejoin = await bob.kr('join', inviteToken);
    expect(rejoin.code).toBe(1);
    expect(rejoin.stderr).toContain('invite key not recognized');

    const pat = await alice.kr('pats', 'create', '--label', 'laptop', '--save');
    expect(pat.code, show(pat)).toBe(0);
    const creds = JSON.parse(await readFile(join(alice.configDir, 'credentials.json'), 'utf8'));
    expect(creds.token).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
    expect((await stat(join(alice.configDir, 'credentials.json'))).mode & 0o777).toBe(0o600);
    const list = await alice.kr('pats', 'list', '--json');
    expect(list.code, show(list)).toBe(0);
    expect(JSON.parse(list.stdout).pats).toEqual([expect.objectContaining({ label: 'laptop' })]);
    expect((await alice.kr('status')).code).toBe(0);
  });
});
