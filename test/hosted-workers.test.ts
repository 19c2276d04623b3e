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
