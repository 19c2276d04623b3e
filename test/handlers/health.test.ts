import { afterEach, describe, expect, it } from 'vitest';
import health from '../../functions/health.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /health (functions/health.ts)', () => {
  it('answers {"status":"ok"} without a credential', async () => {
    h = await mountHandler(health);
    const res = await h.request('/health');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('is not rate limited even with the limiter on', async () => {
    h = await mountHandler(health, { env: { SERVICE_RATELIMIT_DISABLE: '0', SERVICE_RATELIMIT_BURST: '2' } });
    for (let i = 0; i < 5; i++) expect((await h.request('/health')).status).toBe(200);
  });

  it('another method on the path is 405', async () => {
    h = await mountHandler(health);
    const res = await h.request('/health', { method: 'POST' });
    expect(res.status).toBe(405);
    expect(await res.json()).toEqual({ error: 'method not allowed', code: 'method_not_allowed' });
  });
});
