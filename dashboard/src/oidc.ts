/**
 * OpenID Connect in the browser, implicit flow with `response_type=id_token`: the provider sends the ID token
 * back in the URL fragment; `state` (against forged answers) and `nonce` (against replayed tokens) are
 * checked here before the token goes to POST /v1/auth/idp, which checks signature, issuer, audience and expiry.
 */

const PENDING = 'kr.oidc.pending';

interface Pending {
  state: string;
  nonce: string;
  issuer: string;
  returnTo: string;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Where the provider sends the user back: this page, without any fragment or query. */
export function redirectUri(): string {
  return `${location.origin}${location.pathname}`;
}

export async function discover(issuer: string): Promise<{ authorization_endpoint: string }> {
  let res: Response;
  try {
    res = await fetch(`${issuer}/.well-known/openid-configuration`);
  } catch {
    throw new Error(`The identity provider at ${issuer} could not be reached.`);
  }
  if (!res.ok) throw new Error(`The identity provider's configuration could not be read (HTTP ${res.status}).`);
  const doc = (await res.json()) as { authorization_endpoint?: unknown; issuer?: unknown };
  if (typeof doc.authorization_endpoint !== 'string') {
    throw new Error("The identity provider's configuration has no authorization_endpoint.");
  }
  return { authorization_endpoint: doc.authorization_endpoint };
}

/** Builds the authorization request and remembers state and nonce for this tab. */
export async function beginSignIn(issuer: string, clientId: string, returnTo: string): Promise<string> {
  const { authorization_endpoint } = await discover(issuer);
  const pending: Pending = { state: randomToken(), nonce: randomToken(), issuer, returnTo };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(authorization_endpoint);
  url.searchParams.set('response_type', 'id_token');
  url.searchParams.set('response_mode', 'fragment');
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('scope', 'openid email profile');
  url.searchParams.set('state', pending.state);
  url.searchParams.set('nonce', pending.nonce);
  return url.toString();
}

/** True when the fragment is an answer from the provider rather than a route. */
export function isCallback(hash: string): boolean {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  return params.has('state') && (params.has('id_token') || params.has('error'));
}

function decodeJwtPayload(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (!part) throw new Error('The identity provider sent something that is not an ID token.');
  const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
  try {
    const json = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    throw new Error('The identity provider sent an ID token that could not be read.');
  }
}

/** Checks the provider's answer; returns the ID token and the route to go back to, or throws why not. */
export function completeSignIn(hash: string): { idToken: string; returnTo: string } {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!raw) throw new Error('Sign-in answer rejected: no sign-in was started in this tab.');
  const pending = JSON.parse(raw) as Pending;
  if (params.get('state') !== pending.state) throw new Error('Sign-in answer rejected: the state does not match.');
  const error = params.get('error');
  if (error) {
    const description = params.get('error_description');
    throw new Error(`The identity provider refused the sign-in: ${error}${description ? ` (${description})` : ''}`);
  }
  const idToken = params.get('id_token') ?? '';
  const claims = decodeJwtPayload(idToken);
  if (claims.nonce !== pending.nonce) throw new Error('Sign-in answer rejected: the nonce does not match.');
  return { idToken, returnTo: pending.returnTo };
}
