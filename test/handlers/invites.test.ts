import { afterEach, describe, expect, it } from 'vitest';
import invitesCreate from '../../functions/invites/create.ts';
import invitesList from '../../functions/invites/list.ts';
import invitesRevoke from '../../functions/invites/revoke.ts';
import invitesJoin from '../../functions/invites/join.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 0, 1) / 1000;
const WEEK = 7 * 86_400;

/** `notes` owned by alice, with bob as a member. */
async function team(m: MountedHandler): Promise<{ alice: TestUser; bob: TestUser }> {
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  await m.deps.repos.create('notes');
  await m.deps.members.add('notes', alice.id, 'owner');
  await m.deps.members.add('notes', bob.id, 'member');
  return { alice, bob };
}

describe('POST /v1/repos/:id/invite-keys (functions/invites/create.ts)', () => {
  it('an owner mints a key valid 7 days; the token is shown once and redeemable', async () => {
    h = await mountHandler(invitesCreate, { clock: new ManualClock() });
    const { alice } = await team(h);
    const res = await alice.request('/v1/repos/notes/invite-keys', { method: 'POST', json: { label: 'team' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { key: { id: string }; token: string };
    expect(body).toEqual({ key: { id: body.key.id, label: 'team', created_at: T0, expires_at: T0 + WEEK }, token: body.token });
    expect(body.token).toMatch(/^kri_[A-Za-z0-9_-]{32}$/);
    expect(await h.deps.invites.find(body.token)).toEqual({ key: body.key, repoId: 'notes', expired: false });
  });

  it('an empty body is an unlabeled key; a member gets 403; the legacy key 403 user session required', async () => {
    h = await mountHandler(invitesCreate);
    const { alice, bob } = await team(h);
    const empty = await alice.request('/v1/repos/notes/invite-keys', { method: 'POST' });
    expect(empty.status).toBe(201);
    expect(((await empty.json()) as { key: { label: string } }).key.label).toBe('');
    const member = await bob.request('/v1/repos/notes/invite-keys', { method: 'POST', json: {} });
    expect(member.status).toBe(403);
    expect(await member.json()).toEqual({ error: 'only an owner can manage invite keys', code: 'owner_only_invites' });
    const legacy = await h.legacy.request('/v1/repos/notes/invite-keys', { method: 'POST', json: {} });
    expect(legacy.status).toBe(403);
    expect(await legacy.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    expect(await h.deps.invites.list('notes')).toHaveLength(1);
  });
});

describe('GET /v1/repos/:id/invite-keys (functions/invites/list.ts)', () => {
  it('the keys, newest first, expired ones included; never a token', async () => {
    const clock = new ManualClock();
    h = await mountHandler(invitesList, { clock });
    const { alice, bob } = await team(h);
    const old = await h.deps.invites.mint('notes', alice.id, 'old');
    clock.advance(WEEK * 1000 + 1000);
    const fresh = await h.deps.invites.mint('notes', alice.id, 'fresh');
    const res = await alice.request('/v1/repos/notes/invite-keys');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ keys: [fresh.key, old.key] });
    const member = await bob.request('/v1/repos/notes/invite-keys');
    expect(member.status).toBe(403);
    expect(await member.json()).toEqual({ error: 'only an owner can manage invite keys', code: 'owner_only_invites' });
  });
});

describe('DELETE /v1/repos/:id/invite-keys/:keyId (functions/invites/revoke.ts)', () => {
  it('revokes by id: 204, and the token is no longer recognised', async () => {
    h = await mountHandler(invitesRevoke);
    const { alice } = await team(h);
    const { key, token } = await h.deps.invites.mint('notes', alice.id, '');
    const res = await alice.request(`/v1/repos/notes/invite-keys/${key.id}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await h.deps.invites.find(token)).toBeNull();
  });

  it("404 for an unknown key and for another repository's key", async () => {
    h = await mountHandler(invitesRevoke);
    const { alice } = await team(h);
    await h.deps.repos.create('other');
    await h.deps.members.add('other', alice.id, 'owner');
    const { key, token } = await h.deps.invites.mint('other', alice.id, '');
    for (const id of [key.id, crypto.randomUUID()]) {
      const res = await alice.request(`/v1/repos/notes/invite-keys/${id}`, { method: 'DELETE' });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'invite key not found', code: 'invite_key_not_found' });
    }
    expect(await h.deps.invites.find(token)).not.toBeNull();
  });
});

describe('POST /v1/repos/join (functions/invites/join.ts)', () => {
  it('redeems a key as member; re-joining keeps the role', async () => {
    h = await mountHandler(invitesJoin);
    const { alice } = await team(h);
    const carol = await h.user('carol@example.com');
    const { token } = await h.deps.invites.mint('notes', alice.id, '');
    for (let i = 0; i < 2; i++) {
      const res = await carol.request('/v1/repos/join', { method: 'POST', json: { key: token } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ repo_id: 'notes', role: 'member' });
    }
    const owner = await alice.request('/v1/repos/join', { method: 'POST', json: { key: ` ${token} ` } });
    expect(await owner.json()).toEqual({ repo_id: 'notes', role: 'owner' });
    expect((await h.deps.members.list('notes')).map((m) => m.email)).toEqual(['alice@example.com', 'bob@example.com', 'carol@example.com']);
  });

  it('400 key required, 404 not recognized, 410 expired, 403 for the legacy key', async () => {
    const clock = new ManualClock();
    h = await mountHandler(invitesJoin, { clock });
    const { alice } = await team(h);
    const carol = await h.user('carol@example.com');
    const cases: Array<[unknown, number, string, string]> = [
      [{}, 400, 'key required', 'key_required'],
      [{ key: '  ' }, 400, 'key required', 'key_required'],
      [{ key: 'kri_unknown' }, 404, 'invite key not recognized', 'invite_key_not_recognized'],
    ];
    for (const [json, status, error, code] of cases) {
      const res = await carol.request('/v1/repos/join', { method: 'POST', json });
      expect(res.status).toBe(status);
      expect(await res.json()).toEqual({ error, code });
    }
    const { token } = await h.deps.invites.mint('notes', alice.id, '');
    clock.advance(WEEK * 1000);
    const expired = await carol.request('/v1/repos/join', { method: 'POST', json: { key: token } });
    expect(expired.status).toBe(410);
    expect(await expired.json()).toEqual({ error: 'invite key expired', code: 'invite_key_expired' });
    const legacy = await h.legacy.request('/v1/repos/join', { method: 'POST', json: { key: token } });
    expect(legacy.status).toBe(403);
    expect(await legacy.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    expect(await h.deps.members.roleOf('notes', carol.id)).toBeNull();
  });

  it('a removed member is not readmitted by a key minted before the removal', async () => {
    const clock = new ManualClock();
    h = await mountHandler(invitesJoin, { clock });
    const { alice, bob } = await team(h);
    const before = await h.deps.invites.mint('notes', alice.id, '');
    clock.advance(1000);
    expect(await h.deps.members.remove('notes', bob.id)).toBe('removed');
    const res = await bob.request('/v1/repos/join', { method: 'POST', json: { key: before.token } });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'removed from this repo; ask an owner for a new invite key', code: 'removed_from_repo' });
    const after = await h.deps.invites.mint('notes', alice.id, '');
    const again = await bob.request('/v1/repos/join', { method: 'POST', json: { key: after.token } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ repo_id: 'notes', role: 'member' });
  });
});
