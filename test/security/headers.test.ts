/**
 * Security headers (docs/api.md "Routes", what holds for every route): every response carries `X-Content-Type-Options:
 * nosniff`; every response to an authenticated request carries `Cache-Control: no-store`. We put no-store
 * on every /v1 response but preflights (401s and sign-in's token included); /health and preflights go
 * without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../functions/index.ts';
import { defineRoute } from '../../lib/framework/route.ts';
import { startTestServer, type TestServer } from '../helpers/env.ts';

describe('security headers on every kind of response', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({
      env: { SERVICE_MAX_BODY_BYTES: '1024' },
      routes: [
        ...routes,
        defineRoute({ method: 'GET', path: '/v1/test/boom', handler: () => { throw new Error('internals'); } }),
      ],
    });
    expect((await srv.api('/v1/repos/hdr/sync/push', { method: 'POST', json: { files: [{ path: 'a.md', content: '# A\n' }] } })).status).toBe(200);
  });
  afterAll(async () => {
    await srv?.stop();
  });

  const preflight = { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST' };
  const cases: Array<{ name: string; path: string; init?: RequestInit & { token?: string | null; json?: unknown }; status: number; body?: string; noStore: boolean }> = [
    { name: 'health', path: '/health', init: { token: null }, status: 200, body: '{"status":"ok"}', noStore: false },
    { name: 'unknown route', path: '/v1/nothing', status: 404, body: '{"error":"not found","code":"not_found"}', noStore: true },
    { name: 'unknown route outside /v1', path: '/nothing', init: { token: null }, status: 404, body: '{"error":"not found","code":"not_found"}', noStore: false },
    { name: 'wrong method', path: '/v1/repos', init: { method: 'DELETE' }, status: 405, body: '{"error":"method not allowed","code":"method_not_allowed"}', noStore: true },
    { name: 'no credentials', path: '/v1/repos', init: { token: null }, status: 401, body: '{"error":"missing authorization header","code":"missing_authorization"}', noStore: true },
    { name: 'bad token', path: '/v1/repos', init: { token: 'nope' }, status: 401, body: '{"error":"invalid token","code":"invalid_token"}', noStore: true },
    { name: 'authenticated list', path: '/v1/repos/hdr/pages', status: 200, noStore: true },
    { name: 'authenticated page bytes', path: '/v1/repos/hdr/pages/a.md', status: 200, body: '# A\n', noStore: true },
    { name: 'authenticated error', path: '/v1/repos/missing/pages', status: 404, body: '{"error":"repo not found","code":"repo_not_found"}', noStore: true },
    { name: 'authenticated 500', path: '/v1/test/boom', status: 500, body: '{"error":"internal error","code":"internal_error"}', noStore: true },
    { name: 'body too large', path: '/v1/repos/hdr/sync/push', init: { method: 'POST', body: 'x'.repeat(2000) }, status: 413, body: '{"error":"request body too large","code":"body_too_large"}', noStore: true },
    { name: 'sign-in (public, not configured)', path: '/v1/auth/idp', init: { method: 'POST', token: null, json: {} }, status: 503, body: '{"error":"identity provider not configured","code":"idp_not_configured"}', noStore: true },
    { name: 'preflight', path: '/v1/repos', init: { method: 'OPTIONS', token: null, headers: preflight }, status: 204, body: '', noStore: false },
  ];

  it.each(cases)('$name → $status, nosniff, no-store: $noStore', async ({ path, init, status, body, noStore }) => {
    const res = await srv.api(path, init);
    const text = await res.text();
    expect(res.status).toBe(status);
    if (body !== undefined) expect(text).toBe(body);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe(noStore ? 'no-store' : null);
  });
});
