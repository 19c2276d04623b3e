/**
 * Credential resolution (docs/api.md "Routes", what holds for every route; docs/concepts.md "Credentials"):
 *
 * - No Authorization header (or an empty one) → 401 `missing authorization header`.
 * - A scheme other than Bearer, or Bearer without a token → 401
 *   `invalid authorization format, expected Bearer <token>`. The scheme is matched case-insensitively
 *   (RFC 9110 §11.1, RFC 6750), so `bearer x` is accepted.
 * - Token with the `krp_` prefix → a PAT, and nothing else.
 * - Token equal to SERVICE_API_KEY (constant-time compare) → `legacy:admin`.
 * - Otherwise → a session JWT whose user still exists.
 * - A user the operator disabled (`admin user disable`) is refused like a deleted one: their PATs and
 *   sessions stop at once, since both read the user row on every request.
 * - Anything unknown, expired, revoked or malformed → 401 `invalid token`, the same whatever it looked like.
 */
import type { Deps } from '../framework/deps.ts';
import { HttpError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { LEGACY, type Identity } from './identity.ts';
import { verifySession } from './session.ts';
import { PAT_PREFIX, constantTimeEqual } from './tokens.ts';

/** The bearer token of an Authorization header value; throws the 401s of a missing or malformed header. */
export function bearerToken(header: string | undefined | null): string {
  const value = header?.trim() ?? '';
  if (value === '') throw refuse(R.missing_authorization);
  const m = /^([^\s]+)(?:\s+(.*))?$/s.exec(value);
  const scheme = m?.[1] ?? '';
  const token = m?.[2]?.trim() ?? '';
  if (scheme.toLowerCase() !== 'bearer' || token === '') throw refuse(R.invalid_authorization_format);
  return token;
}

/** The identity a bearer token stands for; throws 401 `invalid token` for anything else. */
export async function resolveToken(deps: Pick<Deps, 'config' | 'clock' | 'users' | 'pats'>, token: string): Promise<Identity> {
  if (token.startsWith(PAT_PREFIX)) {
    const found = await deps.pats.resolve(token);
    if (!found) throw refuse(R.invalid_token);
    return {
      kind: 'user',
      userId: found.user.id,
      email: found.user.email,
      name: found.user.name,
      via: 'pat',
      patId: found.pat.id,
    };
  }
  if (await constantTimeEqual(token, deps.config.apiKey)) return LEGACY;
  const claims = await verifySession(deps.config.sessionSecret, deps.clock, token);
  if (!claims) throw refuse(R.invalid_token);
  // The account is read afresh: email and name as of the last sign-in, and a deleted or disabled user's
  // sessions die.
  const user = await deps.users.byId(claims.sub);
  if (!user || user.disabled_at !== undefined) throw refuse(R.invalid_token);
  return { kind: 'user', userId: user.id, email: user.email, name: user.name, via: 'session' };
}

/** The 401s of git's routes carry this, so that git asks for (or looks up) credentials. */
export const GIT_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="kr"' };

/**
 * The token of a git client's Authorization header: `Basic base64(<any user name>:<token>)` (what git sends
 * from its prompt, URL userinfo or a credential helper; the user name is ignored) or `Bearer <token>`.
 */
export function gitToken(header: string | undefined | null): string {
  const value = header?.trim() ?? '';
  if (value === '') throw refuse(R.missing_authorization);
  const m = /^([^\s]+)(?:\s+(.*))?$/s.exec(value);
  const scheme = (m?.[1] ?? '').toLowerCase();
  const rest = m?.[2]?.trim() ?? '';
  if (scheme === 'bearer' && rest !== '') return rest;
  if (scheme !== 'basic' || !/^[A-Za-z0-9+/]+=*$/.test(rest)) throw refuse(R.invalid_git_authorization_format);
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(atob(rest), (ch) => ch.charCodeAt(0)));
  } catch {
    throw refuse(R.invalid_git_authorization_format);
  }
  const colon = decoded.indexOf(':');
  const token = colon < 0 ? '' : decoded.slice(colon + 1);
  if (token === '') throw refuse(R.invalid_token);
  return token;
}

/** A git route's Authorization header → identity, or the matching 401 with GIT_CHALLENGE. */
export async function resolveGitAuthorization(
  deps: Pick<Deps, 'config' | 'clock' | 'users' | 'pats'>,
  header: string | undefined | null,
): Promise<Identity> {
  try {
    return await resolveToken(deps, gitToken(header));
  } catch (e) {
    if (e instanceof HttpError && e.status === 401) throw new HttpError(401, e.refusal, e.message, e.extra, { ...e.headers, ...GIT_CHALLENGE });
    throw e;
  }
}

/** Authorization header value → identity, or the matching 401. */
export async function resolveAuthorization(
  deps: Pick<Deps, 'config' | 'clock' | 'users' | 'pats'>,
  header: string | undefined | null,
): Promise<Identity> {
  return resolveToken(deps, bearerToken(header));
}
