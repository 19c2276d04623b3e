/**
 * Live events and webhooks on the Node build, where a test can reach inside the running server or restart it
 * on its data: a reader that never reads, the server stopping under open streams, streams that leave no trace,
 * a disabled user and an expired session losing their streams, and the address rule checked again at
 * delivery. The cases both builds share are test/events-cases.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { ManualClock } from '../lib/util/clock.ts';
import { mintSession } from '../lib/auth/session.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { SseReader } from './helpers/sse.ts';
import { eventually, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

const KEY = 'test-legacy-key';
let servers: TestServer[] = [];
let receivers: Receiver[] = [];
afterEach(async () => {
  for (const s of servers) await s.stop();
  for (const r of receivers) await r.close();
  servers = [];
  receivers = [];
});

async function server(opts: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(opts);
  servers.push(s);
  return s;
}

async function open(srv: TestServer, repo: string, token = KEY): Promise<SseReader> {
  const res = await srv.api(`/v1/repos/${repo}/events`, { token });
  expect(res.status).toBe(200);
  return new SseReader(res);
}

/** A user with a session and membership, made straight through the server's dependencies. */
async function member(srv: TestServer, repo: string, email: string, role: 'owner' | 'member' = 'member') {
  const { user } = await srv.deps.users.upsert({ issuer: 'https://events-node.invalid', subject: email, email, name: email.split('@')[0]! });
  await srv.deps.members.add(repo, user.id, role);
  return { id: user.id, token: await mintSession(srv.deps.config.sessionSecret, srv.deps.clock, { id: user.id, email: user.email }) };
}

describe('a reader that does not read', () => {
  it('is cut at once when its buffer is full (its socket closed by the server); pushes and the other streams go on undisturbed', async () => {
    const srv = await server();
    expect((await srv.api('/v1/repos/slow', { method: 'POST' })).status).toBe(201);
    // The server's side of each connection, by the client's port: to see the stalled one closed.
    const serverSockets = new Map<number, Socket>();
    srv.server.on('connection', (s: Socket) => serverSockets.set(s.remotePort!, s));
    // The stalled client: a raw socket that sends its request, takes the response head, and stops reading.
    const port = new URL(srv.url).port;
    const sock: Socket = connect(Number(port), '127.0.0.1');
    sock.setEncoding('latin1');
    let raw = '';
    sock.write(`GET /v1/repos/slow/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
    await new Promise<void>((resolve) =>
      sock.once('data', (d: string) => {
        raw += d;
        resolve();
      }),
    );
    sock.pause();
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    const stalledOnServer = serverSockets.get(sock.localPort!)!;
    expect(stalledOnServer.destroyed).toBe(false);
    const healthy = await open(srv, 'slow');
    expect(srv.deps.live.hub.size).toBe(2);
    const seen: string[] = [];
    const reading = (async () => {
      for (let e = await healthy.next(); e; e = await healthy.next()) seen.push(e.id!);
    })();

    // Pushes of 200 long paths each: about 90 KB of event apiece, until the stalled stream is dropped.
    const paths = Array.from({ length: 200 }, (_, i) => `d/${'x'.repeat(200)}/${'y'.repeat(200)}-${String(i).padStart(3, '0')}.md`);
    let pushes = 0;
    while (srv.deps.live.hub.size === 2) {
      expect(pushes, 'the stalled stream was never dropped').toBeLessThan(400);
      const res = await srv.api('/v1/repos/slow/sync/push', {
        method: 'POST',
        json: { files: paths.map((path) => ({ path, content: `${pushes}\n` })) },
      });
      expect(res.status).toBe(200);
      pushes++;
    }
    // Its connection is gone the moment it left the hub, though its client never read again: no socket, no
    // buffered text and no slot wait on it.
    expect(stalledOnServer.destroyed).toBe(true);
    // The healthy stream got every event, in order.
    await eventually(() => (seen.length === pushes ? true : undefined));
    expect(seen.map(Number)).toEqual(Array.from({ length: pushes }, (_, i) => Number(seen[0]) + i));

    // The stalled client, reading at last, finds the events that reached its socket, in order, then the end.
    sock.on('data', (d: string) => (raw += d));
    sock.resume();
    await new Promise<void>((resolve) => sock.once('close', () => resolve()));
    const got = [...raw.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(got.length).toBeLessThan(pushes);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => Number(seen[0]) + i));
    console.log(`[events] a stalled reader was cut after ${pushes} pushes of ~90 KB events (${got.length} had reached its socket)`);
    sock.destroy();
    await healthy.close();
    await reading;
  }, 240_000);
});

describe('600 streams that never read', () => {
  it('share the bytes of the events they hold (a few MB in all, not a copy each), and are cut once past their buffer', async () => {
    const srv = await server();
    expect((await srv.api('/v1/repos/mem', { method: 'POST' })).status).toBe(201);
    // Opened straight on the hub, their bodies never read: all they are offered stays in their buffers.
    const bodies: ReadableStream<Uint8Array>[] = [];
    for (let i = 0; i < 600; i++) {
      bodies.push(await srv.deps.live.hub.open('mem', { holder: `h${i % 60}`, userId: null, patId: null, token: null }, null));
    }
    expect(srv.deps.live.hub.size).toBe(600);
    const paths = Array.from({ length: 120 }, (_, i) => `d/${'x'.repeat(200)}/${'y'.repeat(200)}-${String(i).padStart(3, '0')}.md`);
    let n = 0;
    const push = async () => {
      const res = await srv.api('/v1/repos/mem/sync/push', { method: 'POST', json: { files: paths.map((path) => ({ path, content: `${n++}\n` })) } });
      expect(res.status).toBe(200);
    };
    await push();
    const before = process.memoryUsage().arrayBuffers;
    // Eight more events of about 55 KB: about 490 KB held by each stream, under its 512 KiB.
    for (let p = 0; p < 8; p++) await push();
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(srv.deps.live.hub.size).toBe(600);
    console.log(`[events] 600 streams holding ~490 KB of events each: array buffers +${(grown / 2 ** 20).toFixed(1)} MiB`);
    // One copy of each event would be 600 × 490 KB, about 280 MB.
    expect(grown).toBeLessThan(32 * 2 ** 20);
    // Past the buffer: every one is cut at once.
    await push();
    expect(srv.deps.live.hub.size).toBe(0);
    await Promise.all(bodies.map((b) => b.cancel().catch(() => undefined)));
  }, 120_000);
});

describe('the server and its streams', () => {
  it('streams whose clients go away leave the hub; stopping the server ends the open ones', async () => {
    const srv = await server();
    expect((await srv.api('/v1/repos/gone', { method: 'POST' })).status).toBe(201);
    const readers = await Promise.all(Array.from({ length: 5 }, () => open(srv, 'gone')));
    expect(srv.deps.live.hub.size).toBe(5);
    for (const r of readers.slice(0, 3)) await r.close();
    await eventually(() => (srv.deps.live.hub.size === 2 ? true : undefined));
    // An aborted request counts as gone too.
    const ctl = new AbortController();
    const res = await srv.api('/v1/repos/gone/events', { signal: ctl.signal });
    expect(res.status).toBe(200);
    expect(srv.deps.live.hub.size).toBe(3);
    ctl.abort();
    await eventually(() => (srv.deps.live.hub.size === 2 ? true : undefined));
    // Stopping the server ends the streams still open: their readers see the end, and stop() returns.
    servers = servers.filter((s) => s !== srv);
    await srv.stop();
    expect(await readers[3]!.rest()).toEqual([]);
    expect(await readers[4]!.rest()).toEqual([]);
    expect(srv.deps.live.hub.size).toBe(0);
  });

  it('a disabled user and an expired session get `revoked` at the next ping', async () => {
    const clock = new ManualClock(Date.now());
    const srv = await server({ clock, env: { SERVICE_EVENTS_PING_MS: '100' } });
    await srv.deps.repos.create('rv');
    const ann = await member(srv, 'rv', 'ann@events.test', 'owner');
    const ben = await member(srv, 'rv', 'ben@events.test');
    const anns = await open(srv, 'rv', ann.token);
    const bens = await open(srv, 'rv', ben.token);
    await srv.deps.users.setDisabled(ben.id, Math.floor(clock.now() / 1000));
    expect((await bens.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
    // Ann's session outlives pings until the server's clock passes its expiry (30 days).
    await anns.untilComments(2);
    clock.advance(31 * 24 * 3600 * 1000);
    expect((await anns.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
    expect(srv.deps.live.hub.size).toBe(0);
  });
});

describe('credentials lost where this process was not told (the admin command, another process)', () => {
  it('a user disabled and a PAT deleted straight in the database: their streams get `revoked` within a second or two, not at the next ping', async () => {
    // The default ping (15 s): the case's timeout (8 s) is below it.
    const srv = await server();
    await srv.deps.repos.create('sw');
    const ann = await member(srv, 'sw', 'ann@sweep.test', 'owner');
    const ben = await member(srv, 'sw', 'ben@sweep.test');
    const annPat = await srv.deps.pats.create(ann.id, { label: 'watch' });
    const anns = await open(srv, 'sw', ann.token);
    const annByPat = await open(srv, 'sw', annPat.token);
    const bens = await open(srv, 'sw', ben.token);
    // As `admin user disable` and a revocation by another process do: rows written, nobody told.
    await srv.deps.users.setDisabled(ben.id, Math.floor(Date.now() / 1000));
    await srv.deps.db.run('DELETE FROM pats WHERE id = ?', [annPat.pat.id]);
    for (const s of [bens, annByPat]) {
      expect((await s.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
    }
    // Ann's session still reads.
    expect(srv.deps.live.hub.size).toBe(1);
    const pushed = (await (await srv.api('/v1/repos/sw/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: 'a\n' }] } })).json()) as any;
    expect((await anns.next())!.data).toContain(pushed.new_head);
    await anns.close();
  }, 8_000);
});

describe('webhook addresses at delivery', () => {
  it('a webhook made while private addresses were allowed is refused at delivery once they are not', async () => {
    const dir = await tempDir('kr-webhook-recheck-');
    try {
      const rx = await startReceiver();
      receivers.push(rx);
      const open = { SERVICE_WEBHOOK_ALLOW_HTTP: '1', SERVICE_WEBHOOK_ALLOW_PRIVATE: '1', SERVICE_WEBHOOK_RETRY_MS: '100' };
      const first = await startTestServer({ dataRoot: dir.path, env: open });
      expect((await first.api('/v1/repos/rc', { method: 'POST' })).status).toBe(201);
      const hook = (await (await first.api('/v1/repos/rc/webhooks', { method: 'POST', json: { url: `${rx.url}/rc` } })).json()) as any;
      await first.stop();

      const strict = await startTestServer({ dataRoot: dir.path, env: { ...open, SERVICE_WEBHOOK_ALLOW_PRIVATE: '' } });
      servers.push(strict);
      expect((await strict.api(`/v1/repos/rc/webhooks/${hook.webhook.id}/test`, { method: 'POST' })).status).toBe(202);
      const [d] = await eventually(async () => {
        const list = ((await (await strict.api(`/v1/repos/rc/webhooks/${hook.webhook.id}/deliveries`)).json()) as any).deliveries;
        return list[0]?.status === 'failed' ? list : undefined;
      });
      expect(d).toMatchObject({ event: 'ping', status: 'failed', attempts: 2, last_error: 'webhook url not allowed: 127.0.0.1 is a loopback address' });
      expect(d.last_status).toBeUndefined();
      expect(rx.received).toEqual([]);
    } finally {
      await dir.cleanup();
    }
  });
});
