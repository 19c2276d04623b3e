import { afterEach, describe, expect, it } from 'vitest';
import patsCreate from '../../functions/pats/create.ts';
import patsList from '../../functions/pats/list.ts';
import patsRevoke from '../../functions/pats/revoke.ts';
import { ManualClock } from '../../lib/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 0, 1) / 1000;
const DAY = 86_400;

describe('POST /v1/pats (functions/pats/create.ts)', () => {
  it('mints a PAT for a session user: 201, the token shown once, only its hash stored', async () => {
    h = await mountHandler(patsCreate, { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const res = await alice.request('/v1/pats', { method: 'POST', json: { label: 'laptop', expires_in_days: 30 } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { pat: { id: string }; token: string };
    expect(body).toEqual({
      pat: { id: body.pat.id, label: 'laptop', created_at: T0, expires_at: T0 + 30 * DAY },
      token: body.token,
    });
    expect(body.token).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
    expect((await h.deps.pats.resolve(body.token))?.user.id).toBe(alice.id);
    const stored = await h.deps.db.all('SELECT * FROM pats');
    expect(JSON.stringify(stored)).not.toContain(body.token);
  });

  it('a PAT minted with a PAT never outlives it', async () => {
    h = await mountHandler(patsCreate, { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const parent = await h.deps.pats.create(alice.id, { expiresInDays: 10 });
    const res = await h.request('/v1/pats', { method: 'POST', token: parent.token, json: { expires_in_days: 100 } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { pat: { id: string } };
    expect(body.pat).toEqual({ id: body.pat.id, label: '', created_at: T0, expires_at: T0 + 10 * DAY });
  });

  it('refuses the legacy key, a bad expiry and a long label', async () => {
    h = await mountHandler(patsCreate);
    const legacy = await h.legacy.request('/v1/pats', { method: 'POST', json: {} });
    expect(legacy.status).toBe(403);
    expect(await legacy.json()).toEqual({ error: 'user session required' });

    const alice = await h.user('alice@example.com');
    const days = await alice.request('/v1/pats', { method: 'POST', json: { expires_in_days: 0 } });
    expect(days.status).toBe(400);
    expect(await days.json()).toEqual({ error: 'invalid request: expires_in_days: must be an integer from 1 to 366' });
    const label = await alice.request('/v1/pats', { method: 'POST', json: { label: 'x'.repeat(201) } });
    expect(label.status).toBe(400);
    expect(await label.json()).toEqual({ error: 'label too long (max 200)' });
    expect(await h.deps.pats.list(alice.id)).toEqual([]);
  });
});

describe('GET /v1/pats (functions/pats/list.ts)', () => {
  it("lists the caller's own PATs, newest first, never a token", async () => {
    const clock = new ManualClock();
    h = await mountHandler(patsList, { clock });
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    const a1 = await h.deps.pats.create(alice.id, { label: 'one' });
    clock.advance(1000);
    const a2 = await h.deps.pats.create(alice.id, { label: 'two', expiresInDays: 1 });
    await h.deps.pats.create(bob.id, { label: 'bob' });
    const res = await alice.request('/v1/pats');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      pats: [
        { id: a2.pat.id, label: 'two', created_at: T0 + 1, expires_at: T0 + 1 + DAY },
        { id: a1.pat.id, label: 'one', created_at: T0 },
      ],
    });
  });

  it('legacy → 403 user session required', async () => {
    h = await mountHandler(patsList);
    const res = await h.legacy.request('/v1/pats');
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'user session required' });
  });
});

describe('DELETE /v1/pats/:id (functions/pats/revoke.ts)', () => {
  it('revokes one of the caller\'s PATs: 204, and the token stops resolving', async () => {
    h = await mountHandler(patsRevoke);
    const alice = await h.user('alice@example.com');
    const { pat, token } = await h.deps.pats.create(alice.id);
    const res = await alice.request(`/v1/pats/${pat.id}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(await h.deps.pats.resolve(token)).toBeNull();
  });

  it("404 pat not found for an unknown id and for someone else's PAT", async () => {
    h = await mountHandler(patsRevoke);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    const { pat, token } = await h.deps.pats.create(bob.id);
    for (const id of [pat.id, crypto.randomUUID()]) {
      const res = await alice.request(`/v1/pats/${id}`, { method: 'DELETE' });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'pat not found' });
    }
    expect((await h.deps.pats.resolve(token))?.user.id).toBe(bob.id);
  });
});
