/**
 * Every JSON error body carries its refusal's `code` (lib/core/refusals.ts), on both builds: a sample of every kind
 * of refusal, each from a real request, with its exact status and body. test/refusal-codes.test.ts runs these
 * cases against the Node server, test/refusal-codes-workers.test.ts against the hosted build in workerd, where
 * the refusals thrown inside a repository's Durable Object cross its RPC boundary (lib/core/errors.ts
 * `errorToWire`/`errorFromWire`) and keep their code. Every answer is also checked against the OpenAPI
 * document by the target's client (test/helpers/targets.ts), whose error schema requires `code`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';

type Init = RequestInit & { token?: string | null; json?: unknown };

const ENV: Record<string, string> = {
  SERVICE_HOSTED: '1',
  SERVICE_PLAN_FREE_REPOS: '1',
  SERVICE_DASHBOARD_URL: 'https://app.example.test',
};

export function refusalCodeCases(kind: TargetKind): void {
  describe(`${kind}: every error body has its code`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let alice = '';
    let bob = '';

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: r.status, body };
    };

    beforeAll(async () => {
      idp = await startIdp();
      t = await startTarget(kind, { ...ENV, IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      const signIn = async (name: string) => {
        const idToken = await idp.signIdToken({ sub: `${name}-1`, email: `${name}@example.test`, name });
        const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
        expect(r.status).toBe(200);
        return (r.body as { access_token: string }).access_token;
      };
      alice = await signIn('alice');
      bob = await signIn('bob');
      // alice owns `kb`, with one page; bob belongs to nothing.
      expect((await call('/v1/repos', { method: 'POST', json: { id: 'kb' }, token: alice })).status).toBe(201);
      const push = await call('/v1/repos/kb/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: '## A\none\n' }] }, token: alice });
      expect(push.status).toBe(200);
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
    });

    it('401: missing header, malformed header, invalid token', async () => {
      expect(await call('/v1/me', { token: null })).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
      expect(await call('/v1/me', { token: null, headers: { authorization: 'Token x' } })).toEqual({
        status: 401,
        body: { error: 'invalid authorization format, expected Bearer <token>', code: 'invalid_authorization_format' },
      });
      expect(await call('/v1/me', { token: 'krp_nottherighttokennottherighttoken' })).toEqual({ status: 401, body: { error: 'invalid token', code: 'invalid_token' } });
    });

    it('404 not found and 405 method not allowed, from the app itself', async () => {
      expect(await call('/v1/nothing-here')).toEqual({ status: 404, body: { error: 'not found', code: 'not_found' } });
      const r = await t.api('/v1/limits', { method: 'DELETE' });
      expect([r.status, r.headers.get('allow'), await r.json()]).toEqual([405, 'GET, OPTIONS', { error: 'method not allowed', code: 'method_not_allowed' }]);
    });

    it("opening a repository: 400 invalid repo id, 403 not a member, 404 repo not found", async () => {
      expect(await call('/v1/repos/!!!/pages')).toEqual({ status: 400, body: { error: 'invalid repo id', code: 'invalid_repo_id' } });
      expect(await call('/v1/repos/kb/pages', { token: bob })).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await call('/v1/repos/ghost/pages')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
    });

    it('roles and identities: 403 owner only, 403 user session required, 404 a member that is not one', async () => {
      const key = await call('/v1/repos/kb/invite-keys', { method: 'POST', json: {}, token: alice });
      expect(key.status).toBe(201);
      expect((await call('/v1/repos/join', { method: 'POST', json: { key: (key.body as { token: string }).token }, token: bob })).status).toBe(200);
      expect(await call('/v1/repos/kb/invite-keys', { token: bob })).toEqual({ status: 403, body: { error: 'only an owner can manage invite keys', code: 'owner_only_invites' } });
      expect(await call('/v1/pats')).toEqual({ status: 403, body: { error: 'user session required', code: 'user_session_required' } });
      expect(await call('/v1/repos/kb/members/00000000-0000-4000-8000-000000000000', { method: 'DELETE', token: alice })).toEqual({
        status: 404,
        body: { error: 'not a member of this repo', code: 'not_a_member' },
      });
    });

    it('400 bodies: invalid JSON, invalid request; 413 too large', async () => {
      expect(await call('/v1/repos', { method: 'POST', body: '{"id": ', headers: { 'content-type': 'application/json' }, token: alice })).toEqual({
        status: 400,
        body: { error: 'invalid JSON body', code: 'invalid_json' },
      });
      expect(await call('/v1/repos', { method: 'POST', json: { id: 7 }, token: alice })).toEqual({
        status: 400,
        body: { error: 'invalid request: id: expected string', code: 'invalid_request' },
      });
      expect(await call('/v1/repos', { method: 'POST', json: { id: 'x'.repeat(70 * 1024) }, token: alice })).toEqual({
        status: 413,
        body: { error: 'request body too large', code: 'body_too_large' },
      });
    });

    it('refusals from inside the repository (its Durable Object on the hosted build) keep their code', async () => {
      expect(await call('/v1/repos/kb/pages/missing.md')).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
      expect(await call('/v1/repos/kb/diff/missing.md')).toEqual({ status: 404, body: { error: 'path not present in repo', code: 'path_not_in_repo' } });
      expect(await call('/v1/repos/kb/diff/a.md')).toEqual({
        status: 400,
        body: { error: 'no parent commit for this path; pass ?from explicitly', code: 'no_parent' },
      });
      expect(await call(`/v1/repos/kb/sync/pull?since=${'d'.repeat(40)}`)).toEqual({ status: 400, body: { error: `unknown sha: ${'d'.repeat(40)}`, code: 'unknown_sha' } });
      const garbage = new TextEncoder().encode('hello, not a bundle\n');
      expect(await call('/v1/repos/imp/import', { method: 'POST', body: garbage, headers: { 'content-type': 'application/x-git-bundle' } })).toEqual({
        status: 400,
        body: { error: 'invalid bundle: not a git bundle (v2 or v3)', code: 'invalid_bundle' },
      });
    });

    it('409 conflicts of state: repo already exists, path collides; 402 keeps its quota code', async () => {
      expect(await call('/v1/repos', { method: 'POST', json: { id: 'kb' }, token: alice })).toEqual({ status: 409, body: { error: 'repo already exists', code: 'repo_exists' } });
      expect(await call('/v1/repos/kb/sync/push', { method: 'POST', json: { files: [{ path: 'a.md/b.md', content: 'x' }] } })).toEqual({
        status: 409,
        body: { error: 'path collides with an existing page or directory: a.md', code: 'path_collision' },
      });
      expect(await call('/v1/repos', { method: 'POST', json: { id: 'second' }, token: alice })).toEqual({
        status: 402,
        body: { error: 'repository limit reached for your plan (1)', code: 'quota_repos', limit: 1, upgrade_url: 'https://app.example.test/billing' },
      });
    });

    it('500 internal error: a route whose table is gone', async () => {
      await t.exec('DROP TABLE activity');
      expect(await call('/v1/repos/kb/activity')).toEqual({ status: 500, body: { error: 'internal error', code: 'internal_error' } });
    });
  });

  describe(`${kind}: 429 rate limit exceeded has its code`, () => {
    let t: Target;
    beforeAll(async () => {
      t = await startTarget(kind, { SERVICE_RATELIMIT_DISABLE: '0', SERVICE_RATELIMIT_BURST: '2', SERVICE_RATELIMIT_PER_MIN: '1' });
    });
    afterAll(async () => {
      await t?.stop();
    });

    it('the third request of a burst of two', async () => {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 3; i++) {
        last = await t.api('/v1/limits');
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(await last!.json()).toEqual({ error: 'rate limit exceeded', code: 'rate_limited' });
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });
}
