/**
 * `kr webhooks` against the real server (port 0) with a real receiver on loopback: add (the
 * secret printed once, and how to verify it), list, test (a signed ping arrives), deliveries (delivered, and a
 * receiver that fails: its status and the error), remove; each with --json; and the refusals (bad usage exits
 * 2 before any request; the server's refusals exit 1 with its message).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { eventually, signatureValid, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

let server: TestServer;
let root: { path: string; cleanup: () => Promise<void> };
let alice: KrUser;
let receiver: Receiver;

const json = (r: { stdout: string }) => JSON.parse(r.stdout);

beforeAll(async () => {
  // Deliveries to loopback over http (the receiver), and one quick retry, so that a failing receiver's
  // delivery ends `failed` within the test.
  server = await startTestServer({ env: { SERVICE_WEBHOOK_ALLOW_HTTP: '1', SERVICE_WEBHOOK_ALLOW_PRIVATE: '1', SERVICE_WEBHOOK_RETRY_MS: '100' } });
  root = await tempDir('kr-cli-webhooks-');
  receiver = await startReceiver();
  receiver.answer = (req) => ({ status: req.path === '/broken' ? 500 : 200 });
  alice = await krUser(root.path, 'alice');
  expect((await alice.kr('login', '--server', server.url, '--token', 'test-legacy-key')).code).toBe(0);
  expect((await alice.kr('init', '--repo', 'hooks', '--no-mcp')).code).toBe(0);
  await alice.write('wiki/concepts/a.md', '---\ntitle: A\ntype: concept\n---\n# A\n');
  expect((await alice.kr('push')).code).toBe(0);
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await server?.stop();
  await root?.cleanup();
});

describe('kr webhooks', () => {
  it('add prints the secret once with how to verify it; list shows no secret; test delivers a signed ping; deliveries; remove', async () => {
    const added = await alice.kr('webhooks', 'add', `${receiver.url}/hook`, '--events', 'push', '--json');
    expect(added.code, show(added)).toBe(0);
    const { webhook, secret } = json(added);
    expect(webhook).toMatchObject({ url: `${receiver.url}/hook`, events: ['push'] });
    expect(secret).toMatch(/^whsec_/);

    const text = await alice.kr('webhooks', 'add', `${receiver.url}/broken`);
    expect(text.code, show(text)).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^Added webhook [0-9a-f-]{36} to hooks: ${receiver.url}/broken \\(push, member\\)\\.$`));
    expect(lines[1]).toBe('Secret (shown only this once; keep it with the receiver):');
    expect(lines[2]).toMatch(/^ {2}whsec_\S+$/);
    expect(text.stdout).toContain('X-KR-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>');
    expect(text.stdout).toContain('refuses a t more than 5 minutes from its clock');
    const brokenId = /Added webhook (\S+)/.exec(text.stdout)![1]!;

    const listed = await alice.kr('webhooks', 'list', '--json');
    expect(listed.code, show(listed)).toBe(0);
    expect(json(listed).webhooks.map((w: { id: string }) => w.id).sort()).toEqual([webhook.id, brokenId].sort());
    expect(listed.stdout).not.toContain('whsec_');
    const table = await alice.kr('webhooks');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +EVENTS +CREATED +URL$/);
    expect(table.stdout).toContain(`push   `);
    expect(table.stdout).toContain(`${receiver.url}/broken`);
    expect(table.stdout).not.toContain('whsec_');

    const tested = await alice.kr('webhooks', 'test', webhook.id, '--json');
    expect(tested.code, show(tested)).toBe(0);
    expect(json(tested)).toEqual({ webhook_id: webhook.id, queued: true });
    const [ping] = await receiver.waitFor('/hook', 1);
    expect(ping!.headers['x-kr-event']).toBe('ping');
    expect(signatureValid(ping!.headers['x-kr-signature'], ping!.raw, secret)).toBe(true);
    const delivered = await eventually(async () => {
      const d = json(await alice.kr('webhooks', 'deliveries', webhook.id, '--json')).deliveries;
      return d[0]?.status === 'delivered' ? d : undefined;
    });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ event: 'ping', status: 'delivered', attempts: 1, last_status: 200 });

    // A receiver answering 500: tried, retried once (SERVICE_WEBHOOK_RETRY_MS), then failed, with its status.
    expect((await alice.kr('webhooks', 'test', brokenId)).stdout).toBe(`Queued a ping to webhook ${brokenId}; "kr webhooks deliveries ${brokenId}" shows how it went.\n`);
    await eventually(async () => {
      const d = json(await alice.kr('webhooks', 'deliveries', brokenId, '--json')).deliveries;
      return d[0]?.status === 'failed' ? d : undefined;
    });
    const failed = await alice.kr('webhooks', 'deliveries', brokenId, '--limit', '5');
    expect(failed.code, show(failed)).toBe(0);
    const [head, row] = failed.stdout.split('\n');
    expect(head).toMatch(/^CREATED +EVENT +STATUS +ATTEMPTS +HTTP +ERROR$/);
    expect(row).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +ping +failed +2 +500 +\S/);

    const removed = await alice.kr('webhooks', 'remove', brokenId, '--json');
    expect(removed.code, show(removed)).toBe(0);
    expect(json(removed)).toEqual({ removed: brokenId });
    expect(json(await alice.kr('webhooks', '--json')).webhooks.map((w: { id: string }) => w.id)).toEqual([webhook.id]);
    const again = await alice.kr('webhooks', 'remove', brokenId, '--json');
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr)).toEqual({ error: 'webhook not found', code: 'not_found' });
  }, 60_000);

  it('refusals: bad usage exits 2 before any request; the server refusing exits 1 with its message', async () => {
    const before = server.logs.length;
    const events = await alice.kr('webhooks', 'add', 'https://hooks.example.com/x', '--events', 'push,pull');
    expect(events.code).toBe(2);
    expect(events.stderr).toContain('unknown event "pull" in --events (expected push, member)');
    const limit = await alice.kr('webhooks', 'deliveries', 'x', '--limit', '0');
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be an integer greater than zero, not "0"');
    expect(server.logs.slice(before).filter((l) => l.includes('/webhooks'))).toEqual([]);
    const scheme = await alice.kr('webhooks', 'add', 'ftp://hooks.example.com/x', '--json');
    expect(scheme.code).toBe(1);
    expect(JSON.parse(scheme.stderr)).toEqual({ error: 'webhook url must use https', code: 'bad_request' });
  });
});
