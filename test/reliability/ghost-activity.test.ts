import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { call, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { fsckStrict, git, revList } from './helpers/git.ts';

/**
 * A push's event is written in the transaction that records its commit in the index (the Node build), and
 * that transaction commits while the commit's objects are still being flushed, before the branch moves. A
 * crash in that window (or a failed object write) leaves index rows and an event for a commit the branch
 * never reached, and no answer was ever sent. The state is made here exactly: the server is killed after two
 * acknowledged pushes and the branch is set back by one commit, as if the second had never moved it. After a
 * restart the index is cut back to git, and the event of the push git never reached goes with it.
 */

let idp: IdpStandIn;
let dir: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;
let session = '';
const env = () => ({ IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
const dataRoot = () => join(dir.path, 'data');

beforeAll(async () => {
  idp = await startIdp();
  dir = await tempDir('kr-ghost-activity-');
  server = await spawnServer({ dataRoot: dataRoot(), env: env() });
  const idToken = await idp.signIdToken({ sub: 'ann', email: 'ann@example.test', name: 'Ann' });
  const signed = await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
  session = ((await signed.json()) as { access_token: string }).access_token;
  expect((await call(server.url, '/v1/repos', { method: 'POST', token: session, json: { id: 'notes' } })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await dir?.cleanup();
});

async function pushes(): Promise<Array<{ paths: unknown }>> {
  const res = await call(server.url, '/v1/repos/notes/activity', { token: session });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { events: Array<{ action: string; detail?: { paths?: unknown } }> };
  return body.events.filter((e) => e.action === 'push').map((e) => ({ paths: e.detail?.paths }));
}

describe('an event for a push the branch never reached', () => {
  it('is removed with the index rows when the index is cut back to git', async () => {
    const heads: string[] = [];
    for (const [path, content] of [
      ['first.md', 'one\n'],
      ['second.md', 'two\n'],
    ]) {
      const res = await call(server.url, '/v1/repos/notes/sync/push', { method: 'POST', token: session, json: { files: [{ path, content }] } });
      expect(res.status, await res.clone().text()).toBe(200);
      heads.push(((await res.json()) as { new_head: string }).new_head);
    }
    expect(await pushes()).toEqual([{ paths: ['second.md'] }, { paths: ['first.md'] }]);

    await server.kill();
    const gitdir = join(dataRoot(), 'repos', 'notes.git');
    await git(gitdir, 'update-ref', 'refs/heads/main', heads[0]!, heads[1]!);
    server = await spawnServer({ dataRoot: dataRoot(), env: env() });

    // The branch is where git says; the index and the feed follow it.
    expect(await revList(gitdir)).toEqual([heads[0]]);
    const timeline = (await (await call(server.url, '/v1/repos/notes/timeline', { token: session })).json()) as { commits: Array<{ sha: string }> };
    expect(timeline.commits.map((c) => c.sha)).toEqual([heads[0]]);
    expect(await pushes()).toEqual([{ paths: ['first.md'] }]);
    const pages = (await (await call(server.url, '/v1/repos/notes/pages', { token: session })).json()) as { pages: Array<{ path: string }> };
    expect(pages.pages.map((p) => p.path)).toEqual(['first.md']);
    await fsckStrict(gitdir);

    // The next push lands on the head git has, and is recorded once.
    const res = await call(server.url, '/v1/repos/notes/sync/push', { method: 'POST', token: session, json: { files: [{ path: 'third.md', content: 'three\n' }] } });
    expect(res.status).toBe(200);
    expect(await pushes()).toEqual([{ paths: ['third.md'] }, { paths: ['first.md'] }]);
  }, 60_000);
});
