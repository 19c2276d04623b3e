/**
 * Memory ceiling under stalled uploads: the real server as its own process,
 * 200 connections each declaring an 8 MiB push and sending 64 KiB of it, then nothing. They come from four
 * users at four addresses (X-Forwarded-For from the trusted loopback), so that together they can fill the
 * in-flight ceiling (one client address or identity holds a quarter of it at most). The server's peak RSS
 * (VmHWM, /proc/<pid>/status) must stay under 300 MiB, /health must keep answering, and every stalled
 * upload must be answered: 503 `server busy` for those past the ceiling or their client's share (the
 * default 32 MiB = 4 such bodies, one a client), 408 `request body timeout` for the 4 it took, once idle
 * for SERVICE_BODY_IDLE_TIMEOUT_MS (3 s here, 30 s by default).
 *
 * Then the same ceiling with bodies that do arrive: 24 whole 8 MiB bodies at once from the same four
 * clients, each read, decoded and parsed (a push whose `files` is not an array: 400 once parsed). At most 4
 * are held at a time; the rest get 503. Peak RSS again under 300 MiB (VmHWM reset in between through
 * /proc/<pid>/clear_refs).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, spawnServer, type ServerProc } from '../reliability/helpers/server-process.ts';
import { tempDir } from '../helpers/env.ts';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { head, rawRequest, type RawResponse } from './helpers/raw-http.ts';

const MIB = 1024 * 1024;
const UPLOADS = 200;
const DECLARED = 8 * MIB;
const SENT = 64 * 1024;
const IDLE_MS = 3000;
/** The default ceiling (SERVICE_MAX_INFLIGHT_BODY_BYTES unset) and how many declared uploads it holds. */
const CEILING = 32 * MIB;
const SLOTS = CEILING / DECLARED;

/** The clients: a session token and an address each (see the file comment). */
interface Client {
  token: string;
  ip: string;
}

/** The head of a push by `clients[i]` declaring `length` bytes, into a repository of its own (created by the push). */
function pushHead(clients: Client[], i: number, length: number): string {
  const client = clients[i]!;
  return head('POST', `/v1/repos/mem-${i}/sync/push`, {
    Authorization: `Bearer ${client.token}`,
    'X-Forwarded-For': client.ip,
    'Content-Type': 'application/json',
    'Content-Length': length,
  });
}

/** Resets the process's VmHWM to its current RSS (Linux ≥ 4.0); false when not permitted. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function procStatus(pid: number): { rssKiB: number; hwmKiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1]);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

describe.skipIf(process.platform !== 'linux')('200 stalled 8 MiB uploads', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let srv: ServerProc;
  let idp: IdpStandIn;
  const clients: Client[] = [];
  beforeAll(async () => {
    dir = await tempDir('kr-memory-');
    idp = await startIdp();
    srv = await spawnServer({
      dataRoot: dir.path,
      env: { SERVICE_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS), IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
    });
    for (let i = 0; i < SLOTS; i++) {
      const idToken = await idp.signIdToken({ sub: `mem-${i}`, email: `mem-${i}@example.com` });
      const res = await call(srv.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(res.status).toBe(200);
      clients.push({ token: ((await res.json()) as { access_token: string }).access_token, ip: `198.51.100.${i + 1}` });
    }
  }, 60_000);
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    await dir?.cleanup();
  });

  it('keep the server under 300 MiB, /health answering, and are all answered (503 past the ceiling, 408 when idle)', async () => {
    const created = await call(srv.url, '/v1/repos/mem/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: '# A\n' }] } });
    expect(created.status).toBe(200);
    const before = procStatus(srv.pid);

    // Samplers: RSS every 50 ms, /health back to back.
    let sampling = true;
    let maxRssKiB = before.rssKiB;
    const sampler = (async () => {
      while (sampling) {
        maxRssKiB = Math.max(maxRssKiB, procStatus(srv.pid).rssKiB);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const health: Array<{ status: number; ms: number }> = [];
    const prober = (async () => {
      while (sampling) {
        const t = performance.now();
        const res = await fetch(`${srv.url}/health`);
        await res.text();
        health.push({ status: res.status, ms: performance.now() - t });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const started = performance.now();
    const prefix = Buffer.from('{"files":[{"path":"big.md","content":"');
    const body = Buffer.concat([prefix, Buffer.alloc(SENT - prefix.length, 120)]);
    const uploads = Array.from({ length: UPLOADS }, (_, i) => rawRequest(srv.url, pushHead(clients, i % SLOTS, DECLARED), body));
    const answers: RawResponse[] = await Promise.all(uploads.map((u) => u.response));
    const allAnsweredMs = performance.now() - started;
    // A little more sampling after the last answer, then stop.
    await new Promise((r) => setTimeout(r, 200));
    sampling = false;
    await Promise.all([sampler, prober]);
    for (const u of uploads) u.destroy();
    const after = procStatus(srv.pid);

    const busy = answers.filter((a) => a.status === 503);
    const idle = answers.filter((a) => a.status === 408);
    const healthMs = health.map((h) => h.ms).sort((x, y) => x - y);
    const healthMax = healthMs[healthMs.length - 1]!;
    const healthMedian = healthMs[Math.floor(healthMs.length / 2)]!;
    console.log(
      `[security] ${UPLOADS} stalled uploads (${DECLARED} declared, ${SENT} sent each): ` +
        `RSS before ${(before.rssKiB / 1024).toFixed(1)} MiB, max sampled ${(maxRssKiB / 1024).toFixed(1)} MiB, ` +
        `VmHWM ${(after.hwmKiB / 1024).toFixed(1)} MiB; answers ${busy.length} x 503, ${idle.length} x 408, ` +
        `all within ${Math.round(allAnsweredMs)} ms; /health ${health.length} probes, ` +
        `all 200: ${health.every((h) => h.status === 200)}, median ${healthMedian.toFixed(1)} ms, max ${healthMax.toFixed(1)} ms; ` +
        `machine load ${loadavg()[0]!.toFixed(2)}`,
    );

    for (const a of busy) {
      expect(a.body).toBe('{"error":"server busy","code":"server_busy"}');
      expect(a.headers['retry-after']).toBe('5');
    }
    for (const a of idle) {
      expect(a.body).toBe('{"error":"request body timeout","code":"body_timeout"}');
      expect(a.headers.connection).toBe('close');
    }
    expect(busy.length + idle.length).toBe(UPLOADS);
    // The ceiling holds exactly SLOTS declared 8 MiB bodies.
    expect(idle.length).toBe(SLOTS);
    expect(busy.length).toBe(UPLOADS - SLOTS);
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((h) => h.status === 200)).toBe(true);
    expect(after.hwmKiB).toBeLessThan(300 * 1024);
    expect(srv.alive()).toBe(true);
  }, 60_000);

  it('whole 8 MiB bodies arriving at once: the ceiling bounds the bytes held, RSS stays under 300 MiB', async () => {
    const reset = resetPeak(srv.pid);
    const before = procStatus(srv.pid);
    const prefix = Buffer.from('{"files":"');
    const body = Buffer.concat([prefix, Buffer.alloc(DECLARED - prefix.length - 2, 120), Buffer.from('"}')]);
    const started = performance.now();
    const uploads = Array.from({ length: 24 }, (_, i) => rawRequest(srv.url, pushHead(clients, i % SLOTS, body.length), body));
    const answers = await Promise.all(uploads.map((u) => u.response));
    const ms = performance.now() - started;
    for (const u of uploads) u.destroy();
    const after = procStatus(srv.pid);
    const parsed = answers.filter((a) => a.status === 400);
    const busy = answers.filter((a) => a.status === 503);
    console.log(
      `[security] 24 whole ${DECLARED}-byte bodies at once: RSS before ${(before.rssKiB / 1024).toFixed(1)} MiB, ` +
        `peak ${(after.hwmKiB / 1024).toFixed(1)} MiB (VmHWM${reset ? ', reset before' : ', process lifetime'}); ` +
        `${parsed.length} x 400 (read and parsed), ${busy.length} x 503; ${Math.round(ms)} ms`,
    );
    for (const a of parsed) expect(a.body).toBe('{"error":"invalid request: files: expected array","code":"invalid_request"}');
    for (const a of busy) expect(a.body).toBe('{"error":"server busy","code":"server_busy"}');
    expect(parsed.length + busy.length).toBe(24);
    expect(parsed.length).toBeGreaterThanOrEqual(SLOTS);
    expect(after.hwmKiB).toBeLessThan(300 * 1024);
    expect((await fetch(`${srv.url}/health`)).status).toBe(200);
  }, 60_000);
});
