import { afterEach, describe, expect, it } from 'vitest';
import limits from '../../functions/limits.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /v1/limits (functions/limits.ts)', () => {
  it('answers the push limits to any credential, from the configured body cap', async () => {
    h = await mountHandler(limits, { env: { SERVICE_MAX_BODY_BYTES: '1000000' } });
    const alice = await h.user('alice@example.com');
    const expected = { max_body_bytes: 1000000, max_files_per_push: 10000, max_page_path_bytes: 512 };
    for (const caller of [h.legacy, alice]) {
      const res = await caller.request('/v1/limits');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(expected);
    }
  });

  it('needs a credential', async () => {
    h = await mountHandler(limits);
    const res = await h.request('/v1/limits');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'missing authorization header', code: 'missing_authorization' });
    const bad = await h.request('/v1/limits', { token: 'nope' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ error: 'invalid token', code: 'invalid_token' });
  });
});
