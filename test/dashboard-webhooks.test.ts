/**
 * The Webhooks panel of a repository's settings in a real browser: an owner adds a webhook
 * (its signing secret shown once, and it signs the deliveries), sends a test ping and reads the recent
 * deliveries (delivered; a failing receiver's HTTP status and `failed`), removes one after a confirm step; the
 * server's refusal shown readably; a member sees the list only. A real receiver on loopback; axe-core clean.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator } from 'playwright-core';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';
import { signatureValid, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

warnIfNoChromium('test/dashboard-webhooks.test.ts');

describe.skipIf(!hasChromium)('the webhooks panel in chromium', () => {
  let h: DashboardHarness;
  let alice: SignedUp;
  let bob: SignedUp;
  let receiver: Receiver;

  const json = async <T,>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    expect(res.status, text).toBe(status);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const go = async (hash: string, heading: string) => {
    await h.page.evaluate((to) => {
      location.hash = to;
    }, hash);
    await h.page.reload();
    await h.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  };
  const hooks = () => h.page.getByRole('table', { name: 'Webhooks of acme' });
  const row = (table: Locator, text: string) => table.getByRole('row').filter({ hasText: text });
  const listed = async () =>
    (await json<{ webhooks: { id: string; url: string; events: string[] }[] }>(await h.srv.api('/v1/repos/acme/webhooks', { token: alice.session }), 200)).webhooks;
  /** Presses Refresh until the deliveries table's first row says `status` (the test's timeout bounds it). */
  const refreshUntil = async (url: string, status: string): Promise<string> => {
    const table = h.page.getByRole('table', { name: `Deliveries to ${url}` });
    for (;;) {
      await h.page.getByRole('button', { name: 'Refresh the deliveries' }).click();
      if ((await table.count()) > 0) {
        const text = (await table.getByRole('row').nth(1).textContent()) ?? '';
        if (text.includes(status)) return text;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    receiver.answer = (req) => ({ status: req.path === '/broken' ? 500 : 200 });
    h = await startDashboard({ env: { SERVICE_WEBHOOK_ALLOW_HTTP: '1', SERVICE_WEBHOOK_ALLOW_PRIVATE: '1', SERVICE_WEBHOOK_RETRY_MS: '100' } });
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    await json(await h.srv.api('/v1/repos', { method: 'POST', token: alice.session, json: { id: 'acme' } }), 201);
    const invite = await json<{ token: string }>(await h.srv.api('/v1/repos/acme/invite-keys', { method: 'POST', token: alice.session, json: {} }), 201);
    await json(await h.srv.api('/v1/repos/join', { method: 'POST', token: bob.session, json: { key: invite.token } }), 200);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('an owner adds a webhook (the secret shown once signs the deliveries), tests it and reads its deliveries', async () => {
    const { page } = h;
    await h.signInWithToken(alice.pat);
    await go('#/repo/acme/settings', 'Settings of acme');
    await page.getByText('No webhooks. Add one above.').waitFor();
    expect(await page.getByText('X-KR-Signature').first().isVisible()).toBe(true);

    await page.getByLabel('Receiver URL').fill(`${receiver.url}/hook`);
    await page.getByLabel('Member changes').uncheck();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secretField = page.getByLabel('Signing secret', { exact: true });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(await page.getByText('Copy it now: it will not be shown again.').isVisible()).toBe(true);
    await row(hooks(), `${receiver.url}/hook`).waitFor();
    expect(await row(hooks(), `${receiver.url}/hook`).textContent()).toContain('push');
    const [added] = await listed();
    expect(added).toMatchObject({ url: `${receiver.url}/hook`, events: ['push'] });
    await h.shot('webhooks-added');
    expect(await h.axe()).toEqual([]);
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    expect(await secretField.count()).toBe(0);

    await page.getByRole('button', { name: `Deliveries of the webhook to ${receiver.url}/hook` }).click();
    await page.getByText('No deliveries yet.').waitFor();
    await page.getByRole('button', { name: 'Send a test ping' }).click();
    const [ping] = await receiver.waitFor('/hook', 1);
    expect(ping!.headers['x-kr-event']).toBe('ping');
    // The secret the panel showed is the one that signs.
    expect(signatureValid(ping!.headers['x-kr-signature'], ping!.raw, secret)).toBe(true);
    const deliveredRow = await refreshUntil(`${receiver.url}/hook`, 'delivered');
    expect(deliveredRow).toMatch(/^pingdelivered1200/);
    await h.shot('webhooks-deliveries');
    expect(await h.axe()).toEqual([]);
  }, 120_000);

  it('a failing receiver: its HTTP status and failed; remove after a confirm step; a refusal shown readably', async () => {
    const { page } = h;
    await page.getByLabel('Receiver URL').fill(`${receiver.url}/broken`);
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await row(hooks(), `${receiver.url}/broken`).waitFor();
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    await page.getByRole('button', { name: `Deliveries of the webhook to ${receiver.url}/broken` }).click();
    await page.getByRole('button', { name: 'Send a test ping' }).click();
    // Tried, retried once after 100 ms (SERVICE_WEBHOOK_RETRY_MS), then failed.
    const failedRow = await refreshUntil(`${receiver.url}/broken`, 'failed');
    expect(failedRow).toMatch(/^pingfailed2500/);
    await h.shot('webhooks-failed');

    await row(hooks(), `${receiver.url}/broken`).getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('button', { name: 'Yes, remove' }).click();
    await page.getByText(`Removed the webhook to ${receiver.url}/broken.`).waitFor();
    expect((await listed()).map((w) => w.url)).toEqual([`${receiver.url}/hook`]);
    // The list is loaded again after the removal: its row goes once that answer is rendered.
    await expect.poll(() => row(hooks(), '/broken').count()).toBe(0);

    await page.getByLabel('Receiver URL').fill('ftp://hooks.example.com/x');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByText('Not added: webhook url must use https').waitFor();
    expect(await listed()).toHaveLength(1);
  }, 120_000);

  it('a member sees the webhooks, offered nothing an owner alone may do', async () => {
    const { page } = h;
    await h.signInWithToken(bob.pat);
    await go('#/repo/acme/settings', 'Settings of acme');
    await row(hooks(), `${receiver.url}/hook`).waitFor();
    expect(await page.getByText('Only an owner of acme adds, tests and removes webhooks and sees their deliveries.').isVisible()).toBe(true);
    expect(await page.getByLabel('Receiver URL').count()).toBe(0);
    // Nothing offered that the server would refuse a member (deliveries and tests are owners' routes).
    expect(await row(hooks(), `${receiver.url}/hook`).getByRole('button').count()).toBe(0);
    expect(await row(hooks(), `${receiver.url}/hook`).textContent()).toContain('owners only');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await h.axe()).toEqual([]);
  }, 60_000);
});
