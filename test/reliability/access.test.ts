import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostedRoutes, routes } from '../../functions/index.ts';
import { signIn, startIdpTestServer, type IdpTestServer } from '../helpers/idp.ts';
import { startTestServer, type TestServer } from '../helpers/env.ts';
import { algNoneSession, expiredSession, otherSecretSession } from './helpers/tokens.ts';

/**
 * Access control, completing test/access-matrix.test.ts (which covers every repo-scoped route for none,
 * garbage, legacy, owner, member, non-member, PAT and revoked PAT):
 *  1. the credential kinds it lacks — an expired session, a session signed with another secret, an
 *     `alg: none` session — on EVERY route: all 401 `invalid token`;
 *  2. the account-scoped routes (/v1/me, /v1/pats*, /v1/repos, /v1/repos/join, and the hosted build's
 *     /v1/billing* and /v1/admin/*) for every credential kind;
 *  3. X-Forwarded-For from an untrusted peer cannot dodge the rate limiters.
 */

type Caller =
  | 'none'
  | 'garbage'
  | 'legacy'
  | 'owner'
  | 'member'
  | 'nonMember'
  | 'ownerPat'
  | 'revokedPat'
  | 'expiredSession'
  | 'otherSecret'
  | 'algNone';
const CALLERS: Caller[] = ['none', 'garbage', 'legacy', 'owner', 'member', 'nonMember', 'ownerPat', 'revokedPat', 'expiredSession', 'otherSecret', 'algNone'];
/** Credentials that identify nobody: 401 on every non-public route, with this exact error. */
const UNAUTHENTICATED: Partial<Record<Caller, Expect>> = {
  none: { status: 401, error: 'missing authorization header', code: 'missing_authorization' },
  garbage: { status: 401, error: 'invalid token', code: 'invalid_token' },
  revokedPat: { status: 401, error: 'invalid token', code: 'invalid_token' },
  expiredSession: { status: 401, error: 'invalid token', code: 'invalid_token' },
  otherSecret: { status: 401, error: 'invalid token', code: 'invalid_token' },
  algNone: { status: 401, error: 'invalid token', code: 'invalid_token' },
};
const FORGED: Caller[] = ['expiredSession', 'otherSecret', 'algNone'];

type Expect = { status: number; error?: string; code?: string };
type Row = Record<'legacy' | 'owner' | 'member' | 'nonMember' | 'ownerPat', Expect>;
const ok = (status: number): Expect => ({ status });
const USER_REQUIRED: Expect = { status: 403, error: 'user session required', code: 'user_session_required' };
/** GET /v1/search without `q`: every caller gets as far as the query check. */
const Q_REQUIRED: Expect = { status: 400, error: 'q required', code: 'q_required' };
const ADMIN_ONLY: Expect = { status: 403, error: 'admin only', code: 'admin_only' };

/** docs/concepts.md "Credentials" (the legacy key) and docs/api.md "Accounts" / "Repositories", account-scoped routes. */
const ACCOUNT: Record<string, Row> = {
  'GET /v1/me': { legacy: { status: 401, error: 'session required', code: 'session_required' }, owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  'GET /v1/limits': { legacy: ok(200), owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  'GET /v1/search': { legacy: Q_REQUIRED, owner: Q_REQUIRED, member: Q_REQUIRED, nonMember: Q_REQUIRED, ownerPat: Q_REQUIRED },
  'POST /v1/pats': { legacy: USER_REQUIRED, owner: ok(201), member: ok(201), nonMember: ok(201), ownerPat: ok(201) },
  'GET /v1/pats': { legacy: USER_REQUIRED, owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  // An unknown id (and someone else's, below) is 404 for every real user.
  'DELETE /v1/pats/:id': {
    legacy: USER_REQUIRED,
    owner: { status: 404, error: 'pat not found', code: 'pat_not_found' },
    member: { status: 404, error: 'pat not found', code: 'pat_not_found' },
    nonMember: { status: 404, error: 'pat not found', code: 'pat_not_found' },
    ownerPat: { status: 404, error: 'pat not found', code: 'pat_not_found' },
  },
  'GET /v1/repos': { legacy: ok(200), owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  'POST /v1/repos': { legacy: USER_REQUIRED, owner: ok(201), member: ok(201), nonMember: ok(201), ownerPat: ok(201) },
  'POST /v1/repos/join': { legacy: USER_REQUIRED, owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  // Hosted build only (docs/api.md "Hosted build: billing", "Hosted build: admin"); the owner is the admin here (SERVICE_ADMIN_EMAILS).
  'GET /v1/billing': { legacy: USER_REQUIRED, owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  'POST /v1/billing/checkout': { legacy: USER_REQUIRED, owner: ok(200), member: ok(200), nonMember: ok(200), ownerPat: ok(200) },
  'GET /v1/admin/stats': { legacy: ADMIN_ONLY, owner: ok(200), member: ADMIN_ONLY, nonMember: ADMIN_ONLY, ownerPat: ok(200) },
  'GET /v1/admin/users': { legacy: ADMIN_ONLY, owner: ok(200), member: ADMIN_ONLY, nonMember: ADMIN_ONLY, ownerPat: ok(200) },
  'GET /v1/admin/repos': { legacy: ADMIN_ONLY, owner: ok(200), member: ADMIN_ONLY, nonMember: ADMIN_ONLY, ownerPat: ok(200) },
  'POST /v1/admin/users/:id/subscription': { legacy: ADMIN_ONLY, owner: ok(204), member: ADMIN_ONLY, nonMember: ADMIN_ONLY, ownerPat: ok(204) },
};
/**
 * The billing webhook is public: signed instead (test/hosted.test.ts covers its signatures). The client package
 * is public: test/client-package.test.ts covers its contents.
 */
const CLIENT_FILES = ['GET /client/kr.tgz', 'GET /client/kr.mjs'];
const PUBLIC = ['GET /health', 'GET /openapi.json', 'POST /v1/auth/idp', 'POST /billing/webhook', ...CLIENT_FILES];

// The server below is the hosted build (SERVICE_HOSTED=1), a superset of the self-hosted one: every route of
// both builds is checked here. The caps are set out of the way; test/hosted.test.ts covers them.
const all = [...routes, ...hostedRoutes].map((r) => `${r.method} ${r.path}`);
const repoScoped = all.filter((r) => r.split(' ')[1]!.startsWith('/v1/repos/:id'));

let srv: IdpTestServer;
const creds = {} as Record<Caller, string | null>;
const ids = { owner: '', member: '', nonMember: '' };
let inviteToken = '';
let ownerPatId = '';

beforeAll(async () => {
  srv = await startIdpTestServer({
    env: {
      SERVICE_HOSTED: '1',
      SERVICE_PLAN_FREE_REPOS: '1000',
      SERVICE_PLAN_FREE_MEMBERS: '1000',
      SERVICE_ADMIN_EMAILS: 'owner@example.test',
      SERVICE_BILLING_CHECKOUT_URL: 'https://pay.example.test/checkout',
      SERVICE_BILLING_WEBHOOK_SECRET: 'whsec_access_test_0123456789',
    },
  });
  const owner = await signIn(srv, { sub: 'o', email: 'owner@example.test', name: 'Owner' });
  const member = await signIn(srv, { sub: 'm', email: 'member@example.test', name: 'Member' });
  const stranger = await signIn(srv, { sub: 'n', email: 'stranger@example.test', name: 'Stranger' });
  ids.owner = owner.user.id;
  ids.member = member.user.id;
  ids.nonMember = stranger.user.id;
  const mintPat = async () =>
    (await (await srv.api('/v1/pats', { method: 'POST', token: owner.token, json: {} })).json()) as { pat: { id: string }; token: string };
  const pat = await mintPat();
  ownerPatId = pat.pat.id;
  const revoked = await mintPat();
  expect((await srv.api(`/v1/pats/${revoked.pat.id}`, { method: 'DELETE', token: owner.token })).status).toBe(204);
  const secret = srv.deps.config.sessionSecret;
  Object.assign(creds, {
    none: null,
    garbage: 'garbage-token',
    legacy: 'test-legacy-key',
    owner: owner.token,
    member: member.token,
    nonMember: stranger.token,
    ownerPat: pat.token,
    revokedPat: revoked.token,
    // All three name the OWNER: accepting any of them would hand out the most powerful identity.
    expiredSession: await expiredSession(secret, ids.owner, 'owner@example.test'),
    otherSecret: await otherSecretSession(ids.owner, 'owner@example.test'),
    algNone: algNoneSession(ids.owner, 'owner@example.test'),
  });
  expect((await srv.api('/v1/repos', { method: 'POST', token: owner.token, json: { id: 'mx' } })).status).toBe(201);
  const invite = (await (await srv.api('/v1/repos/mx/invite-keys', { method: 'POST', token: owner.token, json: {} })).json()) as { token: string };
  inviteToken = invite.token;
  expect((await srv.api('/v1/repos/join', { method: 'POST', token: member.token, json: { key: inviteToken } })).status).toBe(200);
  expect(
    (await srv.api('/v1/repos/mx/sync/push', { method: 'POST', token: owner.token, json: { files: [{ path: 'a.md', content: '## One\nfirst\n' }] } })).status,
  ).toBe(200);
  expect(
    (await srv.api('/v1/repos/mx/sync/push', { method: 'POST', token: owner.token, json: { files: [{ path: 'a.md', content: '## One\nsecond\n' }] } })).status,
  ).toBe(200);
});
afterAll(async () => srv?.stop());

/** A request for a route that would succeed for an allowed caller. */
function request(route: string, caller: Caller): { method: string; path: string; json?: unknown } {
  const [method, pattern] = route.split(' ') as [string, string];
  const id = route.startsWith('DELETE /v1/pats') ? '00000000-0000-4000-8000-000000000000' : route.startsWith('POST /v1/admin/users/') ? ids.nonMember : 'mx';
  const path = pattern
    .replace(':id', id)
    .replace(':path{.+}', 'a.md')
    .replace(':userId', ids.nonMember)
    .replace(':keyId', '00000000-0000-4000-8000-000000000000');
  switch (route) {
    case 'POST /v1/repos':
      return { method, path, json: { id: `acct-${caller}` } };
    case 'POST /v1/repos/join':
      return { method, path, json: { key: inviteToken } };
    case 'POST /v1/repos/:id/sync/push':
      return { method, path, json: { files: [{ path: 'a.md', content: '## One\nsecond\n' }] } };
    case 'POST /v1/auth/idp':
      return { method, path, json: {} };
    case 'POST /v1/admin/users/:id/subscription':
      return { method, path, json: { subscribed: false } };
    default:
      return method === 'POST' && route !== 'POST /v1/repos/:id' ? { method, path, json: {} } : { method, path };
  }
}

async function bodyOf(res: Response): Promise<unknown> {
  if (res.status === 204) return null;
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

describe('every route is covered', () => {
  it('each route is public, repo-scoped (access-matrix.test.ts) or has an account-scoped row here', () => {
    const uncovered = all.filter((r) => !PUBLIC.includes(r) && !repoScoped.includes(r) && !(r in ACCOUNT));
    expect(uncovered).toEqual([]);
    expect(Object.keys(ACCOUNT).filter((r) => !all.includes(r))).toEqual([]);
  });
});

describe('expired, foreign-secret and alg:none sessions are refused on every route', () => {
  for (const route of all) {
    it(route, async () => {
      for (const caller of FORGED) {
        const { method, path, json } = request(route, caller);
        const res = await srv.api(path, { method, token: creds[caller], json });
        const body = await bodyOf(res);
        if (route === 'GET /health' || route === 'GET /openapi.json') {
          expect(res.status, caller).toBe(200);
        } else if (route === 'POST /v1/auth/idp') {
          // Public: the bearer is ignored; the body decides.
          expect([res.status, body], caller).toEqual([400, { error: 'id_token required', code: 'id_token_required' }]);
        } else if (CLIENT_FILES.includes(route)) {
          // Public: the bearer is ignored. The file is there once the client package was built in this
          // checkout (another test file may build it at any moment), else the 404 says how to build it.
          if (res.status === 404) expect(body, caller).toEqual({ error: 'client package not built on this server (npm run build:client)', code: 'client_not_built' });
          else expect(res.status, caller).toBe(200);
        } else if (route === 'POST /billing/webhook') {
          // Public and signed: the bearer is ignored; an unsigned body is refused.
          expect([res.status, body], caller).toEqual([401, { error: 'invalid signature', code: 'invalid_signature' }]);
        } else {
          expect([res.status, body], `${caller} ${route}`).toEqual([401, { error: 'invalid token', code: 'invalid_token' }]);
        }
      }
    });
  }

  it('a forged session offered as an ID token is refused by the sign-in route', async () => {
    for (const caller of FORGED) {
      const res = await srv.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: creds[caller] } });
      expect(res.status, caller).toBe(401);
      expect(((await res.json()) as { error: string }).error).toMatch(/^invalid id token: /);
    }
  });

  it('the real session of the same user still works (the forgeries were refused for what they are)', async () => {
    const res = await srv.api('/v1/me', { token: creds.owner });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(ids.owner);
  });
});

describe('account-scoped routes × every credential kind', () => {
  for (const route of Object.keys(ACCOUNT)) {
    it(route, async () => {
      const got: Record<string, unknown> = {};
      const want: Record<string, unknown> = {};
      for (const caller of CALLERS) {
        const { method, path, json } = request(route, caller);
        const res = await srv.api(path, { method, token: creds[caller], json });
        const body = await bodyOf(res);
        const unauth = UNAUTHENTICATED[caller];
        const exp: Expect = unauth ?? ACCOUNT[route]![caller as keyof Row];
        got[caller] = exp.error === undefined ? res.status : [res.status, body];
        want[caller] = exp.error === undefined ? exp.status : [exp.status, { error: exp.error, code: exp.code }];
        if (res.status >= 400) expect(body, `${caller} ${route}`).toEqual({ error: expect.any(String), code: expect.any(String) });
      }
      expect(got).toEqual(want);
    });
  }

  it('what each identity sees: /v1/me, /v1/repos and join results match the caller', async () => {
    const me = async (c: Caller) => (await (await srv.api('/v1/me', { token: creds[c] })).json()) as { id: string };
    expect((await me('owner')).id).toBe(ids.owner);
    expect((await me('ownerPat')).id).toBe(ids.owner);
    expect((await me('member')).id).toBe(ids.member);
    const repos = async (c: Caller) =>
      ((await (await srv.api('/v1/repos', { token: creds[c] })).json()) as { repos: Array<{ id: string; role?: string }> }).repos;
    const legacyIds = (await repos('legacy')).map((r) => r.id);
    expect(legacyIds).toEqual(expect.arrayContaining(['mx', 'acct-owner', 'acct-member', 'acct-nonMember', 'acct-ownerPat']));
    expect((await repos('legacy')).every((r) => r.role === undefined)).toBe(true);
    expect((await repos('member')).map((r) => [r.id, r.role])).toEqual([
      ['acct-member', 'owner'],
      ['mx', 'member'],
    ]);
    // The stranger joined mx through the matrix row above (it was offered a valid key), as a member.
    expect((await repos('nonMember')).map((r) => [r.id, r.role])).toEqual([
      ['acct-nonMember', 'owner'],
      ['mx', 'member'],
    ]);
    expect((await repos('owner')).find((r) => r.id === 'mx')?.role).toBe('owner');
  });

  it("someone else's PAT is 404 and keeps working; a PAT minted with a PAT works", async () => {
    const res = await srv.api(`/v1/pats/${ownerPatId}`, { method: 'DELETE', token: creds.member });
    expect([res.status, await res.json()]).toEqual([404, { error: 'pat not found', code: 'pat_not_found' }]);
    expect((await srv.api('/v1/me', { token: creds.ownerPat })).status).toBe(200);
    const minted = (await (await srv.api('/v1/pats', { method: 'POST', token: creds.ownerPat, json: {} })).json()) as { token: string };
    expect(((await (await srv.api('/v1/me', { token: minted.token })).json()) as { id: string }).id).toBe(ids.owner);
  });
});

describe('X-Forwarded-For from an untrusted peer cannot dodge the rate limiters', () => {
  const limited = {
    SERVICE_RATELIMIT_DISABLE: '',
    SERVICE_RATELIMIT_BURST: '5',
    SERVICE_RATELIMIT_PER_MIN: '1',
    SERVICE_AUTH_RATELIMIT_BURST: '2',
    SERVICE_AUTH_RATELIMIT_PER_MIN: '1',
  };
  const spoofHeaders = (i: number): Record<string, string> => ({
    'x-forwarded-for': `203.0.113.${i}, 198.51.100.${i}`,
    'x-real-ip': `192.0.2.${i}`,
    forwarded: `for=192.0.2.${i}`,
  });
  let untrusted: TestServer;
  let trusted: TestServer;
  beforeAll(async () => {
    // The peer (127.0.0.1) is not a trusted proxy here, so its X-Forwarded-For must be ignored.
    untrusted = await startTestServer({ env: { ...limited, SERVICE_TRUSTED_PROXIES: '10.255.255.1' } });
    // Control: loopback trusted (the default), so distinct X-Forwarded-For values are distinct clients.
    trusted = await startTestServer({ env: limited });
  });
  afterAll(async () => {
    await untrusted?.stop();
    await trusted?.stop();
  });

  it('general limiter: the 6th request is 429 whatever X-Forwarded-For says; /health stays exempt', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 8; i++) {
      const res = await untrusted.api('/v1/repos', { headers: spoofHeaders(i) });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(await res.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      } else await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    // Unauthenticated requests count too, and cannot get through either.
    expect((await untrusted.api('/v1/repos', { token: null, headers: spoofHeaders(99) })).status).toBe(429);
    expect((await untrusted.api('/health', { headers: spoofHeaders(100) })).status).toBe(200);
  });

  it('sign-in limiter: the 3rd attempt is 429 whatever X-Forwarded-For says', async () => {
    const s = await startTestServer({ env: { ...limited, SERVICE_TRUSTED_PROXIES: '10.255.255.1' } });
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= 4; i++) {
        const res = await s.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: 'x' }, headers: spoofHeaders(i) });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      // No identity provider configured: 503 until the sign-in bucket (burst 2) is empty.
      expect(statuses).toEqual([503, 503, 429, 429]);
    } finally {
      await s.stop();
    }
  });

  it('control: behind a trusted proxy, distinct forwarded clients get distinct buckets', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 8; i++) {
      const res = await trusted.api('/v1/repos', { headers: { 'x-forwarded-for': `203.0.113.${i}` } });
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual(Array(8).fill(200));
    // ...and the same forwarded client is limited.
    const same: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await trusted.api('/v1/repos', { headers: { 'x-forwarded-for': '198.51.100.7' } });
      same.push(res.status);
      await res.arrayBuffer();
    }
    expect(same).toEqual([200, 200, 200, 200, 200, 429]);
  });
});
