import { afterEach, describe, expect, it } from 'vitest';
import membersList from '../../functions/members/list.ts';
import membersRemove from '../../functions/members/remove.ts';
import membersRole from '../../functions/members/role.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 0, 1) / 1000;

/** `notes` owned by alice, with bob as a member a minute later. */
async function team(m: MountedHandler, clock: ManualClock): Promise<{ alice: TestUser; bob: TestUser }> {
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  await m.deps.repos.create('notes');
  await m.deps.members.add('notes', alice.id, 'owner');
  clock.advance(60_000);
  await m.deps.members.add('notes', bob.id, 'member');
  return { alice, bob };
}

describe('GET /v1/repos/:id/members (functions/members/list.ts)', () => {
  it('members with role and join time, oldest first, to any member', async () => {
    const clock = new ManualClock();
    h = await mountHandler(membersList, { clock });
    const { alice, bob } = await team(h, clock);
    const res = await bob.request('/v1/repos/notes/members');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      members: [
        { user_id: alice.id, email: 'alice@example.com', role: 'owner', added_at: T0 },
        { user_id: bob.id, email: 'bob@example.com', role: 'member', added_at: T0 + 60 },
      ],
    });
  });

  it('a non-member gets 403; the legacy key gets an ownerless repository\'s empty list', async () => {
    h = await mountHandler(membersList);
    const carol = await h.user('carol@example.com');
    await h.deps.repos.create('notes');
    const denied = await carol.request('/v1/repos/notes/members');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const legacy = await h.legacy.request('/v1/repos/notes/members');
    expect(legacy.status).toBe(200);
    expect(await legacy.json()).toEqual({ members: [] });
  });
});

describe('DELETE /v1/repos/:id/members/:userId (functions/members/remove.ts)', () => {
  it('an owner removes a member: 204, and the row is gone', async () => {
    const clock = new ManualClock();
    h = await mountHandler(membersRemove, { clock });
    const { alice, bob } = await team(h, clock);
    const res = await alice.request(`/v1/repos/notes/members/${bob.id}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(await h.deps.members.roleOf('notes', bob.id)).toBeNull();
  });

  it('403 for a non-owner, 404 for a non-member target, 409 for the last owner', async () => {
    const clock = new ManualClock();
    h = await mountHandler(membersRemove, { clock });
    const { alice, bob } = await team(h, clock);
    const byMember = await bob.request(`/v1/repos/notes/members/${alice.id}`, { method: 'DELETE' });
    expect(byMember.status).toBe(403);
    expect(await byMember.json()).toEqual({ error: 'only an owner can remove members', code: 'owner_only_remove' });
    const stranger = await alice.request(`/v1/repos/notes/members/${crypto.randomUUID()}`, { method: 'DELETE' });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const last = await h.legacy.request(`/v1/repos/notes/members/${alice.id}`, { method: 'DELETE' });
    expect(last.status).toBe(409);
    expect(await last.json()).toEqual({ error: "can't remove the last owner", code: 'last_owner' });
    expect(await h.deps.members.roleOf('notes', alice.id)).toBe('owner');
  });
});

describe('POST /v1/repos/:id/members/:userId/role (functions/members/role.ts)', () => {
  const setRole = (who: { request: TestUser['request'] }, repo: string, userId: string, role: string) =>
    who.request(`/v1/repos/${repo}/members/${userId}/role`, { method: 'POST', json: { role } });
  const roles = async (m: MountedHandler, alice: TestUser, bob: TestUser) => [await m.deps.members.roleOf('notes', alice.id), await m.deps.members.roleOf('notes', bob.id)];

  it('a member may not change roles, theirs or an owner\'s: 403 and nothing changed', async () => {
    const clock = new ManualClock();
    h = await mountHandler(membersRole, { clock });
    const { alice, bob } = await team(h, clock);
    for (const [userId, role] of [[bob.id, 'owner'], [alice.id, 'member']] as const) {
      const res = await setRole(bob, 'notes', userId, role);
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: 'only an owner can change roles', code: 'owner_only_roles' });
    }
    expect(await roles(h, alice, bob)).toEqual(['owner', 'member']);
  });

  it('the last owner demoting themselves: 409, and still the owner', async () => {
    const clock = new ManualClock();
    h = await mountHandler(membersRole, { clock });
    const { alice, bob } = await team(h, clock);
    const res = await setRole(alice, 'notes', alice.id, 'member');
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: "can't remove the last owner", code: 'last_owner' });
    expect(await roles(h, alice, bob)).toEqual(['owner', 'member']);
    // With a second owner the same demotion goes through.
    expect((await setRole(alice, 'notes', bob.id, 'owner')).status).toBe(200);
    const demoted = await setRole(alice, 'notes', alice.id, 'member');
    expect([demoted.status, await demoted.json()]).toEqual([200, { user_id: alice.id, email: 'alice@example.com', role: 'member' }]);
    expect(await roles(h, alice, bob)).toEqual(['member', 'owner']);
  });
});
