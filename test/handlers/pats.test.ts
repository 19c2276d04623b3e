import { afterEach, describe, expect, it } from 'vitest';
import patsCreate from '../../functions/pats/create.ts';
import patsList from '../../functions/pats/list.ts';
import patsRevoke from '../../functions/pats/revoke.ts';
import { ManualClock } from '../../lib/util/clock.ts';
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
    expect(await legacy.json()).toEqual({ error: 'user session required', code: 'user_session_required' });

    const alice = await h.user('alice@example.com');
    const days = await alice.request('/v1/pats', { method: 'POST', json: { expires_in_days: 0 } });
    expect(days.status).toBe(400);
    expect(await days.json()).toEqual({ error: 'invalid request: expires_in_days: must be an integer from 1 to 366', code: 'invalid_request' });
    const label = await alice.request('/v1/pats', { method: 'POST', json: { label: 'x'.repeat(201) } });
    expect(label.status).toBe(400);
    expect(await label.json()).toEqual({ error: 'label too long (max 200)', code: 'label_too_long' });
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
    expect(await res.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
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
      expect(await res.json()).toEqual({ error: 'pat not found', code: 'pat_not_found' });
    }
    expect((await h.deps.pats.resolve(token))?.user.id).toBe(bob.id);
  });
});

describe('a PAT minted with a PAT: revocation cascades, expiry never outlives the parent', () => {
  /** Mints a PAT with `token` over HTTP; its id and token. */
  const mint = async (token: string, json: Record<string, unknown> = {}) => {
    const res = await h!.request('/v1/pats', { method: 'POST', token, json });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { pat: { id: string; expires_at?: number }; token: string };
    return { id: body.pat.id, token: body.token, expiresAt: body.pat.expires_at };
  };
  const live = async (...tokens: string[]) => Promise.all(tokens.map(async (t) => (await h!.deps.pats.resolve(t)) !== null));

  it('revoking a PAT revokes its descendants at every depth, never its ancestors or their other branches', async () => {
    h = await mountHandler([patsCreate, patsList, patsRevoke], { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const root = await h.deps.pats.create(alice.id, { label: 'root' });
    const other = await h.deps.pats.create(alice.id, { label: 'other root' });
    // root ─ a ─ b ─ c ─ d, with siblings a2 (of a) and b2 (of b), and a3 minted with root.
    const a = await mint(root.token);
    const a3 = await mint(root.token);
    const b = await mint(a.token);
    const a2 = await mint(a.token);
    const c = await mint(b.token);
    const b2 = await mint(b.token);
    const d = await mint(c.token);
    // A PAT may revoke its own ancestor (any of the user's credentials may revoke any of their PATs).
    const res = await h.request(`/v1/pats/${b.id}`, { method: 'DELETE', token: d.token });
    expect(res.status).toBe(204);
    expect(await live(b.token, c.token, b2.token, d.token)).toEqual([false, false, false, false]);
    expect(await live(root.token, a.token, a2.token, a3.token, other.token)).toEqual([true, true, true, true, true]);
    // A revoked PAT mints nothing more; its revoked descendants neither.
    for (const t of [b.token, d.token]) {
      const refused = await h.request('/v1/pats', { method: 'POST', token: t, json: {} });
      expect([refused.status, await refused.json()]).toEqual([401, { error: 'invalid token', code: 'invalid_token' }]);
    }
    // Revoking the root takes what is left of its tree; the other root stays.
    expect((await alice.request(`/v1/pats/${root.pat.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await live(root.token, a.token, a2.token, a3.token)).toEqual([false, false, false, false]);
    expect(await live(other.token)).toEqual([true]);
    expect((await h.deps.pats.list(alice.id)).map((p) => p.id)).toEqual([other.pat.id]);
    // Already gone: 404, whoever asks.
    const again = await alice.request(`/v1/pats/${c.id}`, { method: 'DELETE' });
    expect([again.status, await again.json()]).toEqual([404, { error: 'pat not found', code: 'pat_not_found' }]);
  });

  it('the expiry of each generation is capped at its parent\'s, at every depth', async () => {
    h = await mountHandler([patsCreate], { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const root = await h.deps.pats.create(alice.id, { expiresInDays: 10 });
    const a = await mint(root.token, { expires_in_days: 100 });
    const b = await mint(a.token);
    const c = await mint(b.token, { expires_in_days: 3 });
    const d = await mint(c.token, { expires_in_days: 366 });
    expect([a.expiresAt, b.expiresAt, c.expiresAt, d.expiresAt]).toEqual([T0 + 10 * DAY, T0 + 10 * DAY, T0 + 3 * DAY, T0 + 3 * DAY]);
    const rows = await h.deps.db.all<{ id: string; expires_at: number }>('SELECT id, expires_at FROM pats');
    expect(Object.fromEntries(rows.map((r) => [r.id, r.expires_at]))).toMatchObject({ [a.id]: T0 + 10 * DAY, [d.id]: T0 + 3 * DAY });
    // A session mints PATs with no parent: no cap, and no one's revocation reaches them.
    const free = await mint(alice.token, {});
    expect(free.expiresAt).toBeUndefined();
  });

  it('a PAT minted with a parent revoked meanwhile is not written (401)', async () => {
    h = await mountHandler([patsCreate], { clock: new ManualClock() });
    const alice = await h.user('alice@example.com');
    const parent = await h.deps.pats.create(alice.id);
    expect(await h.deps.pats.revoke(alice.id, parent.pat.id)).toEqual([parent.pat.id]);
    await expect(h.deps.pats.create(alice.id, { parentPatId: parent.pat.id })).rejects.toMatchObject({ status: 401 });
    // Nor with someone else's PAT as the parent.
    const bob = await h.user('bob@example.com');
    const bobs = await h.deps.pats.create(bob.id);
    await expect(h.deps.pats.create(alice.id, { parentPatId: bobs.pat.id })).rejects.toMatchObject({ status: 401 });
    expect(await h.deps.pats.list(alice.id)).toEqual([]);
  });
});
