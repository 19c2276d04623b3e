/**
 * `kr watch` against the Node server: the cases both builds share (test/watch-cases.ts), and what needs a
 * server this process can stop and start again on its data and its port:
 *  - the server restarts while a push is made (by another server on the same data): the watcher reconnects
 *    with `Last-Event-ID` and the push's line comes from the replay — no change is missed;
 *  - the 11th stream of one person on one repository: `kr watch` says why it cannot start.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mintSession } from '../lib/auth/session.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { startKr, type KrProcess } from './helpers/watch.ts';
import { watchCases } from './watch-cases.ts';

watchCases('node');

const TIME = '\\d\\d:\\d\\d:\\d\\d';
const CASE_TIMEOUT = 300_000;

describe('node: kr watch across a server restart, and the stream cap', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  /** A server on `dataRoot` (its own port, or the one given). */
  async function server(dataRoot: string, port = 0): Promise<TestServer> {
    const s = await startTestServer({ dataRoot, env: { SERVICE_LISTEN_ADDR: `127.0.0.1:${port}` } });
    let stopped = false;
    const stop = s.stop.bind(s);
    s.stop = async () => {
      if (stopped) return;
      stopped = true;
      await stop();
    };
    cleanups.push(() => s.stop());
    return s;
  }

  /** Alice (owner) and Bob (member) of `repo`, with sessions; Bob logged in with kr in a folder linked to it. */
  async function team(srv: TestServer, root: string, repo: string) {
    const session = async (email: string) => {
      const { user } = await srv.deps.users.upsert({ issuer: 'https://watch.invalid', subject: email, email, name: email.split('@')[0]! });
      return { id: user.id, token: await mintSession(srv.deps.config.sessionSecret, srv.deps.clock, { id: user.id, email: user.email }) };
    };
    const alice = await session('alice@example.com');
    const bobSession = await session('bob@example.com');
    expect((await srv.api('/v1/repos', { method: 'POST', token: alice.token, json: { id: repo } })).status).toBe(201);
    await srv.deps.members.add(repo, bobSession.id, 'member');
    const bob = await krUser(root, 'bob');
    for (const args of [['login', '--server', srv.url, '--token', bobSession.token], ['init', '--repo', repo, '--no-mcp']]) {
      const r = await bob.kr(...args);
      expect(r.code, show(r)).toBe(0);
    }
    return { alice, bob, bobToken: bobSession.token };
  }

  const push = async (srv: TestServer, token: string, repo: string, files: unknown[]): Promise<string> => {
    const r = await srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { message: 'm', files } });
    expect(r.status).toBe(200);
    return ((await r.json()) as { new_head: string }).new_head;
  };

  const watching = (bob: KrUser): KrProcess => {
    const w = startKr(bob, 'watch');
    cleanups.push(async () => {
      w.signal('SIGKILL');
      await w.exit;
    });
    return w;
  };

  it(
    'a server restart: the watcher reconnects with Last-Event-ID and the push made meanwhile comes from the replay',
    async () => {
      const data = await tempDir('kr-watch-restart-');
      const root = await tempDir('kr-watch-users-');
      cleanups.push(data.cleanup, root.cleanup);
      const first = await server(data.path);
      const port = Number(new URL(first.url).port);
      const { alice, bob } = await team(first, root.path, 'rs');
      const w = watching(bob);
      await w.line(new RegExp(`^${TIME} rs is up to date at \\(none\\)$`));
      const one = await push(first, alice.token, 'rs', [{ path: 'wiki/concepts/one.md', content: 'one\n' }]);
      await w.line(new RegExp(`^${TIME} alice@example\\.com pushed 1 page\\(s\\) \\(${one.slice(0, 7)}\\): wiki/concepts/one\\.md added$`));

      // The server goes away; another one on the same data (another port) takes a push meanwhile.
      await first.stop();
      await w.errLine(/^connection to the server lost \(.+\); reconnecting in \d+ s$/);
      const meanwhile = await server(data.path);
      const two = await push(meanwhile, alice.token, 'rs', [
        { path: 'wiki/concepts/one.md', content: 'one, two\n' },
        { path: 'wiki/concepts/two.md', content: 'two\n' },
      ]);
      await meanwhile.stop();

      // Back on the watcher's address: it resumes after the last event it saw, and the server replays the push.
      const back = await server(data.path, port);
      await w.errLine(/^reconnected; resuming where the stream stopped$/);
      await w.line(new RegExp(`^${TIME} alice@example\\.com pushed 2 page\\(s\\) \\(${two.slice(0, 7)}\\): wiki/concepts/one\\.md modified, wiki/concepts/two\\.md added$`));
      expect(await bob.read('wiki/concepts/one.md')).toBe('one, two\n');
      expect(await bob.read('wiki/concepts/two.md')).toBe('two\n');
      // It did not need a pull of its own: no "pulled what changed while disconnected" line.
      expect(w.stdout.filter((l) => l.includes('while disconnected')), w.show()).toEqual([]);

      // And it goes on live.
      const three = await push(back, alice.token, 'rs', [{ path: 'wiki/concepts/three.md', content: 'three\n' }]);
      await w.line(new RegExp(`\\(${three.slice(0, 7)}\\): wiki/concepts/three\\.md added$`));
      w.signal('SIGINT');
      expect((await w.exit).code, w.show()).toBe(0);
    },
    CASE_TIMEOUT,
  );

  it(
    'too many event streams: kr watch says why it cannot start (exit 1), with --json as a JSON error',
    async () => {
      const data = await tempDir('kr-watch-cap-');
      const root = await tempDir('kr-watch-users-');
      cleanups.push(data.cleanup, root.cleanup);
      const srv = await server(data.path);
      const { bob, bobToken } = await team(srv, root.path, 'cap');
      const open: Response[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await srv.api('/v1/repos/cap/events', { token: bobToken });
        expect(r.status).toBe(200);
        open.push(r);
      }
      cleanups.push(async () => {
        for (const r of open) await r.body?.cancel();
      });
      const message =
        'too many event streams: the server keeps at most 10 open per person and repository, and yours on cap are all taken ' +
        '(other "kr watch" or agent sessions); stop one and try again';
      const r = await bob.kr('watch');
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr.trim().split('\n').at(-1)).toBe(`error: ${message}`);
      const j = await bob.kr('watch', '--json');
      expect(j.code, show(j)).toBe(1);
      expect(JSON.parse(j.stderr.trim().split('\n').at(-1)!)).toEqual({ error: message, code: 'too_many_streams' });
    },
    CASE_TIMEOUT,
  );
});
