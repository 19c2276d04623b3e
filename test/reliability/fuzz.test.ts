import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from '@libsql/client';
import { SignJWT, base64url } from 'jose';
import { newIdpKey, startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { stripRepoId } from '../../lib/core/page/path.ts';
import { LEGACY_KEY, SESSION_SECRET, call, logProblems, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { HttpClient, rawExchange } from './helpers/http-client.ts';
import { FUZZ_ROUTES, generate, type FuzzContext, type FuzzRequest } from './helpers/fuzz-gen.ts';
import { describeExpectation, expectationOf, kindOf, meets, type Expectation } from './helpers/fuzz-oracle.ts';
import { rng, seedFor } from './helpers/prng.ts';
import { findSecrets, snapshotTree, treeDiff } from './helpers/files.ts';
import { fsckStrict, git, pool, repoDirs, revList } from './helpers/git.ts';
import { algNoneSession, expiredSession, otherSecretSession } from './helpers/tokens.ts';

/**
 * Hostile-input fuzzing of a real server process: N seeded requests (default 10,400) across every route,
 * CONCURRENCY in flight over keep-alive connections, plus raw-socket requests. Afterwards:
 *  - every answer is one docs/api.md allows for that request, worked out before sending it (helpers/fuzz-oracle.ts):
 *    the exact status and error body where it is knowable (a C1 control character in a page path → 400
 *    `invalid page path: …`), one of a few documented answers where concurrent requests decide, and
 *    only where the outcome legitimately varies "no 5xx"; the share of each is printed;
 *  - no 5xx, no timeout, the process is alive and serves, its log holds no unhandled error;
 *  - nothing outside the data root changed (the sandbox around it is snapshotted), and the data root
 *    holds only service.db*, repos/<valid id>.git and search/<valid id>.db*;
 *  - a ledger explains every change: each new commit, repository, user, PAT, invite key, membership row
 *    and activity event is attributed to an ACCEPTED answer (2xx, or a 409 push that committed other
 *    files), each removal to a 204; so nothing was written by any rejected request;
 *  - every repository passes `git fsck --strict` and the derived index matches git;
 *  - no token the fuzz used appears in the database or the log.
 */

const N = Number(process.env.RELIABILITY_FUZZ_REQUESTS ?? 10_400);
const CONCURRENCY = 12;
const SEED = seedFor('fuzz', 0xf022);
const MAX_BODY = 1024 * 1024;
/** docs/limits.md: routes whose body is small JSON cap it at 64 KiB. */
const SMALL_BODY = 64 * 1024;

let idp: IdpStandIn;
let sandbox: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;
let ctx: FuzzContext;
const dataRoot = () => join(sandbox.path, 'data');

interface Sent {
  i: number;
  req: FuzzRequest;
  expected: Expectation;
  status: number;
  statuses?: number[];
  requestId?: string;
  json?: any;
  error?: string;
  timedOut?: boolean;
}

async function ok<T = any>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return (text ? JSON.parse(text) : null) as T;
}

async function signInAs(sub: string, email: string) {
  const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
  const body = await ok(await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } }), 200);
  return { token: body.access_token as string, id: body.user.id as string };
}

/** Everything the ledger compares, read with SQL and git while the server is idle. */
async function snapshot() {
  const db = createClient({ url: pathToFileURL(join(dataRoot(), 'service.db')).href });
  const rows = async (sql: string) => (await db.execute(sql)).rows.map((r) => ({ ...r }) as Record<string, unknown>);
  try {
    const byKey = (list: Array<Record<string, unknown>>, key: (r: Record<string, unknown>) => string) => new Map(list.map((r) => [key(r), JSON.stringify(r)]));
    const snap = {
      users: byKey(await rows('SELECT * FROM users'), (r) => String(r.id)),
      pats: byKey(await rows('SELECT id, user_id, token_hash, label, created_at, expires_at FROM pats'), (r) => String(r.id)),
      invites: byKey(await rows('SELECT * FROM invite_keys'), (r) => String(r.id)),
      members: byKey(await rows('SELECT repo_id, user_id, role, added_at FROM members'), (r) => `${r.repo_id} ${r.user_id}`),
      activity: byKey(await rows('SELECT * FROM activity'), (r) => String(r.id)),
      migrations: JSON.stringify(await rows('SELECT * FROM schema_migrations ORDER BY version')),
      commits: new Map<string, string[]>(),
      index: new Map<string, { commits: string[]; head: string[] }>(),
    };
    for (const d of await repoDirs(dataRoot())) {
      const id = d.slice(0, -4);
      snap.commits.set(id, await revList(join(dataRoot(), 'repos', d)));
      snap.index.set(id, {
        commits: (await db.execute({ sql: 'SELECT sha FROM git_commits WHERE repo_id = ? ORDER BY seq DESC', args: [id] })).rows.map((r) => String(r.sha)),
        head: (await db.execute({ sql: 'SELECT path, blob FROM git_head WHERE repo_id = ? ORDER BY path', args: [id] })).rows.map((r) => `${r.blob} ${r.path}`),
      });
    }
    return snap;
  } finally {
    db.close();
  }
}

const outsideDataRoot = (rel: string) => rel === 'data' || rel.startsWith('data/');

beforeAll(async () => {
  idp = await startIdp();
  sandbox = await tempDir('kr-fuzz-');
  // The sandbox: the server's working directory and a neighbour of the data root, each with a canary.
  await mkdir(join(sandbox.path, 'cwd'));
  await mkdir(join(sandbox.path, 'outside', 'etc'), { recursive: true });
  await writeFile(join(sandbox.path, 'cwd', 'canary.md'), 'canary\n');
  await writeFile(join(sandbox.path, 'outside', 'etc', 'passwd'), 'root:x:0:0\n');
  await writeFile(join(sandbox.path, 'service.db'), 'not the database\n');
  server = await spawnServer({
    dataRoot: dataRoot(),
    cwd: join(sandbox.path, 'cwd'),
    env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer, SERVICE_MAX_BODY_BYTES: String(MAX_BODY) },
  });

  const alice = await signInAs('alice', 'alice@example.test');
  const bob = await signInAs('bob', 'bob@example.test');
  const carol = await signInAs('carol', 'carol@example.test');
  const dave = await signInAs('dave', 'dave@example.test');
  const mint = async (token: string) => ok(await call(server.url, '/v1/pats', { method: 'POST', token, json: { label: 'fuzz' } }), 201);
  const alicePat = await mint(alice.token);
  const disposablePat = await mint(alice.token);
  const revokedPat = await mint(alice.token);
  const bobPat = await mint(bob.token);
  await ok(await call(server.url, `/v1/pats/${revokedPat.pat.id}`, { method: 'DELETE', token: alice.token }), 204);

  await ok(await call(server.url, '/v1/repos', { method: 'POST', token: alice.token, json: { id: 'fz' } }), 201);
  const live = await ok(await call(server.url, '/v1/repos/fz/invite-keys', { method: 'POST', token: alice.token, json: { label: 'live' } }), 201);
  const disposable = await ok(await call(server.url, '/v1/repos/fz/invite-keys', { method: 'POST', token: alice.token, json: {} }), 201);
  const revoked = await ok(await call(server.url, '/v1/repos/fz/invite-keys', { method: 'POST', token: alice.token, json: {} }), 201);
  await ok(await call(server.url, `/v1/repos/fz/invite-keys/${revoked.key.id}`, { method: 'DELETE', token: alice.token }), 204);
  for (const u of [bob, dave]) await ok(await call(server.url, '/v1/repos/join', { method: 'POST', token: u.token, json: { key: live.token } }), 200);
  const pages = ['wiki/concepts/a.md', 'wiki/entities/b.md', 'notes/c.md'];
  for (let n = 0; n < 4; n++) {
    await ok(
      await call(server.url, '/v1/repos/fz/sync/push', {
        method: 'POST',
        token: n % 2 ? bob.token : alice.token,
        json: { files: pages.slice(0, 1 + (n % 3)).map((path) => ({ path, content: `---\ntags: [t${n}]\n---\nintro ${n}\n## Section ${n % 2}\nbody ${n}\n## Stable\nsame\n` })) },
      }),
      200,
    );
  }
  await ok(await call(server.url, '/v1/repos/lg', { method: 'POST' }), 201);
  for (let n = 0; n < 2; n++) {
    await ok(await call(server.url, '/v1/repos/lg/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: `legacy ${n}\n` }, { path: 'deep/x.md', content: 'x\n' }] } }), 200);
  }
  const shas: string[] = [];
  const shasOf: Record<string, string[]> = {};
  for (const repo of ['fz', 'lg']) {
    const tl = await ok(await call(server.url, `/v1/repos/${repo}/timeline`), 200);
    shasOf[repo] = tl.commits.map((c: { sha: string }) => c.sha);
    shas.push(...shasOf[repo]!);
  }

  const now = Math.floor(Date.now() / 1000);
  const stranger = await newIdpKey('not-published');
  const enc = (o: unknown) => base64url.encode(new TextEncoder().encode(JSON.stringify(o)));
  const badIdTokens = [
    await idp.signIdToken({ sub: 'x', email: 'x@example.test', exp: now - 60, iat: now - 3600 }),
    await idp.signIdToken({ sub: 'x', email: 'x@example.test', aud: 'other-client' }),
    await idp.signIdToken({ sub: 'x', email: 'x@example.test', iss: 'https://evil.example' }),
    await idp.signIdToken({ sub: 'x', email: 'x@example.test', email_verified: false }),
    await idp.signIdToken({ sub: 'x', email: undefined }),
    await idp.signIdToken({ sub: '', email: 'x@example.test' }),
    await idp.signIdToken({ sub: 'x', email: 'x@example.test' }, { kid: 'unknown-kid' }),
    await idp.signIdToken({ sub: 'alice', email: 'alice@example.test' }, { privateKey: stranger.privateKey }),
    // Algorithm confusion: HS256 keyed with the provider's public key material.
    await new SignJWT(idp.claims({ sub: 'alice', email: 'alice@example.test' }))
      .setProtectedHeader({ alg: 'HS256', kid: idp.current.kid })
      .sign(new TextEncoder().encode(JSON.stringify(idp.current.jwk))),
    `${enc({ alg: 'none', kid: idp.current.kid })}.${enc(idp.claims({ sub: 'alice', email: 'alice@example.test' }))}.`,
  ];
  const idTokens = [
    await idp.signIdToken({ sub: 'fuzz-new-1', email: 'new1@example.test', name: 'new1' }),
    await idp.signIdToken({ sub: 'fuzz-new-2', email: 'new2@example.test', name: 'new2' }),
    await idp.signIdToken({ sub: 'alice', email: 'alice@example.test', name: 'alice' }),
    // No `kid`, but signed by the provider's one published key: genuine, so accepted (jose picks that key).
    await idp.signIdToken({ sub: 'fuzz-new-3', email: 'new3@example.test', name: 'new3' }, { kid: null }),
  ];

  ctx = {
    legacyKey: LEGACY_KEY,
    repos: ['fz', 'lg'],
    newRepos: ['fz-new-0', 'fz-new-1', 'fz-new-2', 'fz-new-3'],
    pages: [...pages, 'a.md', 'deep/x.md'],
    shas,
    shasOf,
    users: { alice: alice.id, bob: bob.id, carol: carol.id, dave: dave.id },
    tokens: {
      garbage: 'garbage-token-0123456789',
      legacy: LEGACY_KEY,
      alice: alice.token,
      alicePat: alicePat.token,
      bob: bob.token,
      carol: carol.token,
      revokedPat: revokedPat.token,
      expired: await expiredSession(new TextEncoder().encode(SESSION_SECRET), alice.id, 'alice@example.test'),
      otherSecret: await otherSecretSession(alice.id, 'alice@example.test'),
      algNone: algNoneSession(alice.id, 'alice@example.test'),
    },
    patIds: [disposablePat.pat.id, revokedPat.pat.id, bobPat.pat.id],
    deletablePats: { [disposablePat.pat.id]: alice.id, [bobPat.pat.id]: bob.id },
    inviteKeyIds: [disposable.key.id, revoked.key.id, '00000000-0000-4000-8000-000000000000'],
    disposableInviteKeyId: disposable.key.id,
    inviteTokens: { live: live.token, revoked: revoked.token },
    idTokens,
    badIdTokens,
  };
}, 120_000);

afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await sandbox?.cleanup();
});

const tryDecode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};
/** The repository ids the server may have derived from a path segment. */
const repoCandidates = (seg: string) => new Set([stripRepoId(seg), stripRepoId(tryDecode(seg)), stripRepoId(tryDecode(tryDecode(seg)))].filter((x): x is string => x !== null));

const WRITE_ROUTES: Array<[string, RegExp]> = [
  ['POST /v1/auth/idp', /^POST \/v1\/auth\/idp$/],
  ['POST /v1/pats', /^POST \/v1\/pats$/],
  ['DELETE /v1/pats/:id', /^DELETE \/v1\/pats\/([^/]+)$/],
  ['POST /v1/repos', /^POST \/v1\/repos$/],
  ['POST /v1/repos/join', /^POST \/v1\/repos\/join$/],
  ['POST /v1/repos/:id', /^POST \/v1\/repos\/([^/]+)$/],
  ['DELETE /v1/repos/:id/members/:userId', /^DELETE \/v1\/repos\/([^/]+)\/members\/([^/]+)$/],
  ['POST /v1/repos/:id/invite-keys', /^POST \/v1\/repos\/([^/]+)\/invite-keys$/],
  ['DELETE /v1/repos/:id/invite-keys/:keyId', /^DELETE \/v1\/repos\/([^/]+)\/invite-keys\/([^/]+)$/],
  ['POST /v1/repos/:id/sync/push', /^POST \/v1\/repos\/([^/]+)\/sync\/push$/],
  ['GET /v1/repos/:id/sync/pull', /^(?:GET|HEAD) \/v1\/repos\/([^/]+)\/sync\/pull$/],
];

describe('hostile input', () => {
  it(`${N} generated requests: no 5xx, no crash, nothing outside the data root, nothing written by a rejected request`, async () => {
    const treeBefore = await snapshotTree(sandbox.path, outsideDataRoot);
    await new Promise((res) => setTimeout(res, 100));
    const before = await snapshot();

    const url = new URL(server.url);
    const client = new HttpClient(url.hostname, Number(url.port), CONCURRENCY);
    const r = rng(SEED);
    const sent: Sent[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < N) {
          const i = next++;
          const req = generate(r, ctx, url.host);
          const expected = await expectationOf(req, ctx, { maxBody: MAX_BODY, smallBody: SMALL_BODY });
          if (req.kind === 'raw') {
            const res = await rawExchange(url.hostname, Number(url.port), req.raw!);
            sent.push({ i, req, expected, status: res.statuses[0] ?? 0, statuses: res.statuses, timedOut: res.timedOut && res.statuses.length === 0 });
            continue;
          }
          const res = await client.send(req.method, req.path, req.headers, req.body);
          const s: Sent = { i, req, expected, status: res.status, error: res.error };
          const rid = res.headers['x-request-id'];
          if (typeof rid === 'string') s.requestId = rid;
          if (res.status >= 200 && res.status < 500 && res.body.length > 0 && /json/.test(String(res.headers['content-type']))) {
            try {
              s.json = JSON.parse(res.body.toString('utf8'));
            } catch {
              s.json = '(not JSON)';
            }
          }
          sent.push(s);
        }
      }),
    );
    const elapsedMs = performance.now() - started;
    client.close();
    await new Promise((res) => setTimeout(res, 300)); // let the last log lines arrive

    // --- Every answer: no 5xx, no timeout, every error body in the API's shape.
    const tally = new Map<string, number>();
    for (const s of sent) for (const st of s.statuses ?? [s.status]) tally.set(String(st), (tally.get(String(st)) ?? 0) + 1);
    const describe = (s: Sent) => `#${s.i} ${s.req.target} ${s.req.method} ${s.req.path.slice(0, 200)} [${s.req.cred}] → ${s.statuses?.join(',') ?? s.status}${s.error ? ` (${s.error})` : ''}`;
    expect(sent.filter((s) => (s.statuses ?? [s.status]).some((st) => st >= 500)).map(describe)).toEqual([]);
    expect(sent.filter((s) => s.status === -1 || s.timedOut).map(describe)).toEqual([]);
    expect(sent.filter((s) => s.status === -2).map(describe)).toEqual([]);
    // A connection closed without any answer: only where no HTTP/1.1 server could answer.
    const silentOk = /raw: (CONNECT|TLS hello|garbage bytes|HTTP\/2 preface|upgrade request|unknown method)/;
    expect(sent.filter((s) => s.req.kind === 'raw' && (s.statuses ?? []).length === 0 && !silentOk.test(s.req.target)).map(describe)).toEqual([]);
    // Any other request gets an answer, except where the HTTP layer answers and closes while the client is
    // still uploading (the close can reset the connection before the answer is read): over-cap bodies
    // (413) and bodies behind a request line with raw non-ASCII bytes (Node's parser: 400, close).
    const cutOff = (s: Sent) => (s.req.body?.byteLength ?? 0) > MAX_BODY || ((s.req.body?.byteLength ?? 0) > 0 && /[\x80-\xff]/.test(s.req.path));
    expect(sent.filter((s) => s.req.kind === 'http' && s.status === 0 && !cutOff(s)).map(describe)).toEqual([]);
    // (A push's 409 carries its conflicts instead, as docs/api.md defines.)
    const badErrors = sent.filter(
      (s) => s.requestId && s.status >= 400 && s.req.method !== 'HEAD' && !(s.json && typeof s.json.error === 'string') && !(s.status === 409 && Array.isArray(s.json?.conflicts)),
    );
    expect(badErrors.map(describe)).toEqual([]);
    // Every answer is one docs/api.md allows for that request: hostile input refused with its exact 4xx.
    const unexpected = sent.filter((s) => s.req.kind === 'http' && !(s.status === 0 && cutOff(s)) && !meets(s.expected, s.status, s.json, s.req.method === 'HEAD'));
    expect(
      unexpected.map((s) => `${describe(s)} ${JSON.stringify(s.json ?? null).slice(0, 200)}; expected ${describeExpectation(s.expected)}`),
      'answers docs/api.md does not allow',
    ).toEqual([]);
    const kinds = { exact: 0, pinned: 0, open: 0 };
    for (const s of sent) kinds[kindOf(s.expected)]++;
    const share = (n: number) => `${((100 * n) / sent.length).toFixed(1)}%`;
    const openWhy = new Map<string, number>();
    for (const s of sent) if (kindOf(s.expected) === 'open') openWhy.set(s.expected.why, (openWhy.get(s.expected.why) ?? 0) + 1);
    console.log(
      `[reliability] fuzz expectations: exact ${kinds.exact} (${share(kinds.exact)}), pinned to a few documented answers ${kinds.pinned} ` +
        `(${share(kinds.pinned)}), open ${kinds.open} (${share(kinds.open)}: ${[...openWhy].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    );
    // Most requests have a knowable answer, and it is asserted.
    expect(kinds.exact + kinds.pinned).toBeGreaterThan(0.85 * sent.length);
    expect(kinds.exact).toBeGreaterThan(0.5 * sent.length);

    // --- The process is alive, serves, and logged no unhandled error.
    expect(server.alive()).toBe(true);
    expect((await call(server.url, '/health', { token: null })).status).toBe(200);
    expect((await call(server.url, '/v1/repos/fz/pages', { token: ctx.tokens.alice })).status).toBe(200);
    expect(logProblems(server.events())).toEqual([]);

    // --- Nothing outside the data root; inside it only the database and valid repositories.
    expect(treeDiff(treeBefore, await snapshotTree(sandbox.path, outsideDataRoot))).toEqual([]);
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(dataRoot())).filter((n) => !/^(service\.db(-wal|-shm)?|repos|search)$/.test(n))).toEqual([]);
    expect((await readdir(join(dataRoot(), 'repos'))).filter((n) => !/^[A-Za-z0-9_-]{1,64}\.git$/.test(n))).toEqual([]);
    expect((await readdir(join(dataRoot(), 'search'))).filter((n) => !/^[A-Za-z0-9_-]{1,64}\.db(-wal|-shm)?$/.test(n))).toEqual([]);

    // --- The ledger: which request the server actually handled (its access log, by request id).
    const handled = new Map<string, { method: string; path: string; status: number }>();
    for (const e of server.events()) {
      if (e.event === 'request') handled.set(String(e.id), { method: String(e.method), path: String(e.path), status: Number(e.status) });
    }
    type Accepted = { route: string; m: RegExpMatchArray; s: Sent };
    const accepted: Accepted[] = [];
    const committed = (s: Sent) =>
      s.json && typeof s.json.new_head === 'string' && Array.isArray(s.json.pushed) && s.json.pushed.some((p: any) => !p.unchanged && p.sha === s.json.new_head);
    for (const s of sent) {
      if (!s.requestId) continue;
      const h = handled.get(s.requestId);
      expect(h?.status, `the access-log line of ${describe(s)}`).toBe(s.status);
      const line = `${h!.method} ${h!.path}`;
      for (const [route, re] of WRITE_ROUTES) {
        const m = line.match(re);
        if (!m) continue;
        // Only the first matching route applies (join before :id, as the server mounts them).
        const isAccepted = (s.status >= 200 && s.status < 300) || (route === 'POST /v1/repos/:id/sync/push' && s.status === 409 && committed(s));
        if (isAccepted) accepted.push({ route, m, s });
        break;
      }
    }
    const acc = (route: string) => accepted.filter((a) => a.route === route);

    // --- No way in without a credential: a request carrying none (or a dead, forged or malformed one)
    // that reached a non-public route got 401 — or was stopped before authentication (body cap, unknown
    // route, wrong method, CORS preflight). And only a valid ID token ever signed anyone in.
    const publicPath = /^(GET|HEAD|OPTIONS) \/health$|^[A-Z]+ \/v1\/auth\/idp$/;
    const intruders = sent.filter((s) => {
      if (!s.requestId || s.req.kind !== 'http' || s.req.identity !== null) return false;
      const h = handled.get(s.requestId)!;
      if (publicPath.test(`${h.method} ${h.path}`)) return false;
      return ![401, 404, 405, 413].includes(s.status) && !(s.req.method === 'OPTIONS' && s.status === 204) && !(s.status === 400 && s.json?.error === 'request body incomplete');
    });
    expect(intruders.map(describe), 'answered without a valid credential').toEqual([]);
    const forgedSignIns = acc('POST /v1/auth/idp').filter((a) => !ctx.idTokens.some((t) => Buffer.from(a.s.req.body ?? []).toString('utf8').includes(t)));
    expect(forgedSignIns.map((a) => describe(a.s)), 'signed in without a valid ID token').toEqual([]);
    await new Promise((res) => setTimeout(res, 100));
    const after = await snapshot();

    // Commits: exactly those of accepted pushes that committed.
    const pushCommits = new Map(acc('POST /v1/repos/:id/sync/push').filter((a) => committed(a.s)).map((a) => [a.s.json.new_head as string, a]));
    const newCommits = new Map<string, string>();
    for (const [repo, list] of after.commits) {
      const old = before.commits.get(repo) ?? [];
      expect(list.slice(list.length - old.length), `history of ${repo} was rewritten`).toEqual(old);
      for (const sha of list.slice(0, list.length - old.length)) newCommits.set(sha, repo);
    }
    expect([...newCommits.keys()].filter((sha) => !pushCommits.has(sha)), 'commits no accepted push made').toEqual([]);
    expect([...pushCommits.keys()].filter((sha) => !newCommits.has(sha)), 'accepted pushes whose commit is missing').toEqual([]);
    // Repositories: each new one named by an accepted creation or push.
    const creators = new Map<string, Accepted[]>();
    const credit = (repo: string | null | undefined, a: Accepted) => {
      if (repo) creators.set(repo, [...(creators.get(repo) ?? []), a]);
    };
    for (const a of acc('POST /v1/repos')) credit(a.s.json?.id, a);
    for (const a of acc('POST /v1/repos/:id')) credit(a.s.json?.repo_id, a);
    for (const a of acc('POST /v1/repos/join')) credit(a.s.json?.repo_id, a);
    for (const a of acc('POST /v1/repos/:id/sync/push')) {
      for (const c of repoCandidates(a.m[1]!)) credit(c, a);
      if (committed(a.s)) credit(newCommits.get(a.s.json.new_head), a);
    }
    const newRepos = [...after.commits.keys()].filter((id) => !before.commits.has(id));
    expect(newRepos.filter((id) => !creators.get(id)?.some((a) => a.route !== 'POST /v1/repos/join')), 'repositories no accepted request created').toEqual([]);
    expect([...before.commits.keys()].filter((id) => !after.commits.has(id))).toEqual([]);

    const diffKeys = (b: Map<string, string>, a: Map<string, string>) => ({
      added: [...a.keys()].filter((k) => !b.has(k)),
      changed: [...a.keys()].filter((k) => b.has(k) && b.get(k) !== a.get(k)),
      removed: [...b.keys()].filter((k) => !a.has(k)),
    });
    // Users: only accepted sign-ins.
    const signIns = new Set(acc('POST /v1/auth/idp').map((a) => a.s.json?.user?.id));
    const users = diffKeys(before.users, after.users);
    expect([...users.added, ...users.changed].filter((id) => !signIns.has(id))).toEqual([]);
    expect(users.removed).toEqual([]);
    // PATs and invite keys: minted by a 201, removed by a 204 naming them.
    for (const [name, mintRoute, revokeRoute, idOf, group] of [
      ['pats', 'POST /v1/pats', 'DELETE /v1/pats/:id', (a: Accepted) => a.s.json?.pat?.id, 1],
      ['invites', 'POST /v1/repos/:id/invite-keys', 'DELETE /v1/repos/:id/invite-keys/:keyId', (a: Accepted) => a.s.json?.key?.id, 2],
    ] as const) {
      const d = diffKeys(before[name], after[name]);
      const minted = new Set(acc(mintRoute).map(idOf));
      const revoked = new Set(acc(revokeRoute).map((a) => tryDecode(a.m[group]!)));
      expect(d.added.filter((id) => !minted.has(id)), `${name} added without a 201`).toEqual([]);
      expect(d.changed, `${name} changed`).toEqual([]);
      expect(d.removed.filter((id) => !revoked.has(id)), `${name} removed without a 204`).toEqual([]);
      expect([...minted].filter((id) => !after[name].has(id) && !revoked.has(id)), `${name} minted but missing`).toEqual([]);
    }
    // Membership: each added or changed row by an accepted request of that user naming that repository;
    // each removed row by an accepted removal naming both.
    const m = diffKeys(before.members, after.members);
    const explains = (key: string) => {
      const [repo, user] = key.split(' ') as [string, string];
      return (creators.get(repo) ?? []).some((a) => a.s.req.identity === user);
    };
    expect([...m.added, ...m.changed].filter((k) => !explains(k)), 'membership written without an accepted request').toEqual([]);
    const removals = acc('DELETE /v1/repos/:id/members/:userId');
    expect(
      m.removed.filter((k) => {
        const [repo, user] = k.split(' ') as [string, string];
        return !removals.some((a) => repoCandidates(a.m[1]!).has(repo) && tryDecode(a.m[2]!) === user);
      }),
      'membership removed without a 204',
    ).toEqual([]);
    // Activity: old events untouched; new ones exactly one per accepted user push that committed, and one
    // per accepted user pull that received pages (a HEAD pull's body is not seen: it may or may not count).
    const act = diffKeys(before.activity, after.activity);
    expect([...act.changed, ...act.removed]).toEqual([]);
    const newEvents = act.added.map((id) => JSON.parse(after.activity.get(id)!) as { user_id: string; action: string; repo_id: string });
    const isUser = (a: Accepted) => a.s.req.identity !== null && a.s.req.identity !== 'legacy';
    for (const user of Object.values(ctx.users)) {
      const pushes = acc('POST /v1/repos/:id/sync/push').filter((a) => isUser(a) && a.s.req.identity === user && committed(a.s)).length;
      expect(newEvents.filter((e) => e.user_id === user && e.action === 'push').length, `push events of ${user}`).toBe(pushes);
      const pulls = acc('GET /v1/repos/:id/sync/pull').filter((a) => isUser(a) && a.s.req.identity === user);
      const sure = pulls.filter((a) => a.s.req.method !== 'HEAD' && a.s.json?.files?.length > 0).length;
      const maybe = pulls.filter((a) => a.s.req.method === 'HEAD').length;
      const got = newEvents.filter((e) => e.user_id === user && e.action === 'pull').length;
      expect(got >= sure && got <= sure + maybe, `pull events of ${user}: ${got}, expected ${sure}..${sure + maybe}`).toBe(true);
    }
    expect(newEvents.filter((e) => !Object.values(ctx.users).includes(e.user_id))).toEqual([]);
    expect(after.migrations).toBe(before.migrations);

    // --- Every repository is valid and the derived index matches git.
    await pool([...after.commits.keys()], 2, async (id) => {
      const gd = join(dataRoot(), 'repos', `${id}.git`);
      await fsckStrict(gd);
      expect(after.index.get(id)!.commits, `index commits of ${id}`).toEqual(after.commits.get(id));
      const tree = after.commits.get(id)!.length
        ? (await git(gd, 'ls-tree', '-r', '-z', 'main')).split('\0').filter(Boolean).map((l) => {
            const [meta, path] = l.split('\t') as [string, string];
            return `${meta.split(' ')[2]} ${path}`;
          })
        : [];
      const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
      expect([...after.index.get(id)!.head].sort(byBytes), `index head of ${id}`).toEqual(tree.sort(byBytes));
    });

    // --- No token used by the fuzz reached the database or the log.
    const { filesBelow } = await import('./helpers/files.ts');
    const secrets = Object.entries(ctx.tokens).filter(([k]) => k !== 'garbage').map(([label, value]) => ({ label, value }));
    secrets.push({ label: 'invite token', value: ctx.inviteTokens.live }, { label: 'session secret', value: SESSION_SECRET });
    expect(await findSecrets(secrets, (await filesBelow(dataRoot())).filter((f) => /service\.db/.test(f)), [{ where: 'log', text: server.output() }])).toEqual([]);

    // --- Coverage and figures.
    const targets = new Set(sent.map((s) => s.req.target));
    expect(FUZZ_ROUTES.filter((t) => !targets.has(t))).toEqual([]);
    expect(sent.length).toBe(N);
    expect(accepted.length).toBeGreaterThan(N / 50); // the fuzz also wrote: the ledger was exercised
    const rawCount = sent.filter((s) => s.req.kind === 'raw').length;
    console.log(
      `[reliability] fuzz: seed ${SEED}, ${sent.length} requests (${rawCount} raw) in ${(elapsedMs / 1000).toFixed(1)} s ` +
        `(${Math.round(sent.length / (elapsedMs / 1000))}/s, ${CONCURRENCY} in flight); accepted writes ${accepted.length} ` +
        `(${pushCommits.size} commits, ${newRepos.length} new repos, ${m.added.length} memberships); statuses ` +
        [...tally].sort().map(([k, v]) => `${k}×${v}`).join(' '),
    );
  }, 240_000);
});
