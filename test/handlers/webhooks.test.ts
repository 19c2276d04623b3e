import { afterEach, describe, expect, it } from 'vitest';
import webhooksCreate from '../../functions/webhooks/create.ts';
import webhooksList from '../../functions/webhooks/list.ts';
import webhooksRemove from '../../functions/webhooks/remove.ts';
import webhooksTest from '../../functions/webhooks/test.ts';
import webhooksDeliveries from '../../functions/webhooks/deliveries.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';
import { eventually, signatureValid, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

let h: MountedHandler | undefined;
let rx: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await rx?.close();
  h = undefined;
  rx = undefined;
});

const ALL = [webhooksCreate, webhooksList, webhooksRemove, webhooksTest, webhooksDeliveries];
const OPEN = { SERVICE_WEBHOOK_ALLOW_HTTP: '1', SERVICE_WEBHOOK_ALLOW_PRIVATE: '1' };

async function team(m: MountedHandler): Promise<{ alice: TestUser; bob: TestUser }> {
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  await m.deps.repos.create('notes');
  await m.deps.members.add('notes', alice.id, 'owner');
  await m.deps.members.add('notes', bob.id, 'member');
  return { alice, bob };
}

describe('POST /v1/repos/:id/webhooks (functions/webhooks/create.ts)', () => {
  it('201 with the webhook and its secret, for an owner; 403 for a member; 409 past 20', async () => {
    h = await mountHandler(webhooksCreate, { env: OPEN });
    const { alice, bob } = await team(h);
    const res = await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/hook', events: ['push'] } });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      webhook: { id: expect.any(String), url: 'http://127.0.0.1:9/hook', events: ['push'], created_at: expect.any(Number) },
      secret: expect.stringMatching(/^whsec_/),
    });
    // The kinds as asked for, each once.
    const both = await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/both', events: ['member', 'push', 'member'] } });
    expect(((await both.json()) as any).webhook.events).toEqual(['member', 'push']);
    const denied = await bob.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/x' } });
    expect([denied.status, await denied.json()]).toEqual([403, { error: 'only an owner can manage webhooks', code: 'owner_only_webhooks' }]);
    for (let i = 2; i < 20; i++) expect((await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: `http://127.0.0.1:9/${i}` } })).status).toBe(201);
    const full = await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/21' } });
    expect([full.status, await full.json()]).toEqual([409, { error: 'too many webhooks (max 20)', code: 'too_many_webhooks' }]);
  });

  it('400 for a URL that is not https, or names a non-public address, unless the server allows it', async () => {
    h = await mountHandler(webhooksCreate);
    const { alice } = await team(h);
    const post = async (url: string) => {
      const r = await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url } });
      return [r.status, await r.json()];
    };
    expect(await post('http://example.com/')).toEqual([400, { error: 'webhook url must use https', code: 'webhook_url_https' }]);
    expect(await post('https://192.168.0.10/')).toEqual([400, { error: 'webhook url not allowed: 192.168.0.10 is a private address', code: 'webhook_url_not_allowed' }]);
    expect(await post('https://localhost/')).toEqual([400, { error: 'webhook url not allowed: localhost resolves to a non-public address', code: 'webhook_url_not_allowed' }]);
    expect(await post('https://[::a00:1]/')).toEqual([400, { error: 'webhook url not allowed: [::a00:1] is an IPv4-compatible address (10.0.0.1)', code: 'webhook_url_not_allowed' }]);
  });
});

describe('GET /v1/repos/:id/webhooks (functions/webhooks/list.ts)', () => {
  it('the webhooks, oldest first, without secrets, to any member', async () => {
    h = await mountHandler([webhooksCreate, webhooksList], { env: OPEN });
    const { alice, bob } = await team(h);
    const made = (await (await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/a' } })).json()) as any;
    const res = await bob.request('/v1/repos/notes/webhooks');
    expect([res.status, await res.json()]).toEqual([200, { webhooks: [made.webhook] }]);
  });
});

describe('DELETE /v1/repos/:id/webhooks/:wid (functions/webhooks/remove.ts)', () => {
  it('204, then 404 `webhook not found`', async () => {
    h = await mountHandler([webhooksCreate, webhooksRemove, webhooksList], { env: OPEN });
    const { alice } = await team(h);
    const made = (await (await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/a' } })).json()) as any;
    expect((await alice.request(`/v1/repos/notes/webhooks/${made.webhook.id}`, { method: 'DELETE' })).status).toBe(204);
    const again = await alice.request(`/v1/repos/notes/webhooks/${made.webhook.id}`, { method: 'DELETE' });
    expect([again.status, await again.json()]).toEqual([404, { error: 'webhook not found', code: 'webhook_not_found' }]);
    expect(await (await alice.request('/v1/repos/notes/webhooks')).json()).toEqual({ webhooks: [] });
  });
});

describe('POST /v1/repos/:id/webhooks/:wid/test and GET …/deliveries (functions/webhooks/test.ts, deliveries.ts)', () => {
  it('202, a signed `ping` POST to the receiver, and the delivery listed as delivered', async () => {
    rx = await startReceiver();
    h = await mountHandler(ALL, { env: OPEN });
    const { alice } = await team(h);
    const made = (await (await alice.request('/v1/repos/notes/webhooks', { method: 'POST', json: { url: `${rx.url}/h` } })).json()) as any;
    const wid = made.webhook.id;
    const res = await alice.request(`/v1/repos/notes/webhooks/${wid}/test`, { method: 'POST' });
    expect([res.status, await res.text()]).toEqual([202, '']);
    const [got] = await rx.waitFor('/h', 1);
    expect(JSON.parse(got!.raw)).toEqual({ repo_id: 'notes', webhook_id: wid, event: 'ping', delivery_id: got!.headers['x-kr-delivery'] });
    expect(signatureValid(got!.headers['x-kr-signature'], got!.raw, made.secret)).toBe(true);
    const list = await eventually(async () => {
      const body = (await (await alice.request(`/v1/repos/notes/webhooks/${wid}/deliveries`)).json()) as any;
      return body.deliveries[0]?.status === 'delivered' ? body.deliveries : undefined;
    });
    expect(list).toEqual([
      { id: got!.headers['x-kr-delivery'], event: 'ping', status: 'delivered', attempts: 1, last_status: 200, created_at: expect.any(Number) },
    ]);
    const unknown = await alice.request('/v1/repos/notes/webhooks/nope/deliveries');
    expect([unknown.status, await unknown.json()]).toEqual([404, { error: 'webhook not found', code: 'webhook_not_found' }]);
    const unknownTest = await alice.request('/v1/repos/notes/webhooks/nope/test', { method: 'POST' });
    expect([unknownTest.status, await unknownTest.json()]).toEqual([404, { error: 'webhook not found', code: 'webhook_not_found' }]);
  });
});
