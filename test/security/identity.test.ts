/**
 * Ownership and identity, and the push size limit: each attack an outsider with a normal
 * account tried, against the real server (real libSQL file, real git repositories, real ID tokens from a
 * loopback identity provider). Every test here failed on the code before the fix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from '../../lib/util/clock.ts';
import { fsck, gitIn } from '../helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from '../helpers/idp.ts';

const LEGACY = 'test-legacy-key';
const DAY = 86_400;

let srv: IdpTestServer;
let clock: ManualClock;
let alice: SignedIn; // the first user ever
let mallory: SignedIn; // a normal account, the attacker
let bob: SignedIn;

type Init = RequestInit & { json?: unknown };
const call = async (path: string, token: string | null, init: Init = {}) => {
  const r = await srv.api(path, { ...init, token });
  const text = await r.text();
  return { status: r.status, body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>) };
};
const post = (path: string, token: string | null, json?: unknown) =>
  call(path, token, json === undefined ? { method: 'POST' } : { method: 'POST', json });
const push = (repo: string, token: string, files: unknown[]) => post(`/v1/repos/${repo}/sync/push`, token, { files });
const repoDirs = () => readdirSync(join(srv.dataRoot, 'repos')).filter((n) => n.endsWith('.git')).sort();
const NOT_MEMBER = { error: 'not a member of this repo', code: 'not_a_member' };
const EXISTS = { error: 'repo already exists', code: 'repo_exists' };

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0));
  srv = await startIdpTestServer({ clock, extraIssuers: ['accounts.google.com'] });
  // A repository made under the legacy key before anyone signed in: the first user adopts it.
  expect((await post('/v1/repos/early', LEGACY)).status).toBe(201);
  alice = await signIn(srv, { sub: 'alice', email: 'alice@example.test' });
  mallory = await signIn(srv, { sub: 'mallory', email: 'mallory@example.test' });
  bob = await signIn(srv, { sub: 'bob', email: 'bob@example.test' });
});
afterAll(async () => srv?.stop());

describe('1. ownerless repositories are not up for grabs', () => {
  it('the first user adopted what the legacy key made before her; nobody else did', async () => {
    const members = await call('/v1/repos/early/members', alice.token);
    expect(members).toEqual({
      status: 200,
      body: { members: [{ user_id: alice.user.id, email: 'alice@example.test', role: 'owner', added_at: expect.any(Number) }] },
    });
    expect(await call('/v1/repos/early/members', mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
  });

  it('a repository made under the legacy key after the first user stays ownerless: create, legacy create, push and reads by a non-member are refused', async () => {
    expect(await push('orphan', LEGACY, [{ path: 'wiki/concepts/secret.md', content: '# secret\n' }])).toMatchObject({ status: 200 });
    const head = gitIn(join(srv.dataRoot, 'repos', 'orphan.git'), 'rev-parse', 'main').trim();

    // Before the fix: 201 {"id":"orphan","role":"owner"} and Mallory owned it.
    expect(await post('/v1/repos', mallory.token, { id: 'orphan' })).toEqual({ status: 409, body: EXISTS });
    // Before the fix: 201 and Mallory owned it.
    expect(await post('/v1/repos/orphan', mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
    expect(await push('orphan', mallory.token, [{ path: 'wiki/concepts/x.md', content: 'x' }])).toEqual({ status: 403, body: NOT_MEMBER });
    for (const path of ['/pages', '/pages/wiki/concepts/secret.md', '/sync/pull', '/timeline', '/members', '/invite-keys', '/activity']) {
      expect(await call(`/v1/repos/orphan${path}`, mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
    }
    expect(await post('/v1/repos/orphan/invite-keys', mallory.token, {})).toEqual({ status: 403, body: NOT_MEMBER });
    // Nobody became its member, nothing was written, and the first user does not adopt it later either.
    expect((await call('/v1/repos/orphan/members', LEGACY)).body).toEqual({ members: [] });
    expect(gitIn(join(srv.dataRoot, 'repos', 'orphan.git'), 'rev-parse', 'main').trim()).toBe(head);
    expect(await post('/v1/repos', alice.token, { id: 'orphan' })).toEqual({ status: 409, body: EXISTS });
    expect((await call('/v1/repos', mallory.token)).body).toEqual({ repos: [] });
  });

  it('an owned repository: create 409, legacy create by a non-member 403, by its owner 201 (idempotent)', async () => {
    expect(await post('/v1/repos', bob.token, { id: 'bobs' })).toEqual({ status: 201, body: { id: 'bobs', role: 'owner' } });
    expect(await post('/v1/repos', bob.token, { id: 'bobs' })).toEqual({ status: 409, body: EXISTS });
    expect(await post('/v1/repos', mallory.token, { id: 'bobs' })).toEqual({ status: 409, body: EXISTS });
    expect(await post('/v1/repos/bobs', mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
    expect(await post('/v1/repos/bobs', bob.token)).toEqual({ status: 201, body: { repo_id: 'bobs' } });
  });
});

describe('2. repository ids are unique ignoring letter case', () => {
  it('ACME beside acme is refused by every creation path, and reads of ACME never reach acme', async () => {
    expect(await post('/v1/repos', bob.token, { id: 'acme' })).toEqual({ status: 201, body: { id: 'acme', role: 'owner' } });
    expect(await push('acme', bob.token, [{ path: 'wiki/concepts/plan.md', content: 'bob\n' }])).toMatchObject({ status: 200 });

    // Before the fix each of these created ACME.git (on a case-insensitive disk: wrote into acme.git).
    expect(await post('/v1/repos', mallory.token, { id: 'ACME' })).toEqual({ status: 409, body: EXISTS });
    expect(await post('/v1/repos', mallory.token, { id: 'Acme' })).toEqual({ status: 409, body: EXISTS });
    expect(await post('/v1/repos/ACME', mallory.token)).toEqual({ status: 409, body: EXISTS });
    expect(await post('/v1/repos/aCmE', LEGACY)).toEqual({ status: 409, body: EXISTS });
    expect(await push('ACME', mallory.token, [{ path: 'wiki/concepts/plan.md', content: 'mallory\n' }])).toEqual({ status: 409, body: EXISTS });
    expect(await push('ACME', LEGACY, [{ path: 'wiki/concepts/plan.md', content: 'legacy\n' }])).toEqual({ status: 409, body: EXISTS });
    expect(repoDirs().filter((d) => d.toLowerCase() === 'acme.git')).toEqual(['acme.git']);

    // Reads name the exact id: a non-member is refused, the legacy key finds no such repository.
    expect(await call('/v1/repos/ACME/pages', mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
    expect(await call('/v1/repos/ACME/pages', bob.token)).toEqual({ status: 403, body: NOT_MEMBER });
    expect(await call('/v1/repos/ACME/pages', LEGACY)).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
    const page = await srv.api('/v1/repos/acme/pages/wiki/concepts/plan.md', { token: bob.token });
    expect(await page.text()).toBe('bob\n');
    fsck(join(srv.dataRoot, 'repos', 'acme.git'));
  });

  it('twenty concurrent creations of case variants of one new id make exactly one repository', async () => {
    const variants = ['race', 'RACE', 'Race', 'rAce', 'raCe', 'racE', 'RAce', 'rACE', 'RaCe', 'rAcE'];
    const results = await Promise.all([
      ...variants.map((v) => post('/v1/repos', bob.token, { id: v })),
      ...variants.map((v) => push(v, LEGACY, [{ path: 'a.md', content: v }])),
    ]);
    const ids = [...variants, ...variants];
    const won = new Set(ids.filter((_, i) => results[i]!.status === 200 || results[i]!.status === 201));
    // Every refusal is the case rule's (or, for the exact id, POST /v1/repos's "exists"); one spelling won.
    expect(results.filter((r) => r.status !== 200 && r.status !== 201)).toEqual(
      results.filter((r) => r.status === 409).map(() => ({ status: 409, body: EXISTS })),
    );
    expect(won.size).toBe(1);
    expect(repoDirs().filter((d) => d.toLowerCase() === 'race.git')).toEqual([`${[...won][0]}.git`]);
  });
});

describe('3. a PAT never outlives the credential that minted it', () => {
  it('minted with a PAT: the expiry is capped at the parent’s, and no expiry asked means the parent’s', async () => {
    const parent = await post('/v1/pats', bob.token, { label: 'parent', expires_in_days: 2 });
    expect(parent.status).toBe(201);
    const parentPat = parent.body!.pat as { expires_at: number };
    const now = Math.floor(clock.now() / 1000);
    expect(parentPat.expires_at).toBe(now + 2 * DAY);
    const parentToken = parent.body!.token as string;

    // Before the fix: no expiry at all, and 30 days — both outlived the 2-day parent.
    const none = await post('/v1/pats', parentToken, { label: 'child' });
    expect(none).toMatchObject({ status: 201, body: { pat: { label: 'child', created_at: now, expires_at: now + 2 * DAY } } });
    const longer = await post('/v1/pats', parentToken, { expires_in_days: 30 });
    expect(longer).toMatchObject({ status: 201, body: { pat: { expires_at: now + 2 * DAY } } });
    const shorter = await post('/v1/pats', parentToken, { expires_in_days: 1 });
    expect(shorter).toMatchObject({ status: 201, body: { pat: { expires_at: now + DAY } } });

    // A child of a child is capped too; after the parent's expiry every one of them is dead.
    const grandchild = await post('/v1/pats', none.body!.token as string, {});
    expect(grandchild).toMatchObject({ status: 201, body: { pat: { expires_at: now + 2 * DAY } } });
    clock.advance(2 * DAY * 1000);
    for (const t of [parentToken, none.body!.token, longer.body!.token, grandchild.body!.token] as string[]) {
      expect(await call('/v1/me', t)).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    }
  });

  it('minted with a session: the session lifetime does not cap it (a session is not a PAT)', async () => {
    const fresh = await signIn(srv, { sub: 'bob', email: 'bob@example.test' });
    const r = await post('/v1/pats', fresh.token, { expires_in_days: 366 });
    expect(r).toMatchObject({ status: 201, body: { pat: { expires_at: Math.floor(clock.now() / 1000) + 366 * DAY } } });
    const forever = await post('/v1/pats', fresh.token, {});
    expect((forever.body!.pat as Record<string, unknown>).expires_at).toBeUndefined();
    // A PAT without expiry mints children without expiry.
    const child = await post('/v1/pats', forever.body!.token as string, {});
    expect((child.body!.pat as Record<string, unknown>).expires_at).toBeUndefined();
  });
});

describe('4. a removed member stays removed', () => {
  it('a key minted before the removal does not readmit; one minted after does; others are unaffected', async () => {
    const owner = await signIn(srv, { sub: 'olga', email: 'olga@example.test' });
    const carol = await signIn(srv, { sub: 'carol', email: 'carol@example.test' });
    expect((await post('/v1/repos', owner.token, { id: 'team' })).status).toBe(201);
    const oldKey = (await post('/v1/repos/team/invite-keys', owner.token, { label: 'old' })).body!.token as string;
    expect(await post('/v1/repos/join', mallory.token, { key: oldKey })).toEqual({ status: 200, body: { repo_id: 'team', role: 'member' } });

    expect((await call(`/v1/repos/team/members/${mallory.user.id}`, owner.token, { method: 'DELETE' })).status).toBe(204);
    // Before the fix: 200 {"repo_id":"team","role":"member"} — the removal undone by the key he kept.
    const back = { status: 403, body: { error: 'removed from this repo; ask an owner for a new invite key', code: 'removed_from_repo' } };
    expect(await post('/v1/repos/join', mallory.token, { key: oldKey })).toEqual(back);
    expect(await post('/v1/repos/join', mallory.token, { key: oldKey })).toEqual(back);
    expect(await call('/v1/repos/team/pages', mallory.token)).toEqual({ status: 403, body: NOT_MEMBER });
    // The same old key still admits someone who was never removed.
    expect(await post('/v1/repos/join', carol.token, { key: oldKey })).toEqual({ status: 200, body: { repo_id: 'team', role: 'member' } });

    // In the same second as the removal, a new key readmits him.
    const newKey = (await post('/v1/repos/team/invite-keys', owner.token, { label: 'new' })).body!.token as string;
    expect(await post('/v1/repos/join', mallory.token, { key: newKey })).toEqual({ status: 200, body: { repo_id: 'team', role: 'member' } });
    // Removed a second time: neither key readmits.
    expect((await call(`/v1/repos/team/members/${mallory.user.id}`, owner.token, { method: 'DELETE' })).status).toBe(204);
    expect(await post('/v1/repos/join', mallory.token, { key: newKey })).toEqual(back);
    expect(await post('/v1/repos/join', mallory.token, { key: oldKey })).toEqual(back);
    const members = (await call('/v1/repos/team/members', owner.token)).body!.members as Array<{ email: string }>;
    expect(members.map((m) => m.email)).toEqual(['olga@example.test', 'carol@example.test']);
  });
});

describe('5. issuers, audiences and labels', () => {
  it('accounts.google.com and https://accounts.google.com are one issuer: the same sub is one user', async () => {
    const a = await signIn(srv, { sub: 'g-123', email: 'gina@example.test' }, { iss: 'accounts.google.com' });
    const b = await signIn(srv, { sub: 'g-123', email: 'gina@example.test' }, { iss: 'https://accounts.google.com' });
    expect(b.user.id).toBe(a.user.id);
    // And the stand-in's own issuer, configured with https://, accepts the spelling without it.
    const c = await signIn(srv, { sub: 'i-1', email: 'ivy@example.test' }, { iss: 'https://idp.test' });
    const d = await signIn(srv, { sub: 'i-1', email: 'ivy@example.test' }, { iss: 'idp.test' });
    expect(d.user.id).toBe(c.user.id);
    const row = await srv.deps.db.all('SELECT issuer FROM users WHERE subject = ?', ['g-123']);
    expect(row).toEqual([{ issuer: 'https://accounts.google.com' }]);
  });

  it('an ID token for several audiences must carry azp equal to the client id', async () => {
    const aud = [srv.idp.clientId, 'another-client'];
    const signInWith = async (claims: Record<string, unknown>) => {
      const idToken = await srv.idp.signIdToken({ sub: 'multi', email: 'multi@example.test', ...claims });
      return post('/v1/auth/idp', null, { id_token: idToken });
    };
    const refused = { status: 401, body: { error: 'invalid id token: azp', code: 'invalid_id_token' } };
    expect(await signInWith({ aud })).toEqual(refused);
    expect(await signInWith({ aud, azp: 'another-client' })).toEqual(refused);
    expect((await signInWith({ aud, azp: srv.idp.clientId })).status).toBe(200);
    // One audience needs no azp.
    expect((await signInWith({ aud: [srv.idp.clientId] })).status).toBe(200);
  });

  it('labels of PATs and invite keys are at most 200 characters', async () => {
    const tooLong = { status: 400, body: { error: 'label too long (max 200)', code: 'label_too_long' } };
    expect(await post('/v1/pats', bob.token, { label: 'x'.repeat(201) })).toEqual(tooLong);
    expect(await post('/v1/repos/bobs/invite-keys', bob.token, { label: 'x'.repeat(201) })).toEqual(tooLong);
    // Characters, not UTF-16 units: 200 emoji are 200 characters.
    const emoji = '\u{1F600}'.repeat(200);
    expect(await post('/v1/pats', bob.token, { label: emoji })).toMatchObject({ status: 201, body: { pat: { label: emoji } } });
    expect(await post('/v1/repos/bobs/invite-keys', bob.token, { label: 'y'.repeat(200) })).toMatchObject({
      status: 201,
      body: { key: { label: 'y'.repeat(200) } },
    });
    expect(await post('/v1/pats', bob.token, { label: '\u{1F600}'.repeat(201) })).toEqual(tooLong);
  });
});

describe('7. a push holds at most 10,000 files', () => {
  it('10,001 files → 413 and nothing written; GET /v1/limits says so', async () => {
    expect(await call('/v1/limits', bob.token)).toEqual({
      status: 200,
      body: { max_body_bytes: 8388608, max_files_per_push: 10000, max_page_path_bytes: 512 },
    });
    expect((await call('/v1/limits', LEGACY)).status).toBe(200);
    expect(await call('/v1/limits', null)).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
    const files = Array.from({ length: 10_001 }, (_, i) => ({ path: `p/${i}.md`, content: '' }));
    expect(await push('bulk', bob.token, files)).toEqual({ status: 413, body: { error: 'too many files in one push (max 10000)', code: 'too_many_files' } });
    expect(repoDirs()).not.toContain('bulk.git');
  });
});
