import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import authIdp from '../../functions/auth/idp.ts';
import { verifySession } from '../../lib/auth/session.ts';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The loopback identity provider, shared by the file (its keys never rotate here). */
let idp: IdpStandIn;
beforeAll(async () => {
  idp = await startIdp();
});
afterAll(() => idp.close());

const idpEnv = () => ({ IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
const signIn = (m: MountedHandler, body: unknown) => m.request('/v1/auth/idp', { method: 'POST', json: body });

describe('POST /v1/auth/idp (functions/auth/idp.ts)', () => {
  it('exchanges a valid ID token for a session token and creates the user', async () => {
    h = await mountHandler(authIdp, { env: idpEnv() });
    const idToken = await idp.signIdToken({ sub: 'sub-a', email: 'Alice@Example.com', name: 'Alice' });
    const res = await signIn(h, { id_token: idToken });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { access_token: string; user: { id: string } };
    const user = await h.deps.users.byIssuerSubject(idp.issuer, 'sub-a');
    expect(body).toEqual({ access_token: body.access_token, user: { id: user!.id, email: 'alice@example.com', name: 'Alice' } });
    const claims = await verifySession(h.config.sessionSecret, h.deps.clock, body.access_token);
    expect(claims).toMatchObject({ sub: user!.id, email: 'alice@example.com' });
  });

  it('the first user adopts every ownerless repository', async () => {
    h = await mountHandler(authIdp, { env: idpEnv() });
    await h.deps.repos.create('orphan');
    const res = await signIn(h, { id_token: await idp.signIdToken({ sub: 'first' }) });
    expect(res.status).toBe(200);
    const { user } = (await res.json()) as { user: { id: string } };
    expect(await h.deps.members.roleOf('orphan', user.id)).toBe('owner');
  });

  it('refuses a bad ID token with 401 invalid id token: <reason>', async () => {
    h = await mountHandler(authIdp, { env: idpEnv() });
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ email_verified: false }, 'invalid id token: email not verified', 'invalid_id_token'],
      [{ aud: 'someone-else' }, 'invalid id token: audience mismatch', 'invalid_id_token'],
      [{ iss: 'https://evil.test' }, 'invalid id token: issuer not allowed', 'invalid_id_token'],
    ];
    for (const [claims, error, code] of cases) {
      const res = await signIn(h, { id_token: await idp.signIdToken(claims) });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error, code });
    }
    expect(await h.deps.users.any()).toBe(false);
  });

  it('400 id_token required', async () => {
    h = await mountHandler(authIdp, { env: idpEnv() });
    for (const body of [{}, { id_token: '' }, { id_token: 42 }]) {
      const res = await signIn(h, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'id_token required', code: 'id_token_required' });
    }
    const empty = await h.request('/v1/auth/idp', { method: 'POST' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ error: 'id_token required', code: 'id_token_required' });
  });

  it('503 when no identity provider is configured, before looking at the body', async () => {
    h = await mountHandler(authIdp);
    const res = await signIn(h, {});
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'identity provider not configured', code: 'idp_not_configured' });
  });

  it('has its own rate limiter on top of the general one', async () => {
    h = await mountHandler(authIdp, {
      env: { ...idpEnv(), SERVICE_RATELIMIT_DISABLE: '0', SERVICE_AUTH_RATELIMIT_BURST: '2' },
    });
    expect((await signIn(h, {})).status).toBe(400);
    expect((await signIn(h, {})).status).toBe(400);
    const res = await signIn(h, {});
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(await res.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
  });
});
