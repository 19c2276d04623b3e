import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'libsql';
import { tempDir } from '../helpers/env.ts';
import { SseReader } from '../helpers/sse.ts';
import { eventually, signatureValid, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';
import { LEGACY_KEY, call, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { git } from './helpers/git.ts';

/**
 * The webhook outbox across crashes and restarts of the real server process (docs/api.md "Webhooks": a push's
 * deliveries are recorded with the push itself and survive a crash or a restart).
 *
 * A push's deliveries are written in the transaction that records its commit in the index, held, and made due
 * once the branch has moved. A crash between the two leaves them held, and one in the window before the
 * branch moves leaves rows for a commit git never reached. Both states are made here exactly, as
 * test/reliability/ghost-activity.test.ts makes its own: the server is killed after two acknowledged pushes,
 * the branch is set back by one commit, and both pushes' deliveries are put back as they were before their
 * release. After a restart, the push git has is delivered and the other is gone — its delivery and its event.
 */

let rx: Receiver;
let dir: { path: string; cleanup: () => Promise<void> };
const hookEnv = (retry: string) => ({ SERVICE_WEBHOOK_ALLOW_HTTP: '1', SERVICE_WEBHOOK_ALLOW_PRIVATE: '1', SERVICE_WEBHOOK_RETRY_MS: retry });

beforeAll(async () => {
  rx = await startReceiver();
  dir = await tempDir('kr-outbox-');
});
afterAll(async () => {
  await rx?.close();
  await dir?.cleanup();
});

const json = async (server: ServerProc, path: string, init: Parameters<typeof call>[2] = {}) => {
  const res = await call(server.url, path, { token: LEGACY_KEY, ...init });
  return { status: res.status, body: (res.status === 204 ? null : await res.json()) as any };
};
const deliveries = async (server: ServerProc, repo: string, wid: string) =>
  (await json(server, `/v1/repos/${repo}/webhooks/${wid}/deliveries`)).body.deliveries as any[];

describe('a crash between a push and the release of its deliveries', () => {
  it('after the restart, the push git has is delivered; the one it never reached is gone with its event', async () => {
    const root = join(dir.path, 'crash');
    let server = await spawnServer({ dataRoot: root, env: hookEnv('3600000') });
    try {
      expect((await json(server, '/v1/repos/notes', { method: 'POST' })).status).toBe(201);
      const hook = (await json(server, '/v1/repos/notes/webhooks', { method: 'POST', json: { url: `${rx.url}/crash` } })).body;
      rx.answer = (r) => ({ status: r.path === '/crash' ? 503 : 200 });
      const heads: string[] = [];
      for (const path of ['first.md', 'second.md']) {
        const res = await json(server, '/v1/repos/notes/sync/push', { method: 'POST', json: { files: [{ path, content: `${path}\n` }] } });
        expect(res.status).toBe(200);
        heads.push(res.body.new_head);
      }
      await rx.waitFor('/crash', 2);
      await server.kill();

      // The state a crash in the push's window leaves: the branch one commit back, both pushes' deliveries held.
      const gitdir = join(root, 'repos', 'notes.git');
      await git(gitdir, 'update-ref', 'refs/heads/main', heads[0]!, heads[1]!);
      const db = new Database(join(root, 'service.db'));
      const held = db
        .prepare(
          `UPDATE webhook_deliveries SET next_attempt_ms = NULL, attempts = 0, first_attempt_ms = NULL, last_status = NULL, last_error = NULL
           WHERE event = 'push'`,
        )
        .run();
      expect(held.changes).toBe(2);
      db.close();

      rx.answer = () => ({ status: 200 });
      server = await spawnServer({ dataRoot: root, env: hookEnv('3600000') });
      const [d] = await eventually(async () => {
        const list = await deliveries(server, 'notes', hook.webhook.id);
        return list.length === 1 && list[0].status === 'delivered' ? list : undefined;
      });
      expect(d).toMatchObject({ event: 'push', status: 'delivered', attempts: 1, last_status: 200 });
      const delivered = rx.to('/crash').slice(2);
      expect(delivered).toHaveLength(1);
      expect(JSON.parse(delivered[0]!.raw)).toMatchObject({ sha: heads[0], event: 'push', delivery_id: d.id });
      expect(signatureValid(delivered[0]!.headers['x-kr-signature'], delivered[0]!.raw, hook.secret)).toBe(true);

      // The event of the push git never reached is gone too: resuming after it starts with `reset`.
      const res = await call(server.url, '/v1/repos/notes/events', { token: LEGACY_KEY, headers: { 'last-event-id': '2' } });
      const stream = new SseReader(res);
      expect(await stream.next()).toEqual({ event: 'reset', data: '{"reason":"unknown event id"}' });
      await stream.close();
      const kept = await call(server.url, '/v1/repos/notes/events', { token: LEGACY_KEY, headers: { 'last-event-id': '1' } });
      const resumed = new SseReader(kept);
      // Known, nothing after it: the next event is the next push, with a new id.
      const third = await json(server, '/v1/repos/notes/sync/push', { method: 'POST', json: { files: [{ path: 'third.md', content: '3\n' }] } });
      const next = await resumed.nextJson();
      expect(next).toMatchObject({ event: 'push', data: { sha: third.body.new_head } });
      expect(Number(next!.id)).toBeGreaterThan(2);
      await resumed.close();
    } finally {
      await server.kill();
    }
  }, 120_000);
});

describe('a restart with a delivery still to retry', () => {
  it('the next start sends it on its schedule: same delivery, next attempt', async () => {
    const root = join(dir.path, 'restart');
    let server = await spawnServer({ dataRoot: root, env: hookEnv('2000') });
    try {
      expect((await json(server, '/v1/repos/notes', { method: 'POST' })).status).toBe(201);
      const hook = (await json(server, '/v1/repos/notes/webhooks', { method: 'POST', json: { url: `${rx.url}/restart` } })).body;
      rx.answer = (r) => ({ status: r.path === '/restart' ? 500 : 200 });
      const pushed = await json(server, '/v1/repos/notes/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: 'a\n' }] } });
      const [first] = await eventually(async () => {
        const list = await deliveries(server, 'notes', hook.webhook.id);
        return list[0]?.attempts === 1 ? list : undefined;
      });
      expect(first).toMatchObject({ status: 'pending', attempts: 1, last_status: 500, last_error: 'HTTP 500', next_attempt_at: expect.any(Number) });
      // A graceful stop before the retry is due.
      await server.stop();
      expect(rx.to('/restart')).toHaveLength(1);

      rx.answer = () => ({ status: 200 });
      server = await spawnServer({ dataRoot: root, env: hookEnv('2000') });
      const [done] = await eventually(async () => {
        const list = await deliveries(server, 'notes', hook.webhook.id);
        return list[0]?.status === 'delivered' ? list : undefined;
      });
      expect(done).toMatchObject({ id: first.id, status: 'delivered', attempts: 2, last_status: 200 });
      const got = rx.to('/restart');
      expect(got).toHaveLength(2);
      expect(got.map((r) => r.headers['x-kr-delivery'])).toEqual([first.id, first.id]);
      expect(JSON.parse(got[1]!.raw)).toMatchObject({ sha: pushed.body.new_head, delivery_id: first.id });
    } finally {
      await server.kill();
    }
  }, 120_000);
});
