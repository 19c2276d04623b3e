import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { sha256Hex } from '../../lib/auth/tokens.ts';
import { LEGACY_KEY, SESSION_SECRET, call, logProblems, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { filesBelow, findSecrets } from './helpers/files.ts';

/**
 * No raw credential is ever written down: a real server process is driven through every flow that
 * handles a token (sign-in with good and bad ID tokens, sessions, PATs minted from sessions and from
 * PATs, revocation, invite keys minted, redeemed, revoked, misused), then every file under the data root
 * (service.db, its -wal and -shm, every git object) and everything the process printed are searched for
 * each token, its secret part alone, the session secret and the legacy key.
 */

let idp: IdpStandIn;
let dir: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;
const secrets: Array<{ label: string; value: string }> = [];
const patHashes: string[] = [];

/** Registers a token and the parts of it that are secret on their own. */
function secret(label: string, value: string) {
  secrets.push({ label, value });
  if (/^kr[pi]_/.test(value)) secrets.push({ label: `${label} (without prefix)`, value: value.slice(4) });
  const parts = value.split('.');
  if (parts.length === 3 && parts[2]!.length >= 16) secrets.push({ label: `${label} (signature)`, value: parts[2]! });
}

async function json<T>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return (text === '' ? null : JSON.parse(text)) as T;
}

async function signInAs(sub: string, email: string, claims: Record<string, unknown> = {}) {
  const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0], ...claims });
  secret(`id token of ${email}`, idToken);
  const res = await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
  const body = await json<{ access_token: string; user: { id: string } }>(res, 200);
  secret(`session of ${email}`, body.access_token);
  return { token: body.access_token, id: body.user.id };
}

async function mintPat(token: string, label: string) {
  const body = await json<{ pat: { id: string }; token: string }>(
    await call(server.url, '/v1/pats', { method: 'POST', token, json: { label } }),
    201,
  );
  secret(`PAT ${label}`, body.token);
  patHashes.push(await sha256Hex(body.token));
  return body;
}

beforeAll(async () => {
  idp = await startIdp();
  dir = await tempDir('kr-secrets-');
  server = await spawnServer({
    dataRoot: join(dir.path, 'data'),
    env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
  });
  secret('session secret', SESSION_SECRET);
  secret('legacy key', LEGACY_KEY);

  const alice = await signInAs('a', 'alice@example.test');
  const bob = await signInAs('b', 'bob@example.test');
  const carol = await signInAs('c', 'carol@example.test');
  // Refused ID tokens are credentials too.
  for (const [why, claims] of [
    ['expired', { iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }],
    ['wrong audience', { aud: 'someone-else' }],
    ['unverified email', { email_verified: false }],
  ] as const) {
    const bad = await idp.signIdToken({ sub: 'x', email: 'mallory@example.test', ...claims });
    secret(`refused id token (${why})`, bad);
    expect((await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: bad } })).status).toBe(401);
  }

  const p1 = await mintPat(alice.token, 'alice laptop');
  const p2 = await mintPat(alice.token, 'alice ci');
  const p3 = await mintPat(p1.token, 'minted with a PAT');
  const p4 = await mintPat(bob.token, 'bob');
  await json(await call(server.url, `/v1/pats/${p2.pat.id}`, { method: 'DELETE', token: alice.token }), 204);
  await json(await call(server.url, '/v1/me', { token: p2.token }), 401); // revoked

  await json(await call(server.url, '/v1/repos', { method: 'POST', token: p3.token, json: { id: 'sec' } }), 201);
  const inv1 = await json<{ key: { id: string }; token: string }>(
    await call(server.url, '/v1/repos/sec/invite-keys', { method: 'POST', token: alice.token, json: { label: 'for bob' } }),
    201,
  );
  const inv2 = await json<{ key: { id: string }; token: string }>(
    await call(server.url, '/v1/repos/sec/invite-keys', { method: 'POST', token: p1.token, json: {} }),
    201,
  );
  secret('invite key 1', inv1.token);
  secret('invite key 2', inv2.token);
  await json(await call(server.url, '/v1/repos/join', { method: 'POST', token: p4.token, json: { key: inv1.token } }), 200);
  await json(await call(server.url, '/v1/repos/join', { method: 'POST', token: bob.token, json: { key: inv1.token } }), 200);
  await json(await call(server.url, `/v1/repos/sec/invite-keys/${inv2.key.id}`, { method: 'DELETE', token: alice.token }), 204);
  await json(await call(server.url, '/v1/repos/join', { method: 'POST', token: carol.token, json: { key: inv2.token } }), 404);

  // Credentials in the wrong places: each refusal goes through the error paths and the access log.
  await json(await call(server.url, '/v1/me', { token: inv1.token }), 401);
  await json(await call(server.url, '/v1/me', { token: `${alice.token}x` }), 401);
  await json(await call(server.url, '/v1/me', { token: null, headers: { authorization: `Basic ${p1.token}` } }), 401);
  await json(await call(server.url, '/v1/repos/join', { method: 'POST', token: carol.token, json: { key: p1.token } }), 404);
  await json(await call(server.url, '/v1/repos/join', { method: 'POST', token: carol.token, json: { key: alice.token } }), 404);
  await json(await call(server.url, `/v1/repos/sec/pages?access_token=${p1.token}`, { token: carol.token }), 403);
  await json(await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: alice.token } }), 401);
  await json(await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, body: `{"id_token": "${p1.token}"` }), 400);

  // Ordinary work with every live credential.
  for (const [who, token] of [['alice', alice.token], ['alice pat', p1.token], ['bob pat', p4.token], ['bob', bob.token]] as const) {
    await json(
      await call(server.url, '/v1/repos/sec/sync/push', {
        method: 'POST',
        token,
        json: { files: [{ path: `wiki/${who.replace(' ', '-')}.md`, content: `## By ${who}\n` }], author_name: 'ignored', message: `push by ${who}` },
      }),
      200,
    );
    await json(await call(server.url, '/v1/repos/sec/sync/pull', { token, headers: { 'x-service-client': 'kr-cli' } }), 200);
    await json(await call(server.url, '/v1/repos/sec/activity', { token }), 200);
  }
  await json(await call(server.url, '/v1/repos/sec/sync/push', { method: 'POST', json: { files: [{ path: 'legacy.md', content: 'x' }] } }), 200);
  // A second sign-in refreshes the account and mints a new session.
  await signInAs('a', 'alice@example.test', { name: 'Alice Renamed' });
}, 120_000);

afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await dir?.cleanup();
});

describe('no raw credential reaches the disk or the log', () => {
  it('the database (with its WAL, while running), git objects and the captured log hold none of them', async () => {
    const files = await filesBelow(join(dir.path, 'data'));
    expect(files.map((f) => f.slice(dir.path.length + 6))).toEqual(expect.arrayContaining(['service.db', 'service.db-wal']));
    expect(secrets.length).toBeGreaterThan(30);
    expect(await findSecrets(secrets, files, [{ where: 'server output', text: server.output() }])).toEqual([]);
    // The scan looks where the data is: the account, the PAT hashes and the request log are there.
    const db = (await filesBelow(join(dir.path, 'data'))).filter((f) => /service\.db/.test(f));
    const found = await findSecrets(
      [{ label: 'email', value: 'alice@example.test' }, ...patHashes.map((h, i) => ({ label: `hash ${i}`, value: h }))],
      db,
    );
    expect(new Set(found.map((f) => f.split(' in ')[0])).size).toBe(1 + patHashes.length);
    expect(server.events().filter((e) => e.event === 'request').length).toBeGreaterThan(40);
    expect(logProblems(server.events())).toEqual([]);
  });

  it('after a graceful stop (WAL checkpointed into service.db) still none', async () => {
    await server.stop();
    const files = await filesBelow(join(dir.path, 'data'));
    expect(await findSecrets(secrets, files, [{ where: 'server output', text: server.output() }])).toEqual([]);
  });
});
