import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportSPKI, generateKeyPair } from 'jose';
import { ManualClock } from '../lib/util/clock.ts';
import { HttpError } from '../lib/core/errors.ts';
import { cacheLifetimeSeconds, remoteIdpKeys, verifyIdToken } from '../lib/auth/idp.ts';
import { mintSession, verifySession } from '../lib/auth/session.ts';
import { base64url, constantTimeEqual, randomToken, sha256Hex } from '../lib/auth/tokens.ts';
import { bearerToken } from '../lib/auth/resolve.ts';
import { startTestServer, tempDir } from './helpers/env.ts';
import { newIdpKey, signIn, startIdp, startIdpTestServer, type IdpTestServer } from './helpers/idp.ts';

/** User, key, PAT and request ids are UUID v4. */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const LEGACY_KEY = 'test-legacy-key';
const SECRET = 'test-session-secret-0123456789-abcdef';
const DAY = 24 * 60 * 60;
const enc = new TextEncoder();
const b64 = (v: unknown) => base64url(enc.encode(JSON.stringify(v)));

async function json(res: Response): Promise<{ status: number; body: unknown }> {
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

function postIdToken(srv: IdpTestServer, idToken: unknown, headers: Record<string, string> = {}) {
  return srv.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken }, headers });
}

/** Every raw secret the tests saw, to look for in the database files afterwards. */
const seenSecrets: string[] = [];

/** Every byte of the database files (main file, WAL, journal) in a data root, as latin1 text. */
async function databaseBytes(dataRoot: string): Promise<string> {
  const names = (await readdir(dataRoot)).filter((n) => n.startsWith('service.db'));
  expect(names).toContain('service.db');
  const parts = await Promise.all(names.map((n) => readFile(join(dataRoot, n))));
  return Buffer.concat(parts).toString('latin1');
}

// ---------------------------------------------------------------------------------------------------
describe('tokens', () => {
  it('random tokens are prefix + 32 base64url chars of 24 random bytes, all different', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const t = randomToken('krp_');
      expect(t).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
      seen.add(t);
    }
    expect(seen.size).toBe(200);
    expect(randomToken('kri_')).toMatch(/^kri_[A-Za-z0-9_-]{32}$/);
  });

  it('hashes to lowercase SHA-256 hex and compares in constant time', async () => {
    expect(await sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(await constantTimeEqual('dev-key', 'dev-key')).toBe(true);
    expect(await constantTimeEqual('dev-key', 'dev-kez')).toBe(false);
    expect(await constantTimeEqual('dev-key', 'dev-key-longer')).toBe(false);
    expect(await constantTimeEqual('', '')).toBe(true);
  });

  it('parses the Authorization header: Bearer, scheme case-insensitive, token required', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER   abc  ')).toBe('abc');
    const fails = (h: string | undefined) => {
      try {
        bearerToken(h);
      } catch (e) {
        return [(e as HttpError).status, (e as HttpError).message];
      }
      return null;
    };
    expect(fails(undefined)).toEqual([401, 'missing authorization header']);
    expect(fails('   ')).toEqual([401, 'missing authorization header']);
    expect(fails('Basic dXNlcjpwYXNz')).toEqual([401, 'invalid authorization format, expected Bearer <token>']);
    expect(fails('Bearer')).toEqual([401, 'invalid authorization format, expected Bearer <token>']);
    expect(fails('Bearer    ')).toEqual([401, 'invalid authorization format, expected Bearer <token>']);
    expect(fails('Bearerabc')).toEqual([401, 'invalid authorization format, expected Bearer <token>']);
    expect(fails('Token abc')).toEqual([401, 'invalid authorization format, expected Bearer <token>']);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('sessions (unit)', () => {
  const secret = enc.encode(SECRET);
  it('mints HS256 JWTs with iss "service", sub, email, iat and exp = iat + 30 days', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0));
    const token = await mintSession(secret, clock, { id: 'u-1', email: 'a@example.com' });
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const iat = Date.UTC(2026, 4, 17, 10, 0, 0) / 1000;
    expect(decodeJwt(token)).toEqual({ email: 'a@example.com', iss: 'service', sub: 'u-1', iat, exp: iat + 30 * DAY });
    expect(await verifySession(secret, clock, token)).toEqual({ sub: 'u-1', email: 'a@example.com', iat, exp: iat + 30 * DAY });
    clock.advance(30 * DAY * 1000 - 1000);
    expect(await verifySession(secret, clock, token)).toEqual({ sub: 'u-1', email: 'a@example.com', iat, exp: iat + 30 * DAY });
    clock.advance(1000);
    expect(await verifySession(secret, clock, token)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------
describe('identity-provider key source', () => {
  it('reads cache lifetimes from Cache-Control and Age', () => {
    expect(cacheLifetimeSeconds('public, max-age=19204, must-revalidate, no-transform', null)).toBe(19204);
    expect(cacheLifetimeSeconds('max-age=100', '30')).toBe(70);
    expect(cacheLifetimeSeconds('max-age=100', '300')).toBe(0);
    expect(cacheLifetimeSeconds('Max-Age="60"', null)).toBe(60);
    expect(cacheLifetimeSeconds('no-store', null)).toBe(0);
    expect(cacheLifetimeSeconds('max-age=100, no-cache', null)).toBe(0);
    expect(cacheLifetimeSeconds('public', null)).toBeUndefined();
    expect(cacheLifetimeSeconds('max-age=abc', null)).toBeUndefined();
    expect(cacheLifetimeSeconds(null, null)).toBeUndefined();
  });

  it('caches per Cache-Control, refetches after max-age, and refetches on an unknown kid only after the cooldown', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const idp = await startIdp({ clock });
    try {
      idp.cacheControl = 'public, max-age=100';
      const check = (cooldownMs: number) => ({
        keys: remoteIdpKeys(new URL(idp.jwksUrl), { clock, cooldownMs }),
        clientId: idp.clientId,
        issuers: [idp.issuer],
        clock,
      });
      const c = check(30_000);
      await verifyIdToken(await idp.signIdToken(), c);
      await verifyIdToken(await idp.signIdToken(), c);
      expect(idp.fetches).toBe(1);
      // A new kid inside the cooldown: refused, and no request reaches the provider.
      const rotated = await idp.rotate();
      await expect(verifyIdToken(await idp.signIdToken(), c)).rejects.toMatchObject({
        status: 401,
        message: 'invalid id token: unknown key id',
      });
      expect(idp.fetches).toBe(1);
      // Past max-age the set is refetched and the rotated key is known.
      clock.advance(99_000);
      await expect(verifyIdToken(await idp.signIdToken({}, { kid: rotated.kid }), c)).rejects.toThrow('unknown key id');
      clock.advance(1_000);
      expect((await verifyIdToken(await idp.signIdToken(), c)).email).toBe('alice@example.com');
      expect(idp.fetches).toBe(2);

      // No cooldown: an unknown kid refetches at once (key rotation picked up).
      const c0 = check(0);
      await verifyIdToken(await idp.signIdToken(), c0);
      const fetched = idp.fetches;
      await idp.rotate();
      await verifyIdToken(await idp.signIdToken(), c0);
      expect(idp.fetches).toBe(fetched + 1);
    } finally {
      await idp.close();
    }
  });

  it('keeps verifying with cached keys when a refresh fails; 503 when it never had any', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const idp = await startIdp({ clock });
    try {
      idp.cacheControl = 'max-age=10';
      const c = { keys: remoteIdpKeys(new URL(idp.jwksUrl), { clock }), clientId: idp.clientId, issuers: [idp.issuer], clock };
      await verifyIdToken(await idp.signIdToken(), c);
      idp.jwksStatus = 500;
      clock.advance(60_000);
      expect((await verifyIdToken(await idp.signIdToken(), c)).subject).toBe('subject-1');
      expect(idp.fetches).toBe(2);

      const fresh = { ...c, keys: remoteIdpKeys(new URL(idp.jwksUrl), { clock }) };
      const err = await verifyIdToken(await idp.signIdToken(), fresh).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HttpError);
      expect(err).toMatchObject({ status: 503, message: 'identity provider unavailable' });
    } finally {
      await idp.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------------
describe('sign-in, sessions, PATs and /v1/me over real HTTP', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let srv: IdpTestServer;
  beforeAll(async () => {
    srv = await startIdpTestServer({ clock, extraIssuers: ['idp.test', 'https://other-idp.test'] });
  });
  afterAll(async () => {
    await srv?.stop();
  });

  const me = (token: string | null, headers: Record<string, string> = {}) => srv.api('/v1/me', { token, headers });

  describe('POST /v1/auth/idp', () => {
    it('exchanges a valid ID token for a session token and the user', async () => {
      const idToken = await srv.idp.signIdToken({ sub: 'happy-1', email: 'Happy@Example.COM', name: 'Happy Path' });
      seenSecrets.push(idToken);
      const res = await postIdToken(srv, idToken);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as { access_token: string; user: { id: string; email: string; name: string } };
      expect(Object.keys(body).sort()).toEqual(['access_token', 'user']);
      expect(body.user).toEqual({ id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), email: 'happy@example.com', name: 'Happy Path' });
      seenSecrets.push(body.access_token);
      const claims = decodeJwt(body.access_token);
      expect(decodeProtectedHeader(body.access_token).alg).toBe('HS256');
      expect(claims).toMatchObject({ iss: 'service', sub: body.user.id, email: 'happy@example.com' });
      expect(claims.iat).toBe(clock.now() / 1000);
      expect(claims.exp).toBe(clock.now() / 1000 + 30 * DAY);

      const who = await json(await me(body.access_token));
      expect(who).toEqual({ status: 200, body: { ...body.user, server: { hosted: false } } });
    });

    const reject = async (idToken: string, reason: string) => {
      const r = await json(await postIdToken(srv, idToken));
      expect(r).toEqual({ status: 401, body: { error: `invalid id token: ${reason}`, code: 'invalid_id_token' } });
    };

    it('rejects a bad signature (another key, same kid)', async () => {
      const other = await newIdpKey(srv.idp.current.kid);
      await reject(await srv.idp.signIdToken({}, { privateKey: other.privateKey }), 'bad signature');
    });

    it('rejects an unknown kid', async () => {
      const other = await newIdpKey('not-published');
      await reject(await srv.idp.signIdToken({}, { kid: other.kid, privateKey: other.privateKey }), 'unknown key id');
    });

    it('rejects alg none', async () => {
      const claims = srv.idp.claims();
      await reject(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`, 'algorithm must be RS256');
      await reject(`${b64({ alg: 'none', typ: 'JWT', kid: srv.idp.current.kid })}.${b64(claims)}.`, 'algorithm must be RS256');
    });

    it('rejects an HS256 token signed with the public key as the HMAC secret', async () => {
      const pem = await exportSPKI(srv.idp.current.publicKey);
      await reject(await srv.idp.signIdToken({}, { alg: 'HS256', privateKey: enc.encode(pem) }), 'algorithm must be RS256');
      const jwkText = JSON.stringify(srv.idp.current.jwk);
      await reject(await srv.idp.signIdToken({}, { alg: 'HS256', privateKey: enc.encode(jwkText) }), 'algorithm must be RS256');
    });

    it('rejects other asymmetric algorithms under a published kid', async () => {
      for (const alg of ['RS512', 'PS256', 'ES256']) {
        const { privateKey } = await generateKeyPair(alg);
        await reject(await srv.idp.signIdToken({}, { alg, privateKey }), 'algorithm must be RS256');
      }
    });

    it('rejects a wrong audience, a wrong issuer, an expired token', async () => {
      await reject(await srv.idp.signIdToken({ aud: 'someone-else' }), 'audience mismatch');
      await reject(await srv.idp.signIdToken({ aud: ['someone-else', 'another'] }), 'audience mismatch');
      await reject(await srv.idp.signIdToken({ iss: 'https://evil.test' }), 'issuer not allowed');
      const now = clock.now() / 1000;
      await reject(await srv.idp.signIdToken({ iat: now - 7200, exp: now - 3600 }), 'token expired');
      await reject(await srv.idp.signIdToken({ iat: now - 7200, exp: now }), 'token expired');
    });

    it('rejects tokens without a verified email', async () => {
      await reject(await srv.idp.signIdToken({ email_verified: false }), 'email not verified');
      await reject(await srv.idp.signIdToken({ email_verified: undefined }), 'email not verified');
      await reject(await srv.idp.signIdToken({ email_verified: 'true' }), 'email not verified');
      await reject(await srv.idp.signIdToken({ email: undefined }), 'no email');
      await reject(await srv.idp.signIdToken({ email: '' }), 'no email');
      await reject(await srv.idp.signIdToken({ email: 42 }), 'no email');
    });

    it('rejects missing required claims and garbage', async () => {
      await reject(await srv.idp.signIdToken({ sub: undefined }), 'missing sub claim');
      await reject(await srv.idp.signIdToken({ exp: undefined }), 'missing exp claim');
      await reject(await srv.idp.signIdToken({ aud: undefined }), 'missing aud claim');
      await reject('not-a-jwt', 'malformed token');
      await reject('a.b.c', 'malformed token');
    });

    it('answers 400 for a missing, empty or non-string id_token and for malformed JSON', async () => {
      const post = (body: string | undefined, type = 'application/json') =>
        srv.api('/v1/auth/idp', { method: 'POST', token: null, body, headers: { 'content-type': type } });
      const required = { status: 400, body: { error: 'id_token required', code: 'id_token_required' } };
      expect(await json(await post('{}'))).toEqual(required);
      expect(await json(await post(''))).toEqual(required);
      expect(await json(await post(undefined))).toEqual(required);
      expect(await json(await post('{"id_token":""}'))).toEqual(required);
      expect(await json(await post('{"id_token":42}'))).toEqual(required);
      expect(await json(await post('{"id_token":null}'))).toEqual(required);
      expect(await json(await post('["x"]'))).toEqual(required);
      expect(await json(await post('{"idToken":"x"}'))).toEqual(required);
      expect(await json(await post('{"id_token":'))).toEqual({ status: 400, body: { error: 'invalid JSON body', code: 'invalid_json' } });
    });

    it('needs no credential, and ignores one', async () => {
      const idToken = await srv.idp.signIdToken({ sub: 'with-bearer' });
      const res = await srv.api('/v1/auth/idp', { method: 'POST', token: 'garbage', json: { id_token: idToken } });
      expect(res.status).toBe(200);
    });

    it('keys users by (issuer, sub), refreshing email (lowercased) and name at each sign-in', async () => {
      const a = await signIn(srv, { sub: 'refresh-1', email: 'Bob@Example.com', name: 'Bob' });
      expect(a.user).toMatchObject({ email: 'bob@example.com', name: 'Bob' });
      const b = await signIn(srv, { sub: 'refresh-1', email: 'ROBERT@example.org', name: 'Robert' });
      expect(b.user).toEqual({ id: a.user.id, email: 'robert@example.org', name: 'Robert' });
      // The earlier session reads the account afresh.
      expect(await json(await me(a.token))).toEqual({ status: 200, body: { ...b.user, server: { hosted: false } } });
      // The issuer spelled without https:// is the same issuer: the same user.
      const same = await signIn(srv, { sub: 'refresh-1', email: 'robert@example.org', name: 'Robert' }, { iss: 'idp.test' });
      expect(same.user.id).toBe(a.user.id);
      // Same sub from another accepted issuer: another user.
      const c = await signIn(srv, { sub: 'refresh-1', email: 'robert@example.org', name: 'Robert' }, { iss: 'https://other-idp.test' });
      expect(c.user.id).not.toBe(a.user.id);
      // Same email, other sub: another user too.
      const d = await signIn(srv, { sub: 'refresh-2', email: 'robert@example.org' });
      expect(new Set([a.user.id, c.user.id, d.user.id]).size).toBe(3);
      expect(d.user.name).toBe('robert');
      // Without a name claim the name is empty; the next sign-in refreshes it.
      const e = await signIn(srv, { sub: 'refresh-2', email: 'robert@example.org' }, { name: undefined });
      expect(e.user).toEqual({ id: d.user.id, email: 'robert@example.org', name: '' });
      const row = await srv.deps.users.byIssuerSubject(srv.idp.issuer, 'refresh-1');
      expect(row).toMatchObject({ id: a.user.id, email: 'robert@example.org', name: 'Robert' });
    });
  });

  describe('credentials on /v1 routes', () => {
    let session: string;
    beforeAll(async () => {
      session = (await signIn(srv, { sub: 'creds-1', email: 'creds@example.com', name: 'Creds' })).token;
    });

    it('answers the exact 401 messages for missing and malformed headers', async () => {
      const fmt = { status: 401, body: { error: 'invalid authorization format, expected Bearer <token>', code: 'invalid_authorization_format' } };
      expect(await json(await me(null))).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
      expect(await json(await me(null, { authorization: '' }))).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
      expect(await json(await me(null, { authorization: 'Basic eDp5' }))).toEqual(fmt);
      expect(await json(await me(null, { authorization: 'Bearer' }))).toEqual(fmt);
      expect(await json(await me(null, { authorization: 'Bearer    ' }))).toEqual(fmt);
      expect(await json(await me(null, { authorization: session }))).toEqual(fmt);
      expect(await json(await me(null, { authorization: `Token ${session}` }))).toEqual(fmt);
    });

    it('treats the scheme case-insensitively', async () => {
      expect((await me(null, { authorization: `bearer ${session}` })).status).toBe(200);
      expect((await me(null, { authorization: `BEARER ${session}` })).status).toBe(200);
    });

    it('answers the same 401 "invalid token" for anything unknown, whatever it looks like', async () => {
      const invalid = { status: 401, body: { error: 'invalid token', code: 'invalid_token' } };
      const other = await generateKeyPair('RS256');
      const rs = await new SignJWT({ email: 'x@example.com' }).setProtectedHeader({ alg: 'RS256' }).setIssuer('service').setSubject('x').setIssuedAt().setExpirationTime('1h').sign(other.privateKey);
      for (const t of ['nope', 'krp_', `krp_${'A'.repeat(32)}`, randomToken('krp_'), randomToken('kri_'), `${LEGACY_KEY}x`, LEGACY_KEY.toUpperCase(), 'a.b.c', rs, `${session}x`]) {
        expect(await json(await me(t))).toEqual(invalid);
      }
    });

    it('accepts the legacy key, which /v1/me refuses with 401 "session required"', async () => {
      expect(await json(await me(LEGACY_KEY))).toEqual({ status: 401, body: { error: 'session required', code: 'session_required' } });
    });

    it('keeps 404 and 405 credential-free, and /health public', async () => {
      expect(await json(await srv.api('/v1/nothing', { token: null }))).toEqual({ status: 404, body: { error: 'not found', code: 'not_found' } });
      expect(await json(await srv.api('/v1/me', { method: 'DELETE', token: null }))).toEqual({ status: 405, body: { error: 'method not allowed', code: 'method_not_allowed' } });
      expect(await json(await srv.api('/v1/auth/idp', { token: null }))).toEqual({ status: 405, body: { error: 'method not allowed', code: 'method_not_allowed' } });
      expect(await json(await srv.api('/health', { token: null }))).toEqual({ status: 200, body: { status: 'ok' } });
    });

    describe('session tokens', () => {
      const invalid = { status: 401, body: { error: 'invalid token', code: 'invalid_token' } };
      it('refuses tampered tokens', async () => {
        const [h, p, s] = session.split('.') as [string, string, string];
        const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
        const forged = `${h}.${b64({ ...payload, email: 'admin@example.com' })}.${s}`;
        expect(await json(await me(forged))).toEqual(invalid);
        const flipped = `${h}.${p}.${s.slice(0, -2)}${s.at(-2) === 'A' ? 'B' : 'A'}${s.at(-1)}`;
        expect(await json(await me(flipped))).toEqual(invalid);
      });

      it('refuses a session signed with another secret, with alg none, with another alg, or another iss', async () => {
        const payload = decodeJwt(session);
        const sign = (alg: string, secret: string, iss = 'service') =>
          new SignJWT({ ...payload, iss }).setProtectedHeader({ alg, typ: 'JWT' }).sign(enc.encode(secret));
        expect(await json(await me(await sign('HS256', 'another-secret-another-secret-0123456789')))).toEqual(invalid);
        expect(await json(await me(await sign('HS512', SECRET)))).toEqual(invalid);
        expect(await json(await me(await sign('HS384', SECRET)))).toEqual(invalid);
        expect(await json(await me(await sign('HS256', SECRET, 'https://idp.test')))).toEqual(invalid);
        expect(await json(await me(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`))).toEqual(invalid);
        // Sanity: the same claims under the right secret and algorithm work.
        expect((await me(await sign('HS256', SECRET))).status).toBe(200);
      });

      it('refuses a well-signed session for a user that does not exist', async () => {
        const forged = await mintSession(enc.encode(SECRET), clock, { id: crypto.randomUUID(), email: 'ghost@example.com' });
        expect(await json(await me(forged))).toEqual(invalid);
      });

      it('expires 30 days after issue (injected clock)', async () => {
        const s = (await signIn(srv, { sub: 'expiry-1', email: 'exp@example.com' })).token;
        const start = clock.now();
        try {
          clock.advance(30 * DAY * 1000 - 1000);
          expect((await me(s)).status).toBe(200);
          clock.advance(1000);
          expect(await json(await me(s))).toEqual(invalid);
        } finally {
          clock.set(start);
        }
        expect((await me(s)).status).toBe(200);
      });
    });
  });

  describe('personal access tokens', () => {
    type PatBody = { pat: Record<string, unknown> & { id: string }; token: string };
    let alice: { token: string; user: { id: string; email: string; name: string } };
    let bob: { token: string; user: { id: string } };
    beforeAll(async () => {
      alice = await signIn(srv, { sub: 'pat-alice', email: 'pat.alice@example.com', name: 'Pat Alice' });
      bob = await signIn(srv, { sub: 'pat-bob', email: 'pat.bob@example.com', name: 'Pat Bob' });
    });
    const mint = async (token: string, body?: unknown) => {
      const res = await srv.api('/v1/pats', { method: 'POST', token, ...(body === undefined ? {} : { json: body }) });
      const out = await json(res);
      if (out.status === 201) seenSecrets.push((out.body as PatBody).token);
      return out;
    };
    const list = async (token: string) => (await json(await srv.api('/v1/pats', { token }))).body as { pats: Array<Record<string, unknown>> };

    it('mints from a session: 201 with the token shown once', async () => {
      const r = await mint(alice.token, { label: 'laptop' });
      expect(r.status).toBe(201);
      const body = r.body as PatBody;
      expect(Object.keys(body).sort()).toEqual(['pat', 'token']);
      expect(body.token).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
      expect(body.pat).toEqual({ id: expect.stringMatching(UUID_V4), label: 'laptop', created_at: clock.now() / 1000 });
      // The PAT acts as the user.
      expect(await json(await me(body.token))).toEqual({ status: 200, body: { ...alice.user, server: { hosted: false } } });
    });

    it('mints from a PAT; an empty body means no label and no expiry', async () => {
      const first = (await mint(alice.token, {})).body as PatBody;
      const res = await srv.api('/v1/pats', { method: 'POST', token: first.token });
      expect(res.status).toBe(201);
      const second = (await res.json()) as PatBody;
      seenSecrets.push(second.token);
      expect(second.pat).toEqual({ id: second.pat.id, label: '', created_at: clock.now() / 1000 });
      expect((await me(second.token)).status).toBe(200);
    });

    it('refuses the legacy key with 403 "user session required" on mint, list and revoke', async () => {
      const refused = { status: 403, body: { error: 'user session required', code: 'user_session_required' } };
      expect(await mint(LEGACY_KEY, {})).toEqual(refused);
      expect(await json(await srv.api('/v1/pats', { token: LEGACY_KEY }))).toEqual(refused);
      expect(await json(await srv.api(`/v1/pats/${crypto.randomUUID()}`, { method: 'DELETE', token: LEGACY_KEY }))).toEqual(refused);
    });

    it('validates expires_in_days (integer 1..366) and label', async () => {
      const bad = (field: string, msg: string) => ({ status: 400, body: { error: `invalid request: ${field}: ${msg}`, code: 'invalid_request' } });
      const range = bad('expires_in_days', 'must be an integer from 1 to 366');
      for (const v of [0, 367, 1.5, '3', null, -1, true, 1e10]) expect(await mint(alice.token, { expires_in_days: v })).toEqual(range);
      expect(await mint(alice.token, { label: 5 })).toEqual(bad('label', 'expected string'));
      expect(await mint(alice.token, { label: null })).toEqual(bad('label', 'expected string'));
      const malformed = await json(await srv.api('/v1/pats', { method: 'POST', token: alice.token, body: '{"label":', headers: { 'content-type': 'application/json' } }));
      expect(malformed).toEqual({ status: 400, body: { error: 'invalid JSON body', code: 'invalid_json' } });
      expect(await json(await srv.api('/v1/pats', { method: 'POST', token: alice.token, json: [] }))).toEqual({ status: 400, body: { error: 'invalid request: expected object', code: 'invalid_request' } });
      for (const days of [1, 366]) {
        const r = await mint(alice.token, { expires_in_days: days });
        expect(r.status).toBe(201);
        const pat = (r.body as PatBody).pat;
        expect(pat.expires_at).toBe((pat.created_at as number) + days * DAY);
      }
    });

    it('lists own PATs newest first, without token or hash', async () => {
      const carol = await signIn(srv, { sub: 'pat-carol', email: 'carol@example.com' });
      expect(await list(carol.token)).toEqual({ pats: [] });
      const ids: string[] = [];
      const start = clock.now() / 1000;
      for (const label of ['one', 'two', 'three']) {
        ids.push(((await mint(carol.token, { label, expires_in_days: 30 })).body as PatBody).pat.id);
        clock.advance(1000);
      }
      // Same second: still newest first.
      ids.push(((await mint(carol.token, { label: 'four' })).body as PatBody).pat.id);
      ids.push(((await mint(carol.token, { label: 'five' })).body as PatBody).pat.id);
      const { pats } = await list(carol.token);
      expect(pats.map((p) => p.label)).toEqual(['five', 'four', 'three', 'two', 'one']);
      expect(pats.map((p) => p.id)).toEqual([...ids].reverse());
      for (const p of pats) {
        expect(Object.keys(p).every((k) => ['id', 'label', 'created_at', 'expires_at', 'last_used_at'].includes(k))).toBe(true);
      }
      expect(pats.map((p) => p.created_at)).toEqual([start + 3, start + 3, start + 2, start + 1, start]);
      expect(pats[4]).toEqual({ id: ids[0], label: 'one', created_at: start, expires_at: start + 30 * DAY });
      expect(JSON.stringify(pats)).not.toMatch(/krp_|token|hash/);
      // Bob sees none of them.
      expect((await list(bob.token)).pats.map((p) => p.id).filter((id) => ids.includes(id as string))).toEqual([]);
    });

    it('marks the token a listing is made with as current; a session marks none', async () => {
      const dave = await signIn(srv, { sub: 'pat-dave', email: 'dave@example.com' });
      const a = (await mint(dave.token, { label: 'a' })).body as PatBody;
      clock.advance(1000);
      const b = (await mint(dave.token, { label: 'b' })).body as PatBody;
      const marks = (pats: Array<Record<string, unknown>>) => pats.map((p) => [p.label, p.current]);
      expect(marks((await list(dave.token)).pats)).toEqual([['b', undefined], ['a', undefined]]);
      expect(marks((await list(a.token)).pats)).toEqual([['b', undefined], ['a', true]]);
      expect(marks((await list(b.token)).pats)).toEqual([['b', true], ['a', undefined]]);
      // Only `true`, never `false`: the key is absent on the others.
      expect(Object.keys((await list(b.token)).pats[1]!)).not.toContain('current');
    });

    it('revokes: 204, then the token is refused at once; unknown or foreign ids are 404', async () => {
      const mine = (await mint(alice.token, { label: 'to-revoke' })).body as PatBody;
      const bobs = (await mint(bob.token, { label: 'bobs' })).body as PatBody;
      expect((await me(mine.token)).status).toBe(200);
      const notFound = { status: 404, body: { error: 'pat not found', code: 'pat_not_found' } };
      expect(await json(await srv.api(`/v1/pats/${bobs.pat.id}`, { method: 'DELETE', token: alice.token }))).toEqual(notFound);
      expect((await me(bobs.token)).status).toBe(200);
      expect(await json(await srv.api(`/v1/pats/${crypto.randomUUID()}`, { method: 'DELETE', token: alice.token }))).toEqual(notFound);
      expect(await json(await srv.api('/v1/pats/not-a-uuid', { method: 'DELETE', token: alice.token }))).toEqual(notFound);

      const del = await srv.api(`/v1/pats/${mine.pat.id}`, { method: 'DELETE', token: alice.token });
      expect(del.status).toBe(204);
      expect(await del.text()).toBe('');
      expect(await json(await me(mine.token))).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
      expect(await json(await srv.api(`/v1/pats/${mine.pat.id}`, { method: 'DELETE', token: alice.token }))).toEqual(notFound);
      expect((await list(alice.token)).pats.map((p) => p.id)).not.toContain(mine.pat.id);
      // A PAT may revoke itself.
      const self = (await mint(alice.token, {})).body as PatBody;
      expect((await srv.api(`/v1/pats/${self.pat.id}`, { method: 'DELETE', token: self.token })).status).toBe(204);
      expect((await me(self.token)).status).toBe(401);
    });

    it('expires: refused from expires_at on (injected clock)', async () => {
      const start = clock.now();
      const p = (await mint(alice.token, { expires_in_days: 1 })).body as PatBody;
      try {
        clock.advance(DAY * 1000 - 1000);
        expect((await me(p.token)).status).toBe(200);
        clock.advance(1000);
        expect(await json(await me(p.token))).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
        // Still listed (it was not revoked), with its expiry.
        expect((await list(alice.token)).pats.find((x) => x.id === p.pat.id)).toMatchObject({ expires_at: (p.pat.created_at as number) + DAY });
      } finally {
        clock.set(start);
      }
    });

    it('refreshes last_used_at at most once a minute', async () => {
      const p = (await mint(alice.token, { label: 'usage' })).body as PatBody;
      const lastUsed = async () => (await list(alice.token)).pats.find((x) => x.id === p.pat.id)!.last_used_at;
      expect(await lastUsed()).toBeUndefined();
      const t0 = clock.now() / 1000;
      expect((await me(p.token)).status).toBe(200);
      expect(await lastUsed()).toBe(t0);
      clock.advance(59_000);
      expect((await me(p.token)).status).toBe(200);
      expect(await lastUsed()).toBe(t0);
      clock.advance(1_000);
      expect((await me(p.token)).status).toBe(200);
      expect(await lastUsed()).toBe(t0 + 60);
      // Parallel uses write at most once.
      clock.advance(120_000);
      await Promise.all(Array.from({ length: 5 }, () => me(p.token)));
      expect(await lastUsed()).toBe(t0 + 180);
    });
  });

  it('never stores a raw token or ID token in the database', async () => {
    expect(seenSecrets.length).toBeGreaterThan(10);
    const bytes = await databaseBytes(srv.dataRoot);
    for (const s of seenSecrets) {
      expect(bytes.includes(s)).toBe(false);
      // Nor the signature part of a JWT on its own.
      if (s.includes('.')) expect(bytes.includes(s.split('.')[2]!)).toBe(false);
    }
    expect(bytes).not.toMatch(/krp_[A-Za-z0-9_-]{32}/);
    // Hashes are what is there.
    const pat = seenSecrets.find((s) => s.startsWith('krp_'))!;
    const hashes = (await srv.deps.db.all<{ token_hash: string }>('SELECT token_hash FROM pats')).map((r) => r.token_hash);
    expect(hashes).toContain(await sha256Hex(pat));
  });
});

// ---------------------------------------------------------------------------------------------------
describe('sign-in on fresh servers', () => {
  it('503 "identity provider not configured" when IDP_OAUTH_CLIENT_ID is unset, before reading the body', async () => {
    const srv = await startTestServer();
    try {
      const unconfigured = { status: 503, body: { error: 'identity provider not configured', code: 'idp_not_configured' } };
      expect(await json(await srv.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: 'x' } }))).toEqual(unconfigured);
      expect(await json(await srv.api('/v1/auth/idp', { method: 'POST', token: null, body: '{bad' }))).toEqual(unconfigured);
      expect(await json(await srv.api('/v1/auth/idp', { method: 'POST', token: null }))).toEqual(unconfigured);
      // The legacy key still works.
      expect(await json(await srv.api('/v1/me'))).toEqual({ status: 401, body: { error: 'session required', code: 'session_required' } });
    } finally {
      await srv.stop();
    }
  });

  it('rate-limits sign-in per IP: burst 8, then 429 (failed attempts count)', async () => {
    const srv = await startIdpTestServer({ env: { SERVICE_RATELIMIT_DISABLE: 'no' } });
    try {
      const xff = { 'x-forwarded-for': '203.0.113.50' };
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await postIdToken(srv, await srv.idp.signIdToken({ sub: `rl-${i}` }), xff)).status);
      for (let i = 0; i < 4; i++) statuses.push((await postIdToken(srv, 'garbage', xff)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 401, 401, 401, 401]);
      const limited = await postIdToken(srv, await srv.idp.signIdToken(), xff);
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Another client has its own bucket; other routes are only under the general limiter.
      expect((await postIdToken(srv, await srv.idp.signIdToken(), { 'x-forwarded-for': '203.0.113.51' })).status).toBe(200);
      expect((await srv.api('/v1/me', { headers: xff })).status).toBe(401);
    } finally {
      await srv.stop();
    }
  });

  it('the first user adopts every ownerless repository; the second adopts nothing', async () => {
    const srv = await startIdpTestServer();
    try {
      await srv.deps.repos.create('alpha');
      await srv.deps.repos.create('beta');
      const first = await signIn(srv, { sub: 'first', email: 'first@example.com' });
      for (const id of ['alpha', 'beta']) {
        expect(await srv.deps.members.list(id)).toEqual([
          { user_id: first.user.id, email: 'first@example.com', role: 'owner', added_at: expect.any(Number) },
        ]);
      }
      await srv.deps.repos.create('gamma');
      const second = await signIn(srv, { sub: 'second', email: 'second@example.com' });
      expect(await srv.deps.members.reposOf(second.user.id)).toEqual([]);
      expect(await srv.deps.members.list('gamma')).toEqual([]);
      // Signing in again does not make the first user adopt later repositories either.
      await signIn(srv, { sub: 'first', email: 'first@example.com' });
      expect(await srv.deps.members.list('gamma')).toEqual([]);
      expect(await srv.deps.members.reposOf(first.user.id)).toEqual([
        { repo_id: 'alpha', role: 'owner' },
        { repo_id: 'beta', role: 'owner' },
      ]);
    } finally {
      await srv.stop();
    }
  });

  it('simultaneous first sign-ins: exactly one user adopts', async () => {
    const srv = await startIdpTestServer();
    try {
      const repos = ['r1', 'r2', 'r3'];
      for (const id of repos) await srv.deps.repos.create(id);
      const users = await Promise.all(
        Array.from({ length: 6 }, (_, i) => signIn(srv, { sub: `racer-${i}`, email: `racer${i}@example.com` })),
      );
      const owners = new Set<string>();
      for (const id of repos) {
        const members = await srv.deps.members.list(id);
        expect(members).toHaveLength(1);
        expect(members[0]!.role).toBe('owner');
        owners.add(members[0]!.user_id);
      }
      expect(owners.size).toBe(1);
      const adopters = [];
      for (const u of users) if ((await srv.deps.members.reposOf(u.user.id)).length > 0) adopters.push(u.user.id);
      expect(adopters).toEqual([...owners]);
      const logged = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'first_user');
      expect(logged).toEqual([expect.objectContaining({ user_id: [...owners][0], adopted: repos })]);
    } finally {
      await srv.stop();
    }
  });

  it('picks up a rotated key: a new kid added to the JWKS after the first fetch', async () => {
    const srv = await startIdpTestServer({ keysCooldownMs: 0 });
    try {
      await signIn(srv, { sub: 'rot-1', email: 'rot@example.com' });
      expect(srv.idp.fetches).toBe(1);
      const old = srv.idp.current;
      await srv.idp.rotate();
      await signIn(srv, { sub: 'rot-1', email: 'rot@example.com' });
      expect(srv.idp.fetches).toBe(2);
      // The old key is still published and still accepted; once dropped (and refetched) it is not.
      expect((await postIdToken(srv, await srv.idp.signIdToken({}, { kid: old.kid, privateKey: old.privateKey }))).status).toBe(200);
      await srv.idp.rotate({ dropOld: true });
      await signIn(srv, { sub: 'rot-1', email: 'rot@example.com' });
      const r = await json(await postIdToken(srv, await srv.idp.signIdToken({}, { kid: old.kid, privateKey: old.privateKey })));
      expect(r).toEqual({ status: 401, body: { error: 'invalid id token: unknown key id', code: 'invalid_id_token' } });
    } finally {
      await srv.stop();
    }
  });

  it('the production key source does not refetch on an unknown kid inside its cooldown', async () => {
    const srv = await startIdpTestServer();
    try {
      await signIn(srv, { sub: 'cool-1', email: 'cool@example.com' });
      await srv.idp.rotate();
      const r = await json(await postIdToken(srv, await srv.idp.signIdToken()));
      expect(r).toEqual({ status: 401, body: { error: 'invalid id token: unknown key id', code: 'invalid_id_token' } });
      expect(srv.idp.fetches).toBe(1);
    } finally {
      await srv.stop();
    }
  });

  it('after stopping, the database files hold no raw PAT, session or ID token', async () => {
    const dir = await tempDir();
    const srv = await startIdpTestServer({ dataRoot: dir.path });
    const secrets: string[] = [];
    try {
      const idToken = await srv.idp.signIdToken({ sub: 'scan', email: 'scan@example.com' });
      secrets.push(idToken);
      const res = await postIdToken(srv, idToken);
      const { access_token } = (await res.json()) as { access_token: string };
      secrets.push(access_token);
      for (let i = 0; i < 3; i++) {
        const r = await srv.api('/v1/pats', { method: 'POST', token: access_token, json: { label: `scan ${i}`, expires_in_days: 7 } });
        const { token } = (await r.json()) as { token: string };
        secrets.push(token);
        expect((await srv.api('/v1/me', { token })).status).toBe(200);
      }
    } finally {
      await srv.stop();
    }
    try {
      const bytes = await databaseBytes(dir.path);
      expect(bytes).toContain(await sha256Hex(secrets[2]!));
      for (const s of secrets) {
        expect(bytes.includes(s)).toBe(false);
        if (s.includes('.')) expect(bytes.includes(s.split('.')[2]!)).toBe(false);
      }
      expect(bytes).not.toMatch(/krp_[A-Za-z0-9_-]{32}/);
    } finally {
      await dir.cleanup();
    }
  });
});
