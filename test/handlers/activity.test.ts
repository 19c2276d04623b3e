import { afterEach, describe, expect, it } from 'vitest';
import activityList from '../../functions/activity/list.ts';
import { ManualClock } from '../../lib/clock.ts';
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

  it('a non-member gets 403; a missing repository is 404 for the legacy key', async () => {
    h = await mountHandler(activityList);
    const carol = await h.user('carol@example.com');
    await h.deps.repos.create('notes');
    const denied = await carol.request('/v1/repos/notes/activity');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: 'not a member of this repo' });
    const missing = await h.legacy.request('/v1/repos/missing/activity');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'repo not found' });
    const empty = await h.legacy.request('/v1/repos/notes/activity');
    expect(await empty.json()).toEqual({ events: [], total: 0 });
  });
});
