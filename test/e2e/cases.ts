/**
 * The end-to-end suite, once, for both builds: every case talks to a running server over HTTP only (plus
 * the `git` command on what it exports), so test/e2e/node.test.ts and test/e2e/workers.test.ts run the
 * very same cases against `npm start`'s server and the hosted build under workerd. Users sign in with real
 * ID tokens from a loopback identity provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from '../helpers/targets.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SHA = /^[0-9a-f]{40}$/;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

type Init = RequestInit & { token?: string | null; json?: unknown };

export function e2eCases(kind: TargetKind): void {
  describe(`${kind}: end to end`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let scratch: { path: string; cleanup: () => Promise<void> };

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: unknown = text;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: r.status, body: body as any, headers: r.headers };
    };
    const push = (repo: string, files: unknown[], init: Init = {}) =>
      call(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files, message: 'e2e' }, ...init });
    const signIn = async (sub: string, email: string) => {
      const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
      const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as { access_token: string; user: { id: string; email: string; name: string } };
    };

    beforeAll(async () => {
      idp = await startIdp();
      scratch = await tempDir('kr-e2e-');
      t = await startTarget(kind, {
        IDP_OAUTH_CLIENT_ID: idp.clientId,
        IDP_JWKS_URL: idp.jwksUrl,
        IDP_ISSUERS: idp.issuer,
      });
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
      await scratch?.cleanup();
    });

    it('health, unknown routes, wrong methods, missing and bad credentials, security headers', async () => {
      const health = await call('/health', { token: null });
      expect([health.status, health.body]).toEqual([200, { status: 'ok' }]);
      expect(health.headers.get('x-request-id')).toMatch(UUID_V4);
      expect(health.headers.get('x-content-type-options')).toBe('nosniff');
      expect((await call('/v1/nope')).body).toEqual({ error: 'not found', code: 'not_found' });
      const wrong = await call('/v1/me', { method: 'DELETE' });
      expect([wrong.status, wrong.body]).toEqual([405, { error: 'method not allowed', code: 'method_not_allowed' }]);
      expect(await call('/v1/repos', { token: null }).then((r) => [r.status, r.body])).toEqual([401, { error: 'missing authorization header', code: 'missing_authorization' }]);
      expect(await call('/v1/repos', { headers: { authorization: 'Basic x' }, token: null }).then((r) => [r.status, r.body])).toEqual([
        401,
        { error: 'invalid authorization format, expected Bearer <token>', code: 'invalid_authorization_format' },
      ]);
      const bad = await call('/v1/repos', { token: 'nope' });
      expect([bad.status, bad.body]).toEqual([401, { error: 'invalid token', code: 'invalid_token' }]);
      expect(bad.headers.get('cache-control')).toBe('no-store');
      expect((await call('/v1/me')).body).toEqual({ error: 'session required', code: 'session_required' });
      expect((await call('/v1/limits')).body).toEqual({ max_body_bytes: 8388608, max_files_per_push: 10000, max_page_path_bytes: 512 });
    });

    it('a browser origin outside SERVICE_CORS_ORIGINS: served without Access-Control-Allow-Origin, logged once', async () => {
      const refusedLines = (origin: string) =>
        t.logs.filter((l) => l.includes('"cors_origin_refused"')).map((l) => JSON.parse(l.slice(l.indexOf('{')))).filter((l) => l.origin === origin);
      const stranger = 'http://localhost:5174';
      const preflight = await fetch(`${t.url}/v1/me`, {
        method: 'OPTIONS',
        headers: { origin: stranger, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
      expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, null]);
      for (let i = 0; i < 2; i++) {
        const r = await call('/health', { token: null, headers: { origin: stranger } });
        expect([r.status, r.body, r.headers.get('access-control-allow-origin')]).toEqual([200, { status: 'ok' }, null]);
      }
      const allowed = await call('/health', { token: null, headers: { origin: 'http://localhost:5173' } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
      // A second refused origin, last: its line comes after every earlier one on the same stream.
      const marker = 'https://marker.example';
      await call('/health', { token: null, headers: { origin: marker } });
      for (let i = 0; i < 500 && refusedLines(marker).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(refusedLines(marker)).toHaveLength(1);
      expect(refusedLines(stranger)).toMatchObject([{ level: 'warn', event: 'cors_origin_refused', origin: stranger }]);
      expect(refusedLines('http://localhost:5173')).toEqual([]);
    });

    it('push, pull, pages, history, timeline, conflicts and deletions under the legacy key', async () => {
      const first = await push('kb', [
        { path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nfirst\n' },
        { path: 'wiki/entities/b.md', content: 'b\n' },
      ]);
      expect(first.status).toBe(200);
      const s1 = first.body.new_head as string;
      expect(s1).toMatch(SHA);
      expect(first.body).toEqual({
        new_head: s1,
        pushed: [
          { path: 'wiki/concepts/a.md', sha: s1 },
          { path: 'wiki/entities/b.md', sha: s1 },
        ],
        conflicts: [],
      });

      const second = await push('kb', [{ path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nsecond\n', parent_sha: s1 }]);
      const s2 = second.body.new_head as string;
      expect(second.status).toBe(200);

      // The same parent again: the page moved since, so a conflict with the server's copy and the ancestor.
      const stale = await push('kb', [{ path: 'wiki/concepts/a.md', content: 'mine\n', parent_sha: s1.slice(0, 8) }]);
      expect([stale.status, stale.body]).toEqual([
        409,
        {
          new_head: s2,
          pushed: [],
          conflicts: [
            {
              path: 'wiki/concepts/a.md',
              current_sha: s2,
              current_content: b64('---\ntitle: A\n---\n## One\nsecond\n'),
              expected_parent_sha: s1.slice(0, 8),
              ancestor_content: b64('---\ntitle: A\n---\n## One\nfirst\n'),
            },
          ],
        },
      ]);

      const page = await t.api('/v1/repos/kb/pages/wiki/concepts/a.md');
      expect(page.status).toBe(200);
      expect(page.headers.get('x-page-sha')).toBe(s2);
      expect(page.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(await page.text()).toBe('---\ntitle: A\n---\n## One\nsecond\n');
      expect((await call('/v1/repos/kb/pages/wiki/nope.md')).body).toEqual({ error: 'page not found', code: 'page_not_found' });

      const pages = await call('/v1/repos/kb/pages');
      expect(pages.body.pages.map((p: { path: string; sha: string }) => [p.path, p.sha])).toEqual([
        ['wiki/concepts/a.md', s2],
        ['wiki/entities/b.md', s1],
      ]);
      const history = await call('/v1/repos/kb/history/wiki/concepts/a.md');
      expect(history.body.commits.map((c: { sha: string }) => c.sha)).toEqual([s2, s1]);
      expect(history.body.commits[0]).toEqual({ sha: s2, author: 'unknown', email: 'unknown@service.local', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/), message: 'e2e' });

      const del = await push('kb', [{ path: 'wiki/entities/b.md', delete: true }]);
      const s3 = del.body.new_head as string;
      const timeline = await call('/v1/repos/kb/timeline');
      expect(timeline.body.commits.map((c: { sha: string; paths: string[] }) => [c.sha, c.paths])).toEqual([
        [s3, ['wiki/entities/b.md']],
        [s2, ['wiki/concepts/a.md']],
        [s1, ['wiki/concepts/a.md', 'wiki/entities/b.md']],
      ]);

      const full = await call('/v1/repos/kb/sync/pull');
      expect(full.body).toEqual({
        new_head: s3,
        files: [{ path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nsecond\n', sha: s2 }],
        deleted: [],
      });
      expect((await call(`/v1/repos/kb/sync/pull?since=${s1}`)).body).toEqual({
        new_head: s3,
        files: [{ path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n## One\nsecond\n', sha: s2 }],
        deleted: ['wiki/entities/b.md'],
      });
      expect((await call(`/v1/repos/kb/sync/pull?since=${s3}`)).body).toEqual({ new_head: s3, files: [], deleted: [] });
      expect((await call('/v1/repos/kb/sync/pull?since=zzz')).body).toEqual({ error: 'unknown sha: zzz', code: 'unknown_sha' });
      expect((await call('/v1/repos/empty/sync/pull')).status).toBe(404);
    });

    it('diff with blame and evolution', async () => {
      await push('dk', [{ path: 'p.md', content: '---\ntags: [a]\n---\n## Decision\nuse git\n## Notes\nn\n' }]);
      const second = await push('dk', [{ path: 'p.md', content: '---\ntags: [a, b]\n---\n## Decision\nuse git and sql\n## Notes\nn\n' }]);
      const diff = await call('/v1/repos/dk/diff/p.md?blame=true');
      expect(diff.status).toBe(200);
      expect(diff.body.to_sha).toBe(second.body.new_head);
      expect(diff.body.frontmatter).toEqual({ changed: [], added: [{ field: 'tags', to: 'b' }], removed: [] });
      expect(diff.body.sections.map((s: { heading: string; status: string }) => [s.heading, s.status])).toEqual([
        ['## Decision', 'modified'],
        ['## Notes', 'unchanged'],
      ]);
      expect(diff.body.sections[0].line_diff).toBe('- use git\n+ use git and sql');
      expect(diff.body.sections[0].introduced_by.sha).toBe(diff.body.from_sha);
      const evo = await call('/v1/repos/dk/evolution/p.md');
      expect(evo.body.entries.map((e: { diff: { from_sha: string } }) => e.diff.from_sha)).toEqual([diff.body.from_sha, '']);
      expect((await call('/v1/repos/dk/diff/p.md?from=HEAD')).body).toEqual({ error: 'unknown sha: HEAD', code: 'unknown_sha' });
      expect((await call('/v1/repos/dk/diff/none.md')).body).toEqual({ error: 'path not present in repo', code: 'path_not_in_repo' });
    });

    it('a push of 300 pages, then 300 updates: every statement within the backends\' parameter limits', async () => {
      const files = Array.from({ length: 300 }, (_, i) => ({ path: `bulk/p${i}.md`, content: `one ${i}\n` }));
      const first = await push('bulk', files);
      expect([first.status, first.body.pushed?.length]).toEqual([200, 300]);
      const second = await push('bulk', files.map((f) => ({ ...f, content: 'two\n', parent_sha: first.body.new_head })));
      expect([second.status, second.body.pushed?.length, second.body.conflicts]).toEqual([200, 300, []]);
      const pages = await call('/v1/repos/bulk/pages');
      expect(pages.body.pages).toHaveLength(300);
      expect(new Set(pages.body.pages.map((p: { sha: string }) => p.sha))).toEqual(new Set([second.body.new_head]));
    });

    it('refuses hostile page paths and case variants, writing nothing', async () => {
      await push('paths', [{ path: 'Notes/Plan.md', content: 'x\n' }]);
      for (const path of ['../x.md', '.git/config', 'a/CON.md', 'x:y.md', 'cafe\u0301.md', 'a\u0085b.md']) {
        const r = await push('paths', [{ path, content: 'evil' }]);
        expect([r.status, r.body], path).toEqual([400, { error: `invalid page path: ${path}`, code: 'invalid_page_path' }]);
      }
      const r = await push('paths', [{ path: 'notes/plan.md', content: 'y\n' }]);
      expect([r.status, r.body]).toEqual([400, { error: 'path "notes/plan.md" differs only in letter case from "Notes/Plan.md"', code: 'path_case' }]);
      expect((await call('/v1/repos/paths/pages')).body.pages.map((p: { path: string }) => p.path)).toEqual(['Notes/Plan.md']);
      expect((await push('PATHS', [{ path: 'a.md', content: 'z' }])).body).toEqual({ error: 'repo already exists', code: 'repo_exists' });
      expect((await call('/v1/repos/PATHS/pages')).body).toEqual({ error: 'repo not found', code: 'repo_not_found' });
    });

    it('a team: sign-in, PATs, repositories, invites, join, members, removal, activity', async () => {
      const alice = await signIn('alice', 'alice@example.test');
      const bob = await signIn('bob', 'bob@example.test');
      expect(alice.user.id).toMatch(UUID_V4);
      // Both targets run without SERVICE_HOSTED (the hosted build's /v1/me: test/helpers/hosted-cases.ts).
      expect((await call('/v1/me', { token: alice.access_token })).body).toEqual({ ...alice.user, server: { hosted: false } });

      const pat = await call('/v1/pats', { method: 'POST', token: alice.access_token, json: { label: 'laptop', expires_in_days: 30 } });
      expect(pat.status).toBe(201);
      expect(pat.body.token).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
      const aliceKey = pat.body.token as string;
      // The token a listing is made with is marked current; a session marks none.
      expect((await call('/v1/pats', { token: aliceKey })).body.pats.map((p: { label: string; current?: true }) => [p.label, p.current])).toEqual([['laptop', true]]);
      expect((await call('/v1/pats', { token: alice.access_token })).body.pats.map((p: { label: string; current?: true }) => [p.label, p.current])).toEqual([['laptop', undefined]]);

      expect((await call('/v1/repos', { method: 'POST', token: aliceKey, json: { id: 'team' } })).body).toEqual({ id: 'team', role: 'owner' });
      expect((await call('/v1/repos', { method: 'POST', token: bob.access_token, json: { id: 'team' } })).body).toEqual({ error: 'repo already exists', code: 'repo_exists' });
      expect((await call('/v1/repos/team/pages', { token: bob.access_token })).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });

      const invite = await call('/v1/repos/team/invite-keys', { method: 'POST', token: aliceKey, json: { label: 'bob' } });
      expect(invite.status).toBe(201);
      expect(invite.body.token).toMatch(/^kri_[A-Za-z0-9_-]{32}$/);
      const join = await call('/v1/repos/join', { method: 'POST', token: bob.access_token, json: { key: invite.body.token } });
      expect(join.body).toEqual({ repo_id: 'team', role: 'member' });

      const pushed = await push('team', [{ path: 'wiki/concepts/x.md', content: 'x\n' }], { token: bob.access_token });
      expect(pushed.status).toBe(200);
      const log = await call(`/v1/repos/team/history/wiki/concepts/x.md`, { token: aliceKey });
      expect(log.body.commits[0]).toMatchObject({ author: 'bob', email: 'bob@example.test' });
      await call('/v1/repos/team/sync/pull', { token: aliceKey, headers: { 'x-service-client': 'e2e' } });

      const members = await call('/v1/repos/team/members', { token: bob.access_token });
      expect(members.body.members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
        ['alice@example.test', 'owner'],
        ['bob@example.test', 'member'],
      ]);
      const activity = await call('/v1/repos/team/activity', { token: aliceKey });
      expect(activity.body.events.map((e: { email: string; action: string; detail?: unknown }) => [e.email, e.action, e.detail])).toEqual([
        ['alice@example.test', 'pull', { client: 'e2e' }],
        ['bob@example.test', 'push', { paths: ['wiki/concepts/x.md'], message: 'e2e' }],
      ]);
      expect(activity.body.total).toBe(2);

      const remove = await call(`/v1/repos/team/members/${bob.user.id}`, { method: 'DELETE', token: aliceKey });
      expect(remove.status).toBe(204);
      expect((await call('/v1/repos/team/pages', { token: bob.access_token })).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      expect((await call('/v1/repos/join', { method: 'POST', token: bob.access_token, json: { key: invite.body.token } })).body).toEqual({
        error: 'removed from this repo; ask an owner for a new invite key',
        code: 'removed_from_repo',
      });
      expect((await call(`/v1/repos/team/members/${alice.user.id}`, { method: 'DELETE', token: aliceKey })).body).toEqual({
        error: "can't remove the last owner",
        code: 'last_owner',
      });
      // The membership changes, by who made them (Alice through her PAT), only when asked for; the refusals left none.
      const changes = await call('/v1/repos/team/activity?actions=member', { token: aliceKey });
      expect([changes.body.total, changes.body.events.map((e: { email: string; action: string; detail?: unknown }) => [e.email, e.action, e.detail])]).toEqual([
        2,
        [
          ['alice@example.test', 'member', { user_id: bob.user.id, email: 'bob@example.test', change: 'removed' }],
          ['bob@example.test', 'member', { user_id: bob.user.id, email: 'bob@example.test', change: 'joined', role: 'member' }],
        ],
      ]);
      expect((await call('/v1/repos/team/activity', { token: aliceKey })).body.total).toBe(2);
      // Alice was the first user ever: she adopted the repositories the legacy key made before her.
      const repos = await call('/v1/repos', { token: aliceKey });
      expect(repos.body.repos.map((r: { id: string; role: string; page_count: number }) => [r.id, r.role, r.page_count])).toEqual([
        ['bulk', 'owner', 300],
        ['dk', 'owner', 1],
        ['kb', 'owner', 1],
        ['paths', 'owner', 1],
        ['team', 'owner', 1],
      ]);
      expect((await call('/v1/repos', { token: bob.access_token })).body).toEqual({ repos: [] });
    });

    it('exports a git bundle that git verifies and clones with the whole history', async () => {
      const r = await t.api('/v1/repos/kb/export');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/x-git-bundle');
      const file = join(scratch.path, 'kb.bundle');
      writeFileSync(file, new Uint8Array(await r.arrayBuffer()));
      execFileSync('git', ['init', '-q', join(scratch.path, 'v')]);
      execFileSync('git', ['bundle', 'verify', '-q', file], { cwd: join(scratch.path, 'v'), stdio: 'pipe' });
      execFileSync('git', ['clone', '-q', file, join(scratch.path, 'kb')], { stdio: 'pipe' });
      const clone = join(scratch.path, 'kb');
      execFileSync('git', ['fsck', '--strict', '--no-dangling'], { cwd: clone, stdio: 'pipe' });
      expect(execFileSync('git', ['rev-list', '--count', 'HEAD'], { cwd: clone, encoding: 'utf8' }).trim()).toBe('3');
      expect(readFileSync(join(clone, 'wiki/concepts/a.md'), 'utf8')).toBe('---\ntitle: A\n---\n## One\nsecond\n');
      const pages = await call('/v1/repos/kb/pages');
      expect(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: clone, encoding: 'utf8' }).trim()).toBe(
        (await call('/v1/repos/kb/timeline?limit=1')).body.commits[0].sha,
      );
      expect(pages.body.pages).toHaveLength(1);
    });

    it('the legacy key is what its token says, and no more', async () => {
      expect(LEGACY_KEY.length).toBeGreaterThan(0);
      expect((await call('/v1/pats', { method: 'POST', json: {} })).body).toEqual({ error: 'user session required', code: 'user_session_required' });
      expect((await call('/v1/repos', { method: 'POST', json: { id: 'x' } })).body).toEqual({ error: 'user session required', code: 'user_session_required' });
    });
  });

  describe(`${kind}: rate limits`, () => {
    let t: Target;
    beforeAll(async () => {
      // No trusted proxy (on Node, loopback is trusted by default): X-Forwarded-For must change nothing.
      t = await startTarget(kind, {
        SERVICE_RATELIMIT_DISABLE: '',
        SERVICE_RATELIMIT_BURST: '5',
        SERVICE_RATELIMIT_PER_MIN: '1',
        SERVICE_TRUSTED_PROXIES: '192.0.2.1',
      });
    });
    afterAll(async () => t?.stop());

    it('the burst, then 429 with Retry-After, whatever X-Forwarded-For says; /health is exempt', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await t.api('/v1/repos', { headers: { 'x-forwarded-for': `203.0.113.${i}` } })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      for (const xff of ['198.51.100.7', '203.0.113.99']) {
        const r = await t.api('/v1/repos', { headers: { 'x-forwarded-for': xff } });
        expect([r.status, await r.json()]).toEqual([429, { error: 'rate limit exceeded', code: 'rate_limited' }]);
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      // Without credentials too: limiting comes before authentication.
      expect((await t.api('/v1/repos', { token: null })).status).toBe(429);
      expect((await t.api('/health', { token: null })).status).toBe(200);
    });
  });
}
