import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../functions/index.ts';
import { signIn, startIdpTestServer, type IdpTestServer } from './helpers/idp.ts';

/**
 * The access matrix: every repo-scoped route × every kind of caller → the exact status. A route added
 * under /v1/repos/:id without a row here fails the first test.
 */

type Caller = 'none' | 'garbage' | 'legacy' | 'owner' | 'member' | 'nonMember' | 'ownerPat' | 'revokedPat';
const CALLERS: Caller[] = ['none', 'garbage', 'legacy', 'owner', 'member', 'nonMember', 'ownerPat', 'revokedPat'];
type Row = Record<Exclude<Caller, 'none' | 'garbage' | 'revokedPat'>, number>;

// Unauthenticated callers always get 401; the rest per docs/concepts.md "Credentials" (the legacy key) and "Members and roles".
const MATRIX: Record<string, Row> = {
  'POST /v1/repos/:id': { legacy: 201, owner: 201, member: 201, nonMember: 403, ownerPat: 201 },
  'GET /v1/repos/:id/members': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'DELETE /v1/repos/:id/members/:userId': { legacy: 404, owner: 404, member: 403, nonMember: 403, ownerPat: 404 },
  'POST /v1/repos/:id/invite-keys': { legacy: 403, owner: 201, member: 403, nonMember: 403, ownerPat: 201 },
  'GET /v1/repos/:id/invite-keys': { legacy: 200, owner: 200, member: 403, nonMember: 403, ownerPat: 200 },
  'DELETE /v1/repos/:id/invite-keys/:keyId': { legacy: 404, owner: 404, member: 403, nonMember: 403, ownerPat: 404 },
  'GET /v1/repos/:id/pages': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/pages/:path{.+}': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'POST /v1/repos/:id/sync/push': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/sync/pull': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/timeline': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/history/:path{.+}': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/diff/:path{.+}': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/evolution/:path{.+}': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/activity': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/export': { legacy: 200, owner: 200, member: 403, nonMember: 403, ownerPat: 200 },
  // No q: a member gets as far as the query check.
  'GET /v1/repos/:id/search': { legacy: 400, owner: 400, member: 400, nonMember: 403, ownerPat: 400 },
  'GET /v1/repos/:id/links/:path{.+}': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  // No role in the body: an owner gets as far as the body check.
  'POST /v1/repos/:id/members/:userId/role': { legacy: 400, owner: 400, member: 403, nonMember: 403, ownerPat: 400 },
  // No confirm: an owner gets as far as the confirmation (and nothing is deleted).
  'DELETE /v1/repos/:id': { legacy: 400, owner: 400, member: 403, nonMember: 403, ownerPat: 400 },
  'GET /v1/repos/:id/events': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'GET /v1/repos/:id/webhooks': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  // `{}` has no url: an owner gets as far as the body check.
  'POST /v1/repos/:id/webhooks': { legacy: 400, owner: 400, member: 403, nonMember: 403, ownerPat: 400 },
  'DELETE /v1/repos/:id/webhooks/:wid': { legacy: 404, owner: 404, member: 403, nonMember: 403, ownerPat: 404 },
  'POST /v1/repos/:id/webhooks/:wid/test': { legacy: 404, owner: 404, member: 403, nonMember: 403, ownerPat: 404 },
  'GET /v1/repos/:id/webhooks/:wid/deliveries': { legacy: 404, owner: 404, member: 403, nonMember: 403, ownerPat: 404 },
  // git's routes (Bearer here; Basic is test/handlers/git.test.ts's): the advertisement and a v2 ls-refs.
  'GET /v1/repos/:id/info/refs': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  'POST /v1/repos/:id/git-upload-pack': { legacy: 200, owner: 200, member: 200, nonMember: 403, ownerPat: 200 },
  // Refused to anyone who may read the repository: the text/plain message git shows.
  'POST /v1/repos/:id/git-receive-pack': { legacy: 403, owner: 403, member: 403, nonMember: 403, ownerPat: 403 },
  // A garbage body: mx has commits, so an owner (or the legacy key) gets as far as `repository is not empty`,
  // before the body is read; a member is refused as no owner.
  'POST /v1/repos/:id/import': { legacy: 409, owner: 409, member: 403, nonMember: 403, ownerPat: 409 },
};

/** git's refusal of `git push`, in text/plain. */
const PUSH_REFUSAL = 'kr repositories are written with "kr push" or POST /v1/repos/mx/sync/push\n';
/** The routes whose 401s ask for Basic credentials, as git needs. */
const GIT_ROUTES = ['GET /v1/repos/:id/info/refs', 'POST /v1/repos/:id/git-upload-pack', 'POST /v1/repos/:id/git-receive-pack'];

const repoScoped = routes.filter((r) => r.path.startsWith('/v1/repos/:id')).map((r) => `${r.method} ${r.path}`);

let srv: IdpTestServer;
const creds = {} as Record<Caller, string | null>;
let strangerId = '';

beforeAll(async () => {
  srv = await startIdpTestServer();
  const owner = await signIn(srv, { sub: 'o', email: 'owner@example.test', name: 'Owner' });
  const member = await signIn(srv, { sub: 'm', email: 'member@example.test', name: 'Member' });
  const stranger = await signIn(srv, { sub: 'n', email: 'stranger@example.test', name: 'Stranger' });
  strangerId = stranger.user.id;
  const mintPat = async () => (await (await srv.api('/v1/pats', { method: 'POST', token: owner.token, json: {} })).json()) as { pat: { id: string }; token: string };
  const pat = await mintPat();
  const revoked = await mintPat();
  expect((await srv.api(`/v1/pats/${revoked.pat.id}`, { method: 'DELETE', token: owner.token })).status).toBe(204);
  Object.assign(creds, {
    none: null,
    garbage: 'garbage-token',
    legacy: 'test-legacy-key',
    owner: owner.token,
    member: member.token,
    nonMember: stranger.token,
    ownerPat: pat.token,
    revokedPat: revoked.token,
  });
  expect((await srv.api('/v1/repos', { method: 'POST', token: owner.token, json: { id: 'mx' } })).status).toBe(201);
  const invite = (await (await srv.api('/v1/repos/mx/invite-keys', { method: 'POST', token: owner.token, json: {} })).json()) as { token: string };
  expect((await srv.api('/v1/repos/join', { method: 'POST', token: member.token, json: { key: invite.token } })).status).toBe(200);
  for (const content of ['---\ntitle: A\n---\n## One\nfirst\n', '---\ntitle: A\n---\n## One\nsecond\n']) {
    expect((await srv.api('/v1/repos/mx/sync/push', { method: 'POST', token: owner.token, json: { files: [{ path: 'a.md', content }] } })).status).toBe(200);
  }
});
afterAll(async () => srv?.stop());

const pkt = (text: string) => `${(text.length + 4).toString(16).padStart(4, '0')}${text}`;

function request(route: string): { method: string; path: string; json?: unknown; body?: string; headers?: Record<string, string> } {
  const [method, pattern] = route.split(' ') as [string, string];
  const path = pattern
    .replace(':id', 'mx')
    .replace(':path{.+}', 'a.md')
    .replace(':userId', strangerId)
    .replace(':keyId', '00000000-0000-4000-8000-000000000000')
    .replace(':wid', '00000000-0000-4000-8000-000000000000');
  if (route === 'GET /v1/repos/:id/info/refs') return { method, path: `${path}?service=git-upload-pack` };
  if (route === 'POST /v1/repos/:id/git-upload-pack') {
    return { method, path, headers: { 'git-protocol': 'version=2' }, body: `${pkt('command=ls-refs\n')}0001${pkt('symrefs\n')}0000` };
  }
  if (route === 'POST /v1/repos/:id/git-receive-pack') return { method, path, body: '0000' };
  if (route === 'POST /v1/repos/:id/import') return { method, path, headers: { 'content-type': 'application/x-git-bundle' }, body: 'not a bundle' };
  if (route === 'POST /v1/repos/:id/sync/push') return { method, path, json: { files: [{ path: 'a.md', content: '---\ntitle: A\n---\n## One\nsecond\n' }] } };
  if (method === 'POST' && route !== 'POST /v1/repos/:id') return { method, path, json: {} };
  return { method, path };
}

describe('access matrix', () => {
  it('has a row for every repo-scoped route', () => {
    expect(repoScoped.filter((r) => !(r in MATRIX))).toEqual([]);
    expect(Object.keys(MATRIX).filter((r) => !repoScoped.includes(r))).toEqual([]);
  });

  for (const route of Object.keys(MATRIX)) {
    it(route, async () => {
      const got: Record<string, number> = {};
      const want: Record<string, number> = {};
      for (const caller of CALLERS) {
        const { method, path, json, body: sent, headers } = request(route);
        const res = await srv.api(path, { method, token: creds[caller], json, body: sent, headers });
        got[caller] = res.status;
        want[caller] = caller === 'none' || caller === 'garbage' || caller === 'revokedPat' ? 401 : MATRIX[route]![caller];
        // An event stream stays open: it is let go once its status is seen.
        const stream = res.headers.get('content-type') === 'text/event-stream';
        if (stream) await res.body?.cancel();
        // git's 200s are pkt-lines, and so is the push refusal's text.
        const text = res.headers.get('content-type')?.startsWith('text/plain') ?? false;
        const body = res.status === 204 || stream ? null : text ? await res.text() : await res.json().catch(() => 'not json');
        if (text) expect([res.status, body], `${caller} ${route}`).toEqual([403, PUSH_REFUSAL]);
        else if (res.status >= 400) expect(body, `${caller} ${route}`).toEqual({ error: expect.any(String), code: expect.any(String) });
        if (res.status === 401) expect(res.headers.get('www-authenticate')).toBe(GIT_ROUTES.includes(route) ? 'Basic realm="kr"' : null);
        if (caller === 'none') expect(body).toEqual({ error: 'missing authorization header', code: 'missing_authorization' });
        if (caller === 'garbage' || caller === 'revokedPat') expect(body).toEqual({ error: 'invalid token', code: 'invalid_token' });
        if (caller === 'nonMember') expect(body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      }
      expect(got).toEqual(want);
    });
  }

  it('a non-member gets the same 403 for a repository that does not exist', async () => {
    for (const route of Object.keys(MATRIX)) {
      // These create it (the import too: a missing repository is anyone's to import into).
      if (route === 'POST /v1/repos/:id' || route === 'POST /v1/repos/:id/sync/push' || route === 'POST /v1/repos/:id/import') continue;
      const { method, path, json, body, headers } = request(route);
      const res = await srv.api(path.replace('/mx', '/no-such-repo'), { method, token: creds.nonMember, json, body, headers });
      expect(res.status, route).toBe(403);
      expect(await res.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    }
  });
});
