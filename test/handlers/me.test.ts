import { afterEach, describe, expect, it } from 'vitest';
import me from '../../functions/me.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /v1/me (functions/me.ts)', () => {
  it('answers the session user', async () => {
    h = await mountHandler(me);
    const alice = await h.user('Alice@Example.com', { name: 'Alice A.' });
    const res = await alice.request('/v1/me');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ id: alice.id, email: 'alice@example.com', name: 'Alice A.', server: { hosted: false } });
  });

  it('answers the PAT user', async () => {
    h = await mountHandler(me);
    const bob = await h.user('bob@example.com');
    const { token } = await h.deps.pats.create(bob.id, { label: 'cli' });
    const res = await h.request('/v1/me', { token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: bob.id, email: 'bob@example.com', name: 'bob', server: { hosted: false } });
  });

  it('self-hosted: server.hosted false and never admin, even for an email in SERVICE_ADMIN_EMAILS', async () => {
    h = await mountHandler(me, { env: { SERVICE_ADMIN_EMAILS: 'root@example.com' } });
    const root = await h.user('root@example.com', { name: 'Root' });
    const res = await root.request('/v1/me');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: root.id, email: 'root@example.com', name: 'Root', server: { hosted: false } });
  });

  it('hosted: server.hosted true; admin: true only for an email in SERVICE_ADMIN_EMAILS (any case, session or PAT)', async () => {
    h = await mountHandler(me, { env: { SERVICE_HOSTED: '1', SERVICE_ADMIN_EMAILS: 'Root@Example.com, ops@example.com' } });
    const root = await h.user('root@example.com', { name: 'Root' });
    const alice = await h.user('alice@example.com', { name: 'Alice' });
    const { token: rootPat } = await h.deps.pats.create(root.id, { label: 'cli' });

    const asRoot = { id: root.id, email: 'root@example.com', name: 'Root', server: { hosted: true }, admin: true };
    for (const res of [await root.request('/v1/me'), await h.request('/v1/me', { token: rootPat })]) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(asRoot);
    }
    const plain = await alice.request('/v1/me');
    expect(plain.status).toBe(200);
    const body = (await plain.json()) as Record<string, unknown>;
    expect(body).toEqual({ id: alice.id, email: 'alice@example.com', name: 'Alice', server: { hosted: true } });
    expect('admin' in body).toBe(false);

    const legacy = await h.legacy.request('/v1/me');
    expect(legacy.status).toBe(401);
    expect(await legacy.json()).toEqual({ error: 'session required', code: 'session_required' });
  });

  it('refuses the legacy key with 401 session required', async () => {
    h = await mountHandler(me);
    const res = await h.legacy.request('/v1/me');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'session required', code: 'session_required' });
  });

  it('refuses an expired session and a deleted user', async () => {
    const clock = new ManualClock();
    h = await mountHandler(me, { clock });
    const alice = await h.user('alice@example.com');
    clock.advance(30 * 24 * 3600 * 1000 + 1000);
    const expired = await alice.request('/v1/me');
    expect(expired.status).toBe(401);
    expect(await expired.json()).toEqual({ error: 'invalid token', code: 'invalid_token' });

    clock.set(Date.UTC(2026, 0, 1));
    expect((await alice.request('/v1/me')).status).toBe(200);
    await h.deps.db.run('DELETE FROM users WHERE id = ?', [alice.id]);
    const gone = await alice.request('/v1/me');
    expect(gone.status).toBe(401);
    expect(await gone.json()).toEqual({ error: 'invalid token', code: 'invalid_token' });
  });
});
