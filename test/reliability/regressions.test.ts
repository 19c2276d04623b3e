import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/env.ts';
import { rawExchange } from './helpers/http-client.ts';

/** Bugs the reliability suite found, pinned down one by one. */

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => srv?.stop());

const logged = () => srv.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('a request body that breaks off', () => {
  it('is a 400 `request body incomplete`, not an unhandled error logged as a 500 (lib/framework/http/body-limit.ts)', async () => {
    const url = new URL(srv.url);
    const before = srv.logs.length;
    // Valid headers, then a chunk size that is not hex: Node's parser aborts the body mid-read.
    const req =
      `POST /v1/repos/r/sync/push HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer test-legacy-key\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n';
    const res = await rawExchange(url.hostname, Number(url.port), new TextEncoder().encode(req));
    expect(res.statuses.every((s) => s < 500)).toBe(true);
    // The log line is written once the handler chain has finished.
    for (let i = 0; i < 50 && !logged().slice(before).some((e) => e.event === 'request'); i++) await new Promise((r) => setTimeout(r, 20));
    const events = logged().slice(before);
    expect(events.filter((e) => e.level === 'error')).toEqual([]);
    expect(events.filter((e) => e.event === 'request').map((e) => e.status)).toEqual([400]);
    expect(await srv.deps.repos.exists('r')).toBe(false);
  });

  it('a complete chunked body still works', async () => {
    const url = new URL(srv.url);
    const body = '{"files":[{"path":"a.md","content":"x"}]}';
    const req =
      `POST /v1/repos/r/sync/push HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer test-legacy-key\r\n` +
      `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const res = await rawExchange(url.hostname, Number(url.port), new TextEncoder().encode(req));
    expect(res.statuses).toEqual([200]);
  });
});
