import { afterEach, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../lib/framework/openapi.ts';
import { hostedRoutes, routes } from '../../functions/index.ts';
import { openApiRoute } from '../../functions/openapi.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';
import { ResponseChecker } from '../helpers/openapi-check.ts';

/** The route as functions/index.ts lists it, built from the real lists. */
const openapi = openApiRoute(() => ({ routes, hostedRoutes }));

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /openapi.json (functions/openapi.ts)', () => {
  it("answers the self-hosted build's document without a credential, matching its own schema", async () => {
    h = await mountHandler(openapi);
    const res = await h.request('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBeNull();
    const doc = buildOpenApi({ routes });
    expect(await new ResponseChecker(doc).check('GET', '/openapi.json', res.clone())).toBeNull();
    expect(await res.json()).toEqual(doc);
  });

  it('lists the hosted routes when the build is hosted', async () => {
    h = await mountHandler(openapi, { env: { SERVICE_HOSTED: '1' } });
    const doc = (await (await h.request('/openapi.json')).json()) as { paths: Record<string, unknown> };
    expect(doc).toEqual(buildOpenApi({ routes, hostedRoutes }));
    expect(Object.keys(doc.paths)).toContain('/v1/admin/stats');
  });

  it('is not rate limited even with the limiter on', async () => {
    h = await mountHandler(openapi, { env: { SERVICE_RATELIMIT_DISABLE: '0', SERVICE_RATELIMIT_BURST: '2' } });
    for (let i = 0; i < 5; i++) expect((await h.request('/openapi.json')).status).toBe(200);
  });

  it('another method on the path is 405', async () => {
    h = await mountHandler(openapi);
    const res = await h.request('/openapi.json', { method: 'POST' });
    expect([res.status, await res.json()]).toEqual([405, { error: 'method not allowed', code: 'method_not_allowed' }]);
  });
});
