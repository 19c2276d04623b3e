import { afterEach, describe, expect, it } from 'vitest';
import activityList from '../../functions/activity/list.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { Activity } from '../../lib/db/activity.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 0, 1) / 1000;

describe('GET /v1/repos/:id/activity (functions/activity/list.ts)', () => {
  it('the feed newest first with the total; limit and offset page through it', async () => {
    const clock = new ManualClock();
    h = await mountHandler(activityList, { clock });
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    await h.deps.members.add('notes', bob.id, 'member');
    await h.deps.activity.record('notes', { userId: alice.id, email: alice.email }, 'push', { paths: ['a.md'] });
    clock.advance(1000);
    await h.deps.activity.record('notes', { userId: bob.id, email: bob.email }, 'pull');
    clock.advance(1000);
    await h.deps.activity.record('notes', { userId: bob.id, email: bob.email }, 'pull', { client: 'kr-cli' });

    const res = await bob.request('/v1/repos/notes/activity');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      events: [
        { user_id: bob.id, email: 'bob@example.com', action: 'pull', detail: { client: 'kr-cli' }, created_at: T0 + 2 },
        { user_id: bob.id, email: 'bob@example.com', action: 'pull', created_at: T0 + 1 },
        { user_id: alice.id, email: 'alice@example.com', action: 'push', detail: { paths: ['a.md'] }, created_at: T0 },
      ],
      total: 3,
    });
    const page = await bob.request('/v1/repos/notes/activity?limit=1&offset=2');
    expect(await page.json()).toEqual({
      events: [{ user_id: alice.id, email: 'alice@example.com', action: 'push', detail: { paths: ['a.md'] }, created_at: T0 }],
      total: 3,
    });
  });

  it("a push recorded with its commit carries it as sha; one recorded without has none", async () => {
    h = await mountHandler(activityList);
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    const sha = 'a'.repeat(40);
    await h.deps.activity.record('notes', { userId: alice.id, email: alice.email }, 'push', { paths: ['a.md'] });
    await h.deps.activity.record('notes', { userId: alice.id, email: alice.email }, 'push', { paths: ['b.md'], merged: ['b.md'] }, sha);
    const res = await alice.request('/v1/repos/notes/activity');
    expect(res.status).toBe(200);
    const { events } = (await res.json()) as { events: Record<string, unknown>[] };
    expect(events.map((e) => [e.detail, e.sha])).toEqual([
      [{ paths: ['b.md'], merged: ['b.md'] }, sha],
      [{ paths: ['a.md'] }, undefined],
    ]);
    expect(Object.keys(events[1]!)).not.toContain('sha');
  });

  it('?actions= keeps only the actions named, total counts only those, and paging walks the filtered feed', async () => {
    const clock = new ManualClock();
    h = await mountHandler(activityList, { clock });
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    const me = { userId: alice.id, email: alice.email };
    await h.deps.activity.record('notes', me, 'push', { paths: ['a.md'] });
    clock.advance(1000);
    for (let i = 0; i < 3; i++) await h.deps.activity.record('notes', me, 'pull');
    clock.advance(1000);
    await h.deps.activity.record('notes', me, 'import', { commits: 2, pages: 1, head: 'b'.repeat(40) });
    clock.advance(1000);
    await h.deps.activity.record('notes', me, 'push', { paths: ['c.md'] });

    const wanted = await alice.request('/v1/repos/notes/activity?actions=push,import');
    expect(wanted.status).toBe(200);
    const body = (await wanted.json()) as { events: Array<{ action: string; created_at: number }>; total: number };
    expect(body.total).toBe(3);
    expect(body.events.map((e) => [e.action, e.created_at - T0])).toEqual([
      ['push', 3],
      ['import', 2],
      ['push', 0],
    ]);
    const second = await alice.request('/v1/repos/notes/activity?actions=push,import&limit=1&offset=1');
    expect(((await second.json()) as typeof body).events.map((e) => e.action)).toEqual(['import']);
    const pulls = await alice.request('/v1/repos/notes/activity?actions=pull&limit=2');
    const p = (await pulls.json()) as typeof body;
    expect([p.total, p.events.map((e) => e.action)]).toEqual([3, ['pull', 'pull']]);
    // Without the parameter: pushes, pulls and imports (every event here).
    const all = await alice.request('/v1/repos/notes/activity');
    expect(((await all.json()) as typeof body).total).toBe(6);

    for (const bad of ['members', 'push,', '', 'push;pull', 'PUSH']) {
      const res = await alice.request(`/v1/repos/notes/activity?actions=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: `invalid actions: ${bad}`, code: 'invalid_actions' });
    }
  });

  it('`member` rows are listed only when asked for, and pruned apart: neither class pushes the other out', async () => {
    const clock = new ManualClock();
    h = await mountHandler(activityList, { clock });
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    const me = { userId: alice.id, email: alice.email };
    // The same table, with room for 3 of each class.
    const small = new Activity(h.deps.activity.database, clock, 3);
    const joined = (n: number) => ({ user_id: `u${n}`, email: `u${n}@example.com`, change: 'joined', role: 'member' });
    for (let i = 0; i < 3; i++) await small.record('notes', me, 'push', { paths: [`p${i}.md`] });
    for (let i = 0; i < 5; i++) await small.record('notes', me, 'member', joined(i));
    await small.record('notes', me, 'pull');
    const read = async (query: string) => (await (await alice.request(`/v1/repos/notes/activity${query}`)).json()) as { events: Array<{ action: string; detail?: Record<string, unknown> }>; total: number };
    const pushesAndPull = await read('');
    expect([pushesAndPull.total, pushesAndPull.events.map((e) => [e.action, e.detail])]).toEqual([
      3,
      [
        ['pull', undefined],
        ['push', { paths: ['p2.md'] }],
        ['push', { paths: ['p1.md'] }],
      ],
    ]);
    const members = await read('?actions=member');
    expect([members.total, members.events.map((e) => e.detail)]).toEqual([3, [joined(4), joined(3), joined(2)]]);
    expect((await read('?actions=member,push,pull')).total).toBe(6);
  });

  it('a non-member gets 403; a missing repository is 404 for the legacy key', async () => {
    h = await mountHandler(activityList);
    const carol = await h.user('carol@example.com');
    await h.deps.repos.create('notes');
    const denied = await carol.request('/v1/repos/notes/activity');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const missing = await h.legacy.request('/v1/repos/missing/activity');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
    const empty = await h.legacy.request('/v1/repos/notes/activity');
    expect(await empty.json()).toEqual({ events: [], total: 0 });
  });
});
