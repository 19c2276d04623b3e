/**
 * 200 open event streams on one Node server (a real server process): every push reaches every stream, in
 * order; and the figures of benchmark row W13 — how long a push takes to reach all of them (p50/p95, from the
 * push's answer and from its request) and what an idle stream costs the server (its memory growth over 200
 * streams, after a garbage collection: bench/mem-probe.mjs). The streams are read off raw sockets, so that
 * the client's own parsing weighs as little as possible on the figures. They are printed, never asserted:
 * speed is the benchmark's business.
 *
 * Then 600 streams whose clients never read (docs/api.md "Live events"): open, and as pushes pile events
 * up for them, the server's RSS (after a collection) stays under 150 MB above the idle server's — asserted (a
 * bound on memory, not on speed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { call, spawnServer, PROJECT_ROOT, type ServerProc } from './reliability/helpers/server-process.ts';

const STREAMS = 200;
const USERS = STREAMS / 10;
const PUSHES = 20;
/** Streams that never read, ten per user in one repository (the caps: 10 per repository, 50 in all). */
const STALLED = 600;
/** What those may cost the server, above its RSS with none open. */
const STALLED_RSS_BOUND = 150 * 2 ** 20;
/** Pushes of ~90 KB events while they are open: 720 KB for each (most of it lands in the sockets' kernel buffers). */
const STALLED_PUSHES = 8;

let idp: IdpStandIn;
let dir: { path: string; cleanup: () => Promise<void> };
let server: ServerProc;

beforeAll(async () => {
  idp = await startIdp();
  dir = await tempDir('kr-events-load-');
  server = await spawnServer({
    dataRoot: join(dir.path, 'data'),
    env: {
      IDP_OAUTH_CLIENT_ID: idp.clientId,
      IDP_JWKS_URL: idp.jwksUrl,
      IDP_ISSUERS: idp.issuer,
      NODE_OPTIONS: `--expose-gc --import=${join(PROJECT_ROOT, 'bench', 'mem-probe.mjs')}`,
      KR_BENCH_GC: '1',
    },
  });
}, 60_000);
afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await dir?.cleanup();
});

/** The server's memory after a full collection (bench/mem-probe.mjs answers SIGUSR2 with one JSON line). */
async function memory(): Promise<{ rss: number; heapUsed: number; external: number }> {
  const seen = server.lines.length;
  process.kill(server.pid, 'SIGUSR2');
  for (;;) {
    const line = server.lines.slice(seen).find((l) => l.includes('"bench_memory"'));
    if (line) return JSON.parse(line) as { rss: number; heapUsed: number; external: number };
    await new Promise((r) => setTimeout(r, 20));
  }
}
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const ms = (x: number) => Math.round(x * 10) / 10;
const kib = (bytes: number) => (bytes / 1024).toFixed(1);

async function signIn(i: number): Promise<string> {
  const idToken = await idp.signIdToken({ sub: `load-${i}`, email: `load${i}@events.test`, name: `Load ${i}` });
  const res = await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
  return ((await res.json()) as { access_token: string }).access_token;
}

/** A stream read off a raw socket: what has arrived and when, and a wait for a text (with when it arrived). */
interface RawStream {
  socket: Socket;
  text: string;
  until(needle: string): Promise<number>;
}

/** A stream whose client takes the response head, then never reads again (its socket paused). */
async function openStalled(token: string, repo: string): Promise<Socket> {
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.setEncoding('latin1');
  let head = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: string) => {
      head += d;
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      resolve();
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET /v1/repos/${repo}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  });
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  return socket;
}

async function open(token: string): Promise<RawStream> {
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.setEncoding('utf8');
  // When each piece arrived: [time, length of the text once it had].
  const arrivals: Array<[number, number]> = [];
  const waiting: Array<{ needle: string; resolve: (at: number) => void }> = [];
  const arrivedAt = (needle: string): number | null => {
    const at = s.text.indexOf(needle);
    if (at < 0) return null;
    return arrivals.find(([, end]) => end >= at + needle.length)![0];
  };
  const s: RawStream = {
    socket,
    text: '',
    until: (needle) => {
      const at = arrivedAt(needle);
      return at !== null ? Promise.resolve(at) : new Promise((resolve) => waiting.push({ needle, resolve }));
    },
  };
  socket.on('data', (d: string) => {
    s.text += d;
    arrivals.push([performance.now(), s.text.length]);
    for (const w of [...waiting]) {
      const at = arrivedAt(w.needle);
      if (at !== null) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(at);
      }
    }
  });
  socket.write(`GET /v1/repos/load/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  await s.until('\r\n\r\n');
  expect(s.text).toMatch(/^HTTP\/1\.1 200 /);
  return s;
}

describe('200 open event streams', () => {
  it('every push reaches all of them, in order; W13: time to reach them all, memory per idle stream', async () => {
    const tokens = await Promise.all(Array.from({ length: USERS }, (_, i) => signIn(i)));
    expect((await call(server.url, '/v1/repos', { method: 'POST', token: tokens[0]!, json: { id: 'load' } })).status).toBe(201);
    for (const token of tokens.slice(1)) {
      const key = (await (await call(server.url, '/v1/repos/load/invite-keys', { method: 'POST', token: tokens[0]!, json: {} })).json()) as { token: string };
      expect((await call(server.url, '/v1/repos/join', { method: 'POST', token, json: { key: key.token } })).status).toBe(200);
    }
    // Warm the paths a stream takes (and its first push), so that the memory figure is the streams' own.
    const warm = await Promise.all(tokens.slice(0, 5).map(open));
    const warmed = await call(server.url, '/v1/repos/load/sync/push', { method: 'POST', token: tokens[0]!, json: { files: [{ path: 'warm.md', content: 'w\n' }] } });
    const warmSha = ((await warmed.json()) as { new_head: string }).new_head;
    await Promise.all(warm.map((w) => w.until(warmSha)));
    for (const w of warm) w.socket.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const before = await memory();

    const streams: RawStream[] = [];
    for (const token of tokens) for (let k = 0; k < 10; k++) streams.push(await open(token));
    await new Promise((r) => setTimeout(r, 300));
    const after = await memory();

    const fromAnswer: number[] = [];
    const fromRequest: number[] = [];
    const lastFromAnswer: number[] = [];
    for (let p = 0; p < PUSHES; p++) {
      const sent = performance.now();
      const res = await call(server.url, '/v1/repos/load/sync/push', {
        method: 'POST',
        token: tokens[p % USERS]!,
        json: { files: [{ path: `p${p}.md`, content: `${p}\n` }] },
      });
      const answered = performance.now();
      const sha = ((await res.json()) as { new_head: string }).new_head;
      const arrived = await Promise.all(streams.map((s) => s.until(sha)));
      for (const at of arrived) {
        fromAnswer.push(at - answered);
        fromRequest.push(at - sent);
      }
      lastFromAnswer.push(Math.max(...arrived) - answered);
    }
    // Every stream got every push, in order, under increasing ids.
    for (const s of streams) {
      const ids = [...s.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(ids).toHaveLength(PUSHES);
      expect(ids).toEqual(Array.from({ length: PUSHES }, (_, i) => ids[0]! + i));
    }
    const per = (k: 'rss' | 'heapUsed' | 'external') => (after[k] - before[k]) / STREAMS;
    console.log(
      `[events] W13: ${STREAMS} streams, ${PUSHES} pushes — a stream has the push p50 ${ms(quantile(fromAnswer, 0.5))} ms / ` +
        `p95 ${ms(quantile(fromAnswer, 0.95))} ms after the push's answer (negative: before it; p50 ${ms(quantile(fromRequest, 0.5))} / p95 ` +
        `${ms(quantile(fromRequest, 0.95))} ms after its request); all ${STREAMS} have it p50 ${ms(quantile(lastFromAnswer, 0.5))} / ` +
        `p95 ${ms(quantile(lastFromAnswer, 0.95))} ms after the answer. Per idle stream: RSS ${kib(per('rss'))} KiB, heap ` +
        `${kib(per('heapUsed'))} KiB, external ${kib(per('external'))} KiB (server RSS ${Math.round(before.rss / 2 ** 20)} → ` +
        `${Math.round(after.rss / 2 ** 20)} MiB)`,
    );
    for (const s of streams) s.socket.destroy();
  }, 180_000);
});

describe('600 streams whose clients never read', () => {
  it(`cost the server under ${STALLED_RSS_BOUND / 2 ** 20} MB of RSS above the idle server, open and as events pile up for them`, async () => {
    const users = STALLED / 10;
    const tokens = await Promise.all(Array.from({ length: users }, (_, i) => signIn(1000 + i)));
    const owner = tokens[0]!;
    expect((await call(server.url, '/v1/repos', { method: 'POST', token: owner, json: { id: 'stalled' } })).status).toBe(201);
    for (const token of tokens.slice(1)) {
      const key = (await (await call(server.url, '/v1/repos/stalled/invite-keys', { method: 'POST', token: owner, json: {} })).json()) as { token: string };
      expect((await call(server.url, '/v1/repos/join', { method: 'POST', token, json: { key: key.token } })).status).toBe(200);
    }
    // Warm the push path with events of the size used below, so that the figure is the streams' own.
    const paths = Array.from({ length: 200 }, (_, i) => `d/${'x'.repeat(200)}/${'y'.repeat(200)}-${String(i).padStart(3, '0')}.md`);
    let n = 0;
    const push = async () => {
      const res = await call(server.url, '/v1/repos/stalled/sync/push', {
        method: 'POST',
        token: owner,
        json: { files: paths.map((path) => ({ path, content: `${n++}\n` })) },
      });
      expect(res.status).toBe(200);
    };
    await push();
    await new Promise((r) => setTimeout(r, 300));
    const idle = await memory();

    const sockets: Socket[] = [];
    for (const token of tokens) for (let k = 0; k < 10; k++) sockets.push(await openStalled(token, 'stalled'));
    const opened = await memory();
    // Pushes of about 90 KB of event each, reaching all 600: the most the server holds at any of them.
    let peak = opened;
    for (let p = 0; p < STALLED_PUSHES; p++) {
      await push();
      const m = await memory();
      if (m.rss > peak.rss) peak = m;
    }
    for (const s of sockets) s.destroy();

    const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
    console.log(
      `[events] ${STALLED} streams that never read: server RSS idle ${mib(idle.rss)} MiB, with them open ${mib(opened.rss)} MiB ` +
        `(${kib((opened.rss - idle.rss) / STALLED)} KiB each), at most ${mib(peak.rss)} MiB (+${mib(peak.rss - idle.rss)} MiB, ` +
        `heap ${mib(peak.heapUsed)} MiB, external ${mib(peak.external)} MiB) over ${STALLED_PUSHES} pushes of ~90 KB events`,
    );
    expect(opened.rss - idle.rss).toBeLessThan(STALLED_RSS_BOUND);
    expect(peak.rss - idle.rss).toBeLessThan(STALLED_RSS_BOUND);
  }, 300_000);
});
