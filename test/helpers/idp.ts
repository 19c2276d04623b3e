/**
 * An identity-provider stand-in for tests: an RSA key pair, its JWKS served on a loopback HTTP server
 * (port 0), ID tokens signed on demand; plus the server wiring to sign users in.
 *
 *   const srv = await startIdpTestServer();                // real server + stand-in, IDP_* env set
 *   const alice = await signIn(srv, { sub: 'a1', email: 'alice@example.com', name: 'Alice' });
 *   await srv.api('/v1/me', { token: alice.token });       // 200 {"id","email","name"}
 *   const raw = await srv.idp.signIdToken({ email_verified: false });   // for rejection tests
 *   await srv.stop();                                       // stops both
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import type { Clock } from '../../lib/util/clock.ts';
import { systemClock } from '../../lib/util/clock.ts';
import { remoteIdpKeys } from '../../lib/auth/idp.ts';
import type { RouteDef } from '../../lib/framework/route.ts';
import { startTestServer, type TestServer } from './env.ts';

export interface IdpKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** The public JWK as published (with kid, alg RS256, use sig). */
  jwk: JWK;
}

/**
 * Claims of an ID token. Merged over the defaults (iss, aud, sub, email, email_verified: true, name, iat,
 * exp = iat + 1 h); a claim given as `undefined` is left out of the token.
 */
export type IdTokenClaims = Record<string, unknown>;

export interface SignIdTokenOptions {
  /** Key id in the header; default the current key's; `null` = no kid. */
  kid?: string | null;
  /** Signing key; default the current key's private key. */
  privateKey?: CryptoKey | Uint8Array;
  /** Default RS256. */
  alg?: string;
}

export interface IdpStandIn {
  issuer: string;
  clientId: string;
  jwksUrl: string;
  /** Keys currently published, oldest first. */
  keys: IdpKey[];
  /** The key `signIdToken` uses by default (the newest). */
  readonly current: IdpKey;
  /** JWKS requests served so far. */
  fetches: number;
  /** Cache-Control sent with the JWKS (null = none). Default `public, max-age=3600`. */
  cacheControl: string | null;
  /** HTTP status of the JWKS answer (e.g. 500 to simulate an outage). Default 200. */
  jwksStatus: number;
  /** Default claims for a subject, at the stand-in clock's now. */
  claims(overrides?: IdTokenClaims): IdTokenClaims;
  signIdToken(claims?: IdTokenClaims, opts?: SignIdTokenOptions): Promise<string>;
  /** Publishes a new key and makes it current; `dropOld` unpublishes the others. */
  rotate(opts?: { dropOld?: boolean }): Promise<IdpKey>;
  close(): Promise<void>;
}

let kidSeq = 0;

export async function newIdpKey(kid = `test-key-${++kidSeq}`): Promise<IdpKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicKey, jwk };
}

/** Starts the stand-in: JWKS at `<url>/jwks.json` on 127.0.0.1, port 0. */
export async function startIdp(
  opts: { issuer?: string; clientId?: string; clock?: Clock } = {},
): Promise<IdpStandIn> {
  const clock = opts.clock ?? systemClock;
  const first = await newIdpKey();
  const http: Server = createServer((_req, res) => {
    idp.fetches++;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (idp.cacheControl !== null) headers['cache-control'] = idp.cacheControl;
    res.writeHead(idp.jwksStatus, headers);
    res.end(idp.jwksStatus === 200 ? JSON.stringify({ keys: idp.keys.map((k) => k.jwk) }) : '{"error":"down"}');
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;

  const idp: IdpStandIn = {
    issuer: opts.issuer ?? 'https://idp.test',
    clientId: opts.clientId ?? 'test-client-id.apps.example',
    jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
    keys: [first],
    get current() {
      return this.keys[this.keys.length - 1]!;
    },
    fetches: 0,
    cacheControl: 'public, max-age=3600',
    jwksStatus: 200,
    claims(overrides = {}) {
      const iat = Math.floor(clock.now() / 1000);
      return {
        iss: idp.issuer,
        aud: idp.clientId,
        sub: 'subject-1',
        email: 'alice@example.com',
        email_verified: true,
        name: 'Alice',
        iat,
        exp: iat + 3600,
        ...overrides,
      };
    },
    async signIdToken(claims = {}, o = {}) {
      const payload = Object.fromEntries(Object.entries(idp.claims(claims)).filter(([, v]) => v !== undefined));
      const header: { alg: string; typ: string; kid?: string } = { alg: o.alg ?? 'RS256', typ: 'JWT' };
      const kid = o.kid === undefined ? idp.current.kid : o.kid;
      if (kid !== null) header.kid = kid;
      return new SignJWT(payload).setProtectedHeader(header).sign(o.privateKey ?? idp.current.privateKey);
    },
    async rotate(o = {}) {
      const key = await newIdpKey();
      idp.keys = o.dropOld ? [key] : [...idp.keys, key];
      return key;
    },
    close() {
      return new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
    },
  };
  return idp;
}

/** A test server wired to a stand-in identity provider. `stop()` stops both. */
export interface IdpTestServer extends TestServer {
  idp: IdpStandIn;
}

export interface StartIdpTestServerOptions {
  env?: Record<string, string>;
  /** Shared by the server and the stand-in (token iat/exp). */
  clock?: Clock;
  routes?: RouteDef[];
  dataRoot?: string;
  /** Extra accepted issuers besides the stand-in's own (IDP_ISSUERS). */
  extraIssuers?: string[];
  /**
   * Replaces the server's key source with one of this unknown-kid cooldown (ms), e.g. 0 to see a rotated
   * key at once. Default: the production key source (30 s cooldown).
   */
  keysCooldownMs?: number;
}

/** Starts a stand-in and the real server with IDP_OAUTH_CLIENT_ID, IDP_JWKS_URL and IDP_ISSUERS pointing at it. */
export async function startIdpTestServer(opts: StartIdpTestServerOptions = {}): Promise<IdpTestServer> {
  const idp = await startIdp({ clock: opts.clock });
  let server: TestServer;
  try {
    server = await startTestServer({
      clock: opts.clock,
      routes: opts.routes,
      dataRoot: opts.dataRoot,
      env: {
        IDP_OAUTH_CLIENT_ID: idp.clientId,
        IDP_JWKS_URL: idp.jwksUrl,
        IDP_ISSUERS: [idp.issuer, ...(opts.extraIssuers ?? [])].join(','),
        ...opts.env,
      },
    });
  } catch (e) {
    await idp.close();
    throw e;
  }
  if (opts.keysCooldownMs !== undefined) {
    server.deps.idpKeys = remoteIdpKeys(new URL(idp.jwksUrl), {
      clock: server.deps.clock,
      cooldownMs: opts.keysCooldownMs,
    });
  }
  const stopServer = server.stop.bind(server);
  return Object.assign(server, {
    idp,
    async stop() {
      await stopServer();
      await idp.close();
    },
  });
}

export interface SignedIn {
  /** The session token (`access_token`). */
  token: string;
  user: { id: string; email: string; name: string };
}

/**
 * Signs a user in through POST /v1/auth/idp with a valid ID token from the server's stand-in; `claims`
 * are merged into the token (`name` defaults to the email's local part). Throws unless the answer is 200.
 */
export async function signIn(
  server: IdpTestServer,
  who: { sub: string; email: string; name?: string },
  claims: IdTokenClaims = {},
): Promise<SignedIn> {
  const idToken = await server.idp.signIdToken({ sub: who.sub, email: who.email, name: who.name ?? who.email.split('@')[0], ...claims });
  const res = await server.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`sign-in of ${who.email} failed: ${res.status} ${text}`);
  const body = JSON.parse(text) as { access_token: string; user: SignedIn['user'] };
  return { token: body.access_token, user: body.user };
}
