/**
 * The one API client (client/http/client.ts) that kr, kr mcp and the dashboard share, against a loopback
 * server on port 0:
 *  - each method asks the route it is named for, and reads the answer with the very zod schema that route
 *    documents (functions/'s docs, from which docs/openapi.json is made); every /v1 route a client of ours
 *    calls has its method;
 *  - set up as the dashboard sets it up (fetch, no checks, no time limit) and as kr does (checks, wording):
 *    errors carry the server's status, message, body and `code`; a push's 409 is data; a missing page is null
 *    or a 404; an event stream resumes by `?after=` or by `Last-Event-ID`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ApiClient, ApiError, type WireModule } from '../client/http/client.ts';
import { Api, checkWire } from '../client/api.ts';
import { hostedRoutes, routes } from '../functions/index.ts';
import type { RouteDef } from '../lib/framework/route.ts';

interface Seen {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

/** What the next requests are answered with (by path), else 200 `{}` with an X-Page-SHA. */
let answers = new Map<string, { status: number; body: string; headers?: Record<string, string> }>();
const seen: Seen[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', base);
      seen.push({ method: req.method ?? '', url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const a = answers.get(url.pathname) ?? { status: 200, body: '{}', headers: { 'X-Page-SHA': 'a'.repeat(40) } };
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...a.headers });
      res.end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

/** The route a request is served by: the first of the app's list whose method and path pattern match. */
function routeOf(method: string, path: string): RouteDef | undefined {
  return [...routes, ...hostedRoutes].find((r) => {
    if (r.method !== method) return false;
    const pattern = r.path.replace(/:[A-Za-z]+\{\.\+\}/g, '.+').replace(/:[A-Za-z]+/g, '[^/]+');
    return new RegExp(`^${pattern}$`).test(path);
  });
}

/** Every method of the shared client, called once. */
const CALLS: Array<[string, (c: ApiClient, signal: AbortSignal) => Promise<unknown>]> = [
  ['limits', (c) => c.limits()],
  ['signIn', (c) => c.signIn('id-token')],
  ['me', (c) => c.me()],
  ['createPat', (c) => c.createPat({ label: 'x' })],
  ['listPats', (c) => c.listPats()],
  ['revokePat', (c) => c.revokePat('p1')],
  ['repos', (c) => c.repos()],
  ['createRepo', (c) => c.createRepo('r')],
  ['deleteRepo', (c) => c.deleteRepo('r')],
  ['exportRepo', (c) => c.exportRepo('r')],
  ['importRepo', (c) => c.importRepo('r', new Blob([new Uint8Array([1, 2, 3])]))],
  ['pages', (c) => c.pages('r')],
  ['readPage', (c) => c.readPage('r', 'a b/c.md')],
  ['push', (c) => c.push('r', { message: 'm', files: [{ path: 'a.md', content: 'x' }] })],
  ['pull', (c) => c.pull('r', 'abc')],
  ['timeline', (c) => c.timeline('r', 5)],
  ['history', (c) => c.history('r', 'a.md', 5)],
  ['diff', (c) => c.diff('r', 'a.md', { blame: true })],
  ['evolution', (c) => c.evolution('r', 'a.md', { limit: 3 })],
  ['activity', (c) => c.activity('r', { limit: 2, offset: 0, actions: ['push', 'import'] })],
  ['links', (c) => c.links('r', 'a.md')],
  ['search', (c) => c.search({ q: 'x', repo: 'r' })],
  ['search (all)', (c) => c.search({ q: 'x', limit: 50 })],
  ['openEvents', (c, signal) => c.openEvents('r', '7', signal).then((res) => res.body?.cancel())],
  ['members', (c) => c.members('r')],
  ['removeMember', (c) => c.removeMember('r', 'u1')],
  ['setRole', (c) => c.setRole('r', 'u1', 'owner')],
  ['createInvite', (c) => c.createInvite('r', 'l')],
  ['listInvites', (c) => c.listInvites('r')],
  ['revokeInvite', (c) => c.revokeInvite('r', 'k1')],
  ['join', (c) => c.join('key')],
  ['createWebhook', (c) => c.createWebhook('r', { url: 'https://example.com/h' })],
  ['webhooks', (c) => c.webhooks('r')],
  ['removeWebhook', (c) => c.removeWebhook('r', 'w1')],
  ['testWebhook', (c) => c.testWebhook('r', 'w1')],
  ['deliveries', (c) => c.deliveries('r', 'w1', 20)],
  ['billing', (c) => c.billing()],
  ['checkout', (c) => c.checkout()],
  ['adminStats', (c) => c.adminStats()],
  ['adminUsers', (c) => c.adminUsers()],
  ['adminRepos', (c) => c.adminRepos()],
  ['setSubscription', (c) => c.setSubscription('u1', true)],
];

const loadWire = (module: WireModule) => import(`../schema/wire/${module}.ts`) as Promise<Record<string, z.ZodType>>;

describe('the shared API client', () => {
  it('asks each route by its method and path, and checks its answer with the schema that route documents', async () => {
    answers = new Map();
    const covered = new Set<RouteDef>();
    const rows: string[] = [];
    for (const [name, call] of CALLS) {
      const checked: Array<[WireModule, string]> = [];
      const client = new ApiClient({
        baseUrl: base,
        token: 't',
        fetch: (input, init) => fetch(input, init),
        check: async (module, schema) => {
          checked.push([module, schema]);
          return null;
        },
      });
      seen.length = 0;
      await call(client, new AbortController().signal);
      expect(seen, name).toHaveLength(1);
      const req = seen[0]!;
      const route = routeOf(req.method, req.url.pathname);
      expect(route, `${name}: ${req.method} ${req.url.pathname}`).toBeDefined();
      covered.add(route!);
      // The answer the route documents (its first 2xx): the same zod object the client checks against, or
      // no JSON at all when the client reads none.
      const ok = Object.entries(route!.doc?.responses ?? {}).find(([status]) => Number(status) < 300)![1];
      const json = ok.schema !== undefined && (ok.contentType ?? 'application/json') === 'application/json';
      if (checked.length === 0) {
        rows.push(`${name} ${req.method} ${route!.path} -`);
        expect(json, `${name} reads no JSON answer, so its route has none`).toBe(false);
      } else {
        expect(checked, name).toHaveLength(1);
        const [module, schema] = checked[0]!;
        rows.push(`${name} ${req.method} ${route!.path} ${module}.${schema}`);
        expect((await loadWire(module))[schema], `${name}: ${module}.${schema} is the schema of ${route!.path}`).toBe(ok.schema);
      }
      expect(req.headers.authorization, name).toBe('Bearer t');
    }
    // A few rows as they must read, so a wrong route cannot pass as the right one.
    expect(rows).toEqual(
      expect.arrayContaining([
        'readPage GET /v1/repos/:id/pages/:path{.+} -',
        'join POST /v1/repos/join members.JoinResponse',
        'createRepo POST /v1/repos repos.CreateRepoResponse',
        'push POST /v1/repos/:id/sync/push sync.PushResponse',
        'search (all) GET /v1/search search.SearchResponse',
        'search GET /v1/repos/:id/search search.SearchResponse',
        'openEvents GET /v1/repos/:id/events -',
        'setSubscription POST /v1/admin/users/:id/subscription -',
      ]),
    );
    // Every /v1 route has its method, but those no client of ours calls: git's own (git speaks them) and the
    // legacy create (POST /v1/repos/:id, for the original client).
    const missing = [...routes, ...hostedRoutes]
      .filter((r) => r.path.startsWith('/v1/') && !covered.has(r))
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(missing).toEqual([
      'GET /v1/repos/:id/info/refs',
      'POST /v1/repos/:id',
      'POST /v1/repos/:id/git-receive-pack',
      'POST /v1/repos/:id/git-upload-pack',
    ]);
  });

  it('sends what each call says: query, JSON body, encoded page paths', async () => {
    answers = new Map();
    const client = new ApiClient({ baseUrl: `${base}/`, token: null, fetch: (input, init) => fetch(input, init) });
    seen.length = 0;
    await client.readPage('team', 'a b/c#d.md', 'f'.repeat(40));
    await client.activity('team', { limit: 2, offset: 0, actions: ['push', 'import'] });
    await client.push('team', { message: 'm', merge: 'sections', files: [{ path: 'a.md', delete: true, parent_sha: 'b'.repeat(40) }] });
    await client.deleteRepo('team', 'teem');
    await client.diff('team', 'a.md', { from: '', to: 'abc', blame: true });
    expect(seen.map((s) => `${s.method} ${s.url.pathname}${s.url.search}`)).toEqual([
      `GET /v1/repos/team/pages/a%20b/c%23d.md?at=${'f'.repeat(40)}`,
      'GET /v1/repos/team/activity?limit=2&offset=0&actions=push%2Cimport',
      'POST /v1/repos/team/sync/push',
      'DELETE /v1/repos/team?confirm=teem',
      'GET /v1/repos/team/diff/a.md?to=abc&blame=true',
    ]);
    expect(JSON.parse(seen[2]!.body)).toEqual({ message: 'm', merge: 'sections', files: [{ path: 'a.md', delete: true, parent_sha: 'b'.repeat(40) }] });
    expect(seen[2]!.headers['content-type']).toBe('application/json');
    expect(seen.every((s) => s.headers.authorization === undefined)).toBe(true);
  });

  describe('as the dashboard has it (fetch, no checks, no time limit)', () => {
    const client = () => new ApiClient({ baseUrl: base, token: 't', fetch: (input, init) => fetch(input, init) });

    it('an error carries the status, the server message, the body and its code; without a code, one from the status', async () => {
      answers = new Map([
        ['/v1/repos', { status: 402, body: JSON.stringify({ error: 'repository limit reached', code: 'quota_repos', limit: 3, upgrade_url: 'https://pay.example/up' }) }],
        ['/v1/me', { status: 409, body: JSON.stringify({ error: 'last owner' }) }],
        ['/v1/pats', { status: 502, body: '<html>bad gateway</html>' }],
      ]);
      const quota = (await client().createRepo('x').catch((e: unknown) => e)) as ApiError;
      expect(quota).toBeInstanceOf(ApiError);
      expect([quota.status, quota.message, quota.code, quota.upgradeUrl]).toEqual([402, 'repository limit reached', 'quota_repos', 'https://pay.example/up']);
      expect(quota.body).toEqual({ error: 'repository limit reached', code: 'quota_repos', limit: 3, upgrade_url: 'https://pay.example/up' });
      const conflict = (await client().me().catch((e: unknown) => e)) as ApiError;
      expect([conflict.status, conflict.message, conflict.code, conflict.upgradeUrl]).toEqual([409, 'last owner', 'conflict', undefined]);
      const proxy = (await client().listPats().catch((e: unknown) => e)) as ApiError;
      expect([proxy.status, proxy.message, proxy.body, proxy.code]).toEqual([502, '502 Bad Gateway', null, 'server_error']);
    });

    it('takes answers as they come (no zod), where kr checks them against the wire schema', async () => {
      answers = new Map([['/v1/me', { status: 200, body: JSON.stringify({ id: 7 }) }]]);
      expect(await client().me()).toEqual({ id: 7 });
      const err = (await new Api({ baseUrl: base, token: 't' }).me().catch((e: unknown) => e)) as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      expect([err.status, err.message]).toEqual([0, 'unexpected answer from GET /v1/me: id: Invalid input: expected string, received number']);
      expect(await checkWire('auth', 'MeResponse', { id: 7 })).toBe('id: Invalid input: expected string, received number');
    });

    it("a push's 409 is data; a missing page is null, or a 404 to readPage", async () => {
      const conflicts = { pushed: [], conflicts: [{ path: 'a.md', current_sha: 'c'.repeat(40) }] };
      answers = new Map([
        ['/v1/repos/r/sync/push', { status: 409, body: JSON.stringify(conflicts) }],
        ['/v1/repos/r/pages/gone.md', { status: 404, body: JSON.stringify({ error: 'page not found', code: 'page_not_found' }) }],
        ['/v1/repos/nope/pages/a.md', { status: 404, body: JSON.stringify({ error: 'repo not found', code: 'repo_not_found' }) }],
      ]);
      expect(await client().push('r', { message: 'm', files: [] })).toEqual({ status: 409, ok: false, data: conflicts });
      expect(await client().page('r', 'gone.md')).toBeNull();
      const missing = (await client().readPage('r', 'gone.md').catch((e: unknown) => e)) as ApiError;
      expect([missing.status, missing.message, missing.refusal]).toEqual([404, 'page not found', 'page_not_found']);
      const noRepo = (await client().page('nope', 'a.md').catch((e: unknown) => e)) as ApiError;
      expect([noRepo.status, noRepo.message]).toEqual([404, 'repo not found']);
      answers = new Map();
      expect(await client().readPage('r', 'a.md')).toEqual({ content: '{}', sha: 'a'.repeat(40) });
    });

    it('an event stream resumes by ?after= (what a browser may send), kr by Last-Event-ID', async () => {
      answers = new Map();
      seen.length = 0;
      const signal = new AbortController().signal;
      await (await client().openEvents('r', '41', signal)).body?.cancel();
      await (await client().openEvents('r', undefined, signal)).body?.cancel();
      await (await new Api({ baseUrl: base, token: 't', fetch: (i, init) => fetch(i, init) }).openEvents('r', '42', signal)).body?.cancel();
      expect(seen.map((s) => [s.url.pathname + s.url.search, s.headers['last-event-id'], s.headers.accept])).toEqual([
        ['/v1/repos/r/events?after=41', undefined, 'text/event-stream'],
        ['/v1/repos/r/events', undefined, 'text/event-stream'],
        ['/v1/repos/r/events', '42', 'text/event-stream'],
      ]);
      expect(seen[2]!.headers['x-service-client']).toBe('kr-cli');
      expect(seen[0]!.headers['x-service-client']).toBeUndefined();
    });

    it('no answer: the client says so its own way (the dashboard explains why); a request its caller stopped fails as stopped', async () => {
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const dead = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
      await new Promise<void>((r) => closed.close(() => r()));
      const plain = (await new ApiClient({ baseUrl: dead, token: 't', fetch: (i, init) => fetch(i, init) }).me().catch((e: unknown) => e)) as ApiError;
      expect([plain.status, plain.message, plain.code]).toEqual([0, `cannot reach the server at ${dead}: ECONNREFUSED`, 'unreachable']);

      class Explaining extends ApiClient {
        protected override async failure(e: unknown, signal?: AbortSignal): Promise<ApiError> {
          if (signal?.aborted) throw e;
          return new ApiError('the server is down', 0);
        }
      }
      const explained = (await new Explaining({ baseUrl: dead, token: 't', fetch: (i, init) => fetch(i, init) }).me().catch((e: unknown) => e)) as ApiError;
      expect([explained.status, explained.message]).toEqual([0, 'the server is down']);
      const stop = new AbortController();
      stop.abort();
      const stopped = await new Explaining({ baseUrl: dead, token: 't', fetch: (i, init) => fetch(i, init) }).openEvents('r', null, stop.signal).catch((e: unknown) => e);
      expect(stopped).not.toBeInstanceOf(ApiError);
      expect((stopped as Error).name).toBe('AbortError');
    });
  });
});
