import { afterEach, describe, expect, it } from 'vitest';
import eventsStream from '../../functions/events/stream.ts';
import membersRemove from '../../functions/members/remove.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';
import { SseReader } from '../helpers/sse.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /v1/repos/:id/events (functions/events/stream.ts)', () => {
  it('an event stream: each commit as `event: push`, in id order; headers of a stream', async () => {
    h = await mountHandler(eventsStream);
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    const res = await alice.request('/v1/repos/notes/events');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const stream = new SseReader(res);
    const one = await h.commit('notes', { 'a.md': 'a\n' }, { author: { name: 'Ann', email: 'ann@example.com' }, message: 'first\nbody' });
    const two = await h.commit('notes', { 'a.md': null, 'b.md': 'b\n' });
    const first = await stream.nextJson();
    const second = await stream.nextJson();
    expect(first).toEqual({
      event: 'push',
      id: expect.any(String),
      data: {
        repo_id: 'notes',
        sha: one,
        author: 'Ann',
        email: 'ann@example.com',
        time: expect.stringMatching(/Z$/),
        message: 'first',
        paths: [{ path: 'a.md', status: 'added' }],
      },
    });
    expect(second!.data).toMatchObject({ sha: two, paths: [{ path: 'a.md', status: 'deleted' }, { path: 'b.md', status: 'added' }] });
    expect(Number(second!.id)).toBe(Number(first!.id) + 1);
    await stream.close();
  });

  it('replays after Last-Event-ID; `reset` first for an id it does not hold', async () => {
    h = await mountHandler(eventsStream);
    await h.deps.repos.create('notes');
    const shas = [await h.commit('notes', { 'a.md': '1' }), await h.commit('notes', { 'a.md': '2' }), await h.commit('notes', { 'a.md': '3' })];
    const replay = new SseReader(await h.legacy.request('/v1/repos/notes/events', { headers: { 'last-event-id': '1' } }));
    expect((await replay.nextJson())!.data.sha).toBe(shas[1]);
    expect((await replay.nextJson())!.data.sha).toBe(shas[2]);
    const stale = new SseReader(await h.legacy.request('/v1/repos/notes/events?after=77'));
    expect(await stale.next()).toEqual({ event: 'reset', data: '{"reason":"unknown event id"}' });
    const four = await h.commit('notes', { 'a.md': '4' });
    expect((await stale.nextJson())!.data.sha).toBe(four);
    expect((await replay.nextJson())!.data.sha).toBe(four);
    await replay.close();
    await stale.close();
  });

  it('429 for the 11th stream of one identity; 403 for a non-member; 404 for a missing repository', async () => {
    h = await mountHandler(eventsStream);
    const carol = await h.user('carol@example.com');
    await h.deps.repos.create('notes');
    const open: SseReader[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await h.legacy.request('/v1/repos/notes/events');
      expect(res.status).toBe(200);
      open.push(new SseReader(res));
    }
    const refused = await h.legacy.request('/v1/repos/notes/events');
    expect([refused.status, await refused.json()]).toEqual([429, { error: 'too many event streams', code: 'too_many_streams' }]);
    const denied = await carol.request('/v1/repos/notes/events');
    expect([denied.status, await denied.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
    const missing = await h.legacy.request('/v1/repos/nope/events');
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
    for (const r of open) await r.close();
  });

  it('removing a member ends their stream with `revoked` and tells the others', async () => {
    h = await mountHandler([eventsStream, membersRemove]);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    await h.deps.members.add('notes', bob.id, 'member');
    const alices = new SseReader(await alice.request('/v1/repos/notes/events'));
    const bobs = new SseReader(await bob.request('/v1/repos/notes/events'));
    expect((await alice.request(`/v1/repos/notes/members/${bob.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await bobs.rest()).toEqual([{ event: 'revoked', data: '{"reason":"removed from this repo"}' }]);
    expect((await alices.nextJson())!.data).toEqual({ repo_id: 'notes', user_id: bob.id, email: 'bob@example.com', change: 'removed' });
    await alices.close();
  });
});
