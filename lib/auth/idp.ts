/**
 * Identity-provider sign-in (docs/api.md "Accounts"): verify an OIDC ID token against the provider's
 * JWKS, upsert the user it names, mint a session.
 *
 * The key source: jose's `createRemoteJWKSet` over IDP_JWKS_URL. jose itself caches for a fixed
 * `cacheMaxAge` and knows nothing of HTTP caching, so `remoteIdpKeys` wraps it to honour the provider's
 * Cache-Control: a custom fetch reads `max-age` (minus `Age`) from each successful
 * response, jose's own expiry is switched off, and the wrapper reloads once that max-age has passed. An
 * unknown `kid` triggers a refetch through jose, at most once per cooldown (default 30 s: a flood of
 * made-up kids cannot turn into a flood of fetches).
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify } from 'jose';
import type { FetchImplementation } from 'jose';
import type { Clock } from '../util/clock.ts';
import type { Deps, IdpKeySource } from '../framework/deps.ts';
import type { IdpProfile, User } from '../db/users.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { mintSession } from './session.ts';

/** The provider's keys could not be fetched (network, status, body): not the token's fault. */
export class IdpUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`identity provider keys unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'IdpUnavailableError';
  }
}

export interface RemoteIdpKeysOptions {
  /** Clock for the Cache-Control expiry. */
  clock: Clock;
  /** Minimum time between two fetches caused by an unknown `kid`. Default 30 000 ms. */
  cooldownMs?: number;
  /** HTTP timeout of one fetch. Default 5 000 ms. */
  timeoutMs?: number;
  /** Cache lifetime when the response carries no usable Cache-Control. Default 600 s. */
  defaultMaxAgeSeconds?: number;
  /** Upper bound on any cache lifetime, so a removed key is not trusted for long. Default 86 400 s. */
  maxMaxAgeSeconds?: number;
  /** fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

/**
 * Seconds a JWKS response may be cached, from its Cache-Control and Age headers: `no-store` or
 * `no-cache` → 0; `max-age=N` → N − Age; otherwise undefined (no usable directive).
 */
export function cacheLifetimeSeconds(cacheControl: string | null, age: string | null): number | undefined {
  if (!cacheControl) return undefined;
  let maxAge: number | undefined;
  for (const part of cacheControl.split(',')) {
    const [rawName, rawValue] = part.split('=', 2) as [string, string | undefined];
    const name = rawName.trim().toLowerCase();
    if (name === 'no-store' || name === 'no-cache') return 0;
    if (name === 'max-age' && rawValue !== undefined) {
      const v = rawValue.trim().replace(/^"(.*)"$/, '$1');
      if (/^[0-9]+$/.test(v)) maxAge = Number(v);
    }
  }
  if (maxAge === undefined) return undefined;
  const ageSeconds = age && /^[0-9]+$/.test(age.trim()) ? Number(age.trim()) : 0;
  return Math.max(0, maxAge - ageSeconds);
}

/** The JWKS at `url`, cached per its Cache-Control, refetched on an unknown `kid` (see the file comment). */
export function remoteIdpKeys(url: URL, opts: RemoteIdpKeysOptions): IdpKeySource {
  const { clock } = opts;
  const cooldownMs = opts.cooldownMs ?? 30_000;
  const defaultMaxAge = opts.defaultMaxAgeSeconds ?? 600;
  const maxMaxAge = opts.maxMaxAgeSeconds ?? 86_400;
  const fetchImpl = opts.fetch ?? fetch;
  /** Clock ms after which the cached set is stale; 0 before the first fetch. */
  let expiresAt = 0;

  const fetchAndNote: FetchImplementation = async (href, init) => {
    const res = await fetchImpl(href, init);
    if (res.status === 200) {
      const lifetime = cacheLifetimeSeconds(res.headers.get('cache-control'), res.headers.get('age')) ?? defaultMaxAge;
      expiresAt = clock.now() + Math.min(lifetime, maxMaxAge) * 1000;
    }
    return res;
  };

  const jwks = createRemoteJWKSet(url, {
    cacheMaxAge: Infinity, // expiry is ours (Cache-Control), see above
    cooldownDuration: cooldownMs,
    timeoutDuration: opts.timeoutMs ?? 5_000,
    [customFetch]: fetchAndNote,
  });

  const isTokenProblem = (e: unknown) =>
    e instanceof errors.JWKSNoMatchingKey ||
    e instanceof errors.JWKSMultipleMatchingKeys ||
    e instanceof errors.JOSEAlgNotAllowed ||
    e instanceof errors.JOSENotSupported ||
    e instanceof errors.JWSInvalid ||
    e instanceof errors.JWTInvalid;

  return async (header, token) => {
    try {
      if (jwks.jwks() !== undefined && clock.now() >= expiresAt) {
        try {
          await jwks.reload();
        } catch {
          // The provider is unreachable: keep verifying with the keys we have, and retry after a cooldown.
          expiresAt = clock.now() + cooldownMs;
        }
      }
      return await jwks(header, token);
    } catch (e) {
      if (isTokenProblem(e)) throw e;
      throw new IdpUnavailableError(e);
    }
  };
}

export interface IdTokenCheck {
  keys: IdpKeySource;
  clientId: string;
  issuers: string[];
  clock: Clock;
}

const invalid = (reason: string) => refuse(R.invalid_id_token, reason);

/** Why jose refused a token, in a few words for the 401 message. */
function reasonOf(e: unknown): string {
  if (e instanceof errors.JWTExpired) return 'token expired';
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.reason === 'missing') return `missing ${e.claim} claim`;
    if (e.claim === 'iss') return 'issuer not allowed';
    if (e.claim === 'aud') return 'audience mismatch';
    if (e.claim === 'nbf') return 'token not yet valid';
    return `${e.claim} claim invalid`;
  }
  if (e instanceof errors.JOSEAlgNotAllowed || e instanceof errors.JOSENotSupported) return 'algorithm must be RS256';
  if (e instanceof errors.JWKSNoMatchingKey) return 'unknown key id';
  if (e instanceof errors.JWKSMultipleMatchingKeys) return 'ambiguous key id';
  if (e instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  return 'malformed token';
}

/**
 * Checks an ID token: RS256 signature by a key of the provider, `iss` among the configured issuers,
 * `aud` = the client id, not expired, a `sub`, an email with `email_verified` exactly true. Returns who it
 * names; throws 401 `invalid id token: <reason>`, or 503 when the provider's keys cannot be fetched.
 */
export async function verifyIdToken(token: string, check: IdTokenCheck): Promise<IdpProfile> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, check.keys, {
      algorithms: ['RS256'],
      // Either spelling of a configured issuer is accepted (see normalizeIssuer).
      issuer: check.issuers.flatMap((i) => [i, normalizeIssuer(i), i.replace(/^https:\/\//, '')]),
      audience: check.clientId,
      currentDate: new Date(check.clock.now()),
      requiredClaims: ['iss', 'aud', 'sub', 'exp'],
    }));
  } catch (e) {
    if (e instanceof IdpUnavailableError) throw refuse(R.idp_unavailable);
    throw invalid(reasonOf(e));
  }
  const { iss, sub, email, email_verified: verified, name, aud, azp } = payload;
  if (typeof iss !== 'string') throw invalid('issuer not allowed');
  // OpenID Connect Core §3.1.3.7: a token for several audiences must name this client as its authorized party.
  if (Array.isArray(aud) && aud.length > 1 && azp !== check.clientId) throw invalid('azp');
  if (typeof sub !== 'string' || sub === '') throw invalid('missing sub claim');
  if (typeof email !== 'string' || email.trim() === '') throw invalid('no email');
  if (verified !== true) throw invalid('email not verified');
  return { issuer: normalizeIssuer(iss), subject: sub, email: email.trim().toLowerCase(), name: typeof name === 'string' ? name : '' };
}

/**
 * One spelling per issuer: `accounts.google.com` (what Google puts in some tokens) and
 * `https://accounts.google.com` are one issuer, so an issuer without a scheme gets `https://`. Users are
 * keyed by (normalised issuer, sub).
 */
export function normalizeIssuer(iss: string): string {
  return iss.includes('://') ? iss : `https://${iss}`;
}

export interface SignInResult {
  accessToken: string;
  user: User;
  /** Repositories adopted because this was the first user ever. */
  adopted: string[];
}

/**
 * POST /v1/auth/idp behind the handler: verify, upsert the user keyed by (issuer, sub), let the very first
 * user adopt every ownerless repository (same transaction as the user row), mint a session. A user the
 * operator disabled gets 403 `account disabled` and no session (their row is left as it was).
 */
export async function signInWithIdToken(deps: Deps, idToken: string): Promise<SignInResult> {
  const { config, clock } = deps;
  if (!config.idpClientId) throw refuse(R.idp_not_configured);
  const profile = await verifyIdToken(idToken, {
    keys: deps.idpKeys,
    clientId: config.idpClientId,
    issuers: config.idpIssuers,
    clock,
  });
  if ((await deps.users.byIssuerSubject(profile.issuer, profile.subject))?.disabled_at !== undefined) {
    throw refuse(R.account_disabled);
  }
  // Read outside the transaction (filesystem); only needed while no user exists. Whether this sign-in
  // is the first is decided again inside the transaction.
  const repoIds = (await deps.users.any()) ? [] : await deps.repos.list();
  const { user, first, adopted } = await deps.users.upsert(profile, repoIds, deps.members);
  // Disabled between the check above and the upsert: still no session.
  if (user.disabled_at !== undefined) throw refuse(R.account_disabled);
  if (first) deps.log.info('first_user', { user_id: user.id, adopted });
  const accessToken = await mintSession(config.sessionSecret, clock, user);
  return { accessToken, user, adopted };
}
