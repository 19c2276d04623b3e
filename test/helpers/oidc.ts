/**
 * A loopback OpenID Connect provider for browser tests, built on the JWKS stand-in of idp.ts: a discovery
 * document, the JWKS, and an authorization endpoint for the implicit flow (`response_type=id_token`) that
 * "signs in" at once as `provider.user` and redirects back with `#id_token=...&state=...`, the nonce echoed
 * in the token. `provider.nonceOverride` makes it echo a wrong nonce, for the rejection test.
 *
 *   const op = await startOidcProvider();
 *   const srv = await startTestServer({ env: op.serverEnv() });   // the API trusts it
 *   // config.json: {"oidcIssuer": op.issuer, "oidcClientId": op.clientId}
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startIdp, type IdpStandIn } from './idp.ts';

export interface OidcProvider {
  issuer: string;
  clientId: string;
  idp: IdpStandIn;
  /** Who the next authorization signs in as. */
  user: { sub: string; email: string; name: string };
  /** When set, the token carries this nonce instead of the request's. */
  nonceOverride: string | null;
  /** The authorization requests received, as their query parameters. */
  authorizations: URLSearchParams[];
  /** IDP_* settings for the API server. */
  serverEnv(): Record<string, string>;
  close(): Promise<void>;
}

export async function startOidcProvider(opts: { clientId?: string } = {}): Promise<OidcProvider> {
  const idp = await startIdp({ clientId: opts.clientId ?? 'dashboard-test-client' });
  const http: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', provider.issuer);
    const cors = { 'access-control-allow-origin': '*' };
    if (url.pathname === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json', ...cors });
      res.end(
        JSON.stringify({
          issuer: provider.issuer,
          authorization_endpoint: `${provider.issuer}/authorize`,
          jwks_uri: `${provider.issuer}/jwks.json`,
          response_types_supported: ['id_token'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          scopes_supported: ['openid', 'email', 'profile'],
        }),
      );
      return;
    }
    if (url.pathname === '/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json', ...cors });
      res.end(JSON.stringify({ keys: idp.keys.map((k) => k.jwk) }));
      return;
    }
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      provider.authorizations.push(q);
      const redirect = q.get('redirect_uri');
      const bad = (why: string) => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(why);
      };
      if (!redirect || !/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?\//.test(redirect)) return bad('bad redirect_uri');
      if (q.get('client_id') !== idp.clientId) return bad('unknown client_id');
      if (q.get('response_type') !== 'id_token') return bad('unsupported response_type');
      if (!q.get('nonce') || !q.get('state')) return bad('state and nonce required');
      void idp
        .signIdToken({ ...provider.user, nonce: provider.nonceOverride ?? q.get('nonce') })
        .then((token) => {
          const back = new URLSearchParams({ id_token: token, state: q.get('state')! });
          res.writeHead(302, { location: `${redirect}#${back}` });
          res.end();
        });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  idp.issuer = issuer;
  const provider: OidcProvider = {
    issuer,
    clientId: idp.clientId,
    idp,
    user: { sub: 'oidc-alice', email: 'alice@example.com', name: 'Alice' },
    nonceOverride: null,
    authorizations: [],
    serverEnv: () => ({ IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: `${issuer}/jwks.json`, IDP_ISSUERS: issuer }),
    async close() {
      await new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
      await idp.close();
    },
  };
  return provider;
}
