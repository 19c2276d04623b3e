import { afterAll, describe, expect, it } from 'vitest';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import { Miniflare } from 'miniflare';
import { buildWorker } from '../scripts/build-worker.ts';
import { startIdp } from './helpers/idp.ts';
import { startTarget } from './helpers/targets.ts';
import { hostedCases, type StartHostedTarget } from './helpers/hosted-cases.ts';

/**
 * The hosted build's caps, billing and admin (test/helpers/hosted-cases.ts) on the Workers build in
 * workerd: D1 for the records, the same cases as test/hosted.test.ts runs on Node. workerd runs on the
 * real clock, so the cases that move the server clock are left to the Node target.
 */
const startWorkers: StartHostedTarget = async (env) => {
  const idp = await startIdp();
  const t = await startTarget('workers', {
    ...env,
    IDP_OAUTH_CLIENT_ID: idp.clientId,
    IDP_JWKS_URL: idp.jwksUrl,
    IDP_ISSUERS: idp.issuer,
  });
  return {
    url: t.url,
    legacyKey: 'test-legacy-key',
    api: t.api,
    async signIn(who) {
      const idToken = await idp.signIdToken({ sub: who.sub, email: who.email, name: who.name ?? who.email.split('@')[0] });
      const r = await t.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      const body = (await r.json()) as { access_token: string; user: { id: string; email: string; name: string } };
      if (r.status !== 200) throw new Error(`sign-in of ${who.email} failed: ${r.status} ${JSON.stringify(body)}`);
      return { token: body.access_token, user: body.user };
    },
    nowSeconds: () => Math.floor(Date.now() / 1000),
    async stop() {
      await t.stop();
      await idp.close();
    },
  };
};

hostedCases('workers', startWorkers);

describe('workers: the hosted build refuses the development defaults', () => {
  // The Worker itself, its variables given as they are: `npm run dev:worker` (the Workers test target)
  // refuses such a configuration before starting workerd, as `npm start` does.
  let bundle: Promise<string> | null = null;
  const started: Miniflare[] = [];
  afterAll(async () => {
    for (const mf of started) await mf.dispose();
  });
  const worker = async (bindings: Record<string, string>) => {
    bundle ??= buildWorker(join(tmpdir(), `kr-worker-refusal-${process.pid}.mjs`));
    const scriptPath = await bundle;
    const logs: string[] = [];
    const mf = new Miniflare({
      modules: true,
      scriptPath,
      modulesRoot: dirname(scriptPath),
      compatibilityDate: '2025-09-01',
      compatibilityFlags: ['nodejs_compat'],
      d1Databases: { DB: 'kr' },
      durableObjects: {
        REPO: { className: 'RepoObject', useSQLite: true },
        RATE_LIMITER: { className: 'RateLimiterObject', useSQLite: true },
      },
      bindings: { SERVICE_RATELIMIT_DISABLE: '1', ...bindings },
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        for (const stream of [stdout, stderr]) {
          let buf = '';
          stream.setEncoding('utf8');
          stream.on('data', (chunk: string) => {
            buf += chunk;
            for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
              logs.push(buf.slice(0, nl));
              buf = buf.slice(nl + 1);
            }
          });
        }
      },
    });
    started.push(mf);
    await mf.ready;
    const call = async (path: string, init: { method?: string; token?: string } = {}) => {
      const headers: Record<string, string> = init.token ? { authorization: `Bearer ${init.token}` } : {};
      const res = await mf.dispatchFetch(`http://kr.test${path}`, { method: init.method ?? 'GET', headers });
      return [res.status, await res.json()] as [number, unknown];
    };
    /** The config error lines logged so far. */
    const configErrors = async () => {
      // workerd's output reaches this process a moment after the response.
      for (let i = 0; i < 100 && !logs.some((l) => l.includes('"event":"config"')); i++) await new Promise((r) => setTimeout(r, 20));
      return logs.filter((l) => l.includes('"event":"config"')).map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { level: string; error: string });
    };
    return { call, configErrors };
  };
  const SECRET = 'test-session-secret-0123456789-abcdef';
  const MISCONFIGURED = [503, { error: 'server misconfigured', code: 'server_misconfigured' }];

  it('SERVICE_API_KEY unset or "dev-key", SERVICE_SESSION_SECRET unset: every request 503 `server misconfigured`, logged', async () => {
    for (const [bindings, problem] of [
      [{ SERVICE_HOSTED: '1', SERVICE_SESSION_SECRET: SECRET }, 'SERVICE_API_KEY is unset'],
      [{ SERVICE_HOSTED: '1', SERVICE_SESSION_SECRET: SECRET, SERVICE_API_KEY: 'dev-key' }, 'SERVICE_API_KEY is the public development value "dev-key"'],
      [{ SERVICE_HOSTED: '1', SERVICE_API_KEY: 'a-long-random-legacy-key' }, 'SERVICE_SESSION_SECRET is unset'],
    ] as const) {
      const w = await worker(bindings);
      expect(await w.call('/health')).toEqual(MISCONFIGURED);
      // Above all, the development key gets nothing.
      expect(await w.call('/v1/repos', { token: 'dev-key' })).toEqual(MISCONFIGURED);
      expect(await w.call('/v1/repos/x', { method: 'POST', token: 'dev-key' })).toEqual(MISCONFIGURED);
      const errors = await w.configErrors();
      expect(errors.length, problem).toBeGreaterThanOrEqual(3);
      for (const e of errors) {
        expect(e.level).toBe('error');
        expect(e.error).toContain(problem);
      }
    }
  }, 120_000);

  it('with a key and a secret of its own it serves, and the development key is no credential', async () => {
    const w = await worker({ SERVICE_HOSTED: '1', SERVICE_SESSION_SECRET: SECRET, SERVICE_API_KEY: 'a-long-random-legacy-key' });
    expect(await w.call('/health')).toEqual([200, { status: 'ok' }]);
    expect(await w.call('/v1/repos', { token: 'dev-key' })).toEqual([401, { error: 'invalid token', code: 'invalid_token' }]);
    expect(await w.call('/v1/repos', { token: 'a-long-random-legacy-key' })).toEqual([200, { repos: [] }]);
    expect(await w.configErrors()).toEqual([]);
  }, 60_000);
});
