/**
 * Session tokens (docs/concepts.md "Credentials"): JWTs signed with HMAC-SHA256 under
 * SERVICE_SESSION_SECRET. Claims `sub` (user id), `email`, `iss: "service"`, `iat`, `exp` = iat + 30 days.
 * Verification pins the algorithm to HS256 and the issuer; time comes from the injected clock.
 */
import { SignJWT, jwtVerify } from 'jose';
import type { Clock } from '../util/clock.ts';

export const SESSION_ISSUER = 'service';
export const SESSION_TTL_SECONDS = 30 * 24 * 60 * 60;

export interface SessionClaims {
  /** User id. */
  sub: string;
  email: string;
  iat: number;
  exp: number;
}

/** Mints a session token for a user, valid for 30 days from the clock's now. */
export async function mintSession(
  secret: Uint8Array,
  clock: Clock,
  user: { id: string; email: string },
): Promise<string> {
  const iat = Math.floor(clock.now() / 1000);
  return new SignJWT({ email: user.email })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(SESSION_ISSUER)
    .setSubject(user.id)
    .setIssuedAt(iat)
    .setExpirationTime(iat + SESSION_TTL_SECONDS)
    .sign(secret);
}

/**
 * The claims of a valid session token, or null for anything else: another algorithm (including `none`),
 * a bad signature, another issuer, an expired token, missing claims, or not a JWT at all.
 */
export async function verifySession(secret: Uint8Array, clock: Clock, token: string): Promise<SessionClaims | null> {
  try {
    const { payload } = await jwtVerify(token, await verifyKey(secret), {
      algorithms: ['HS256'],
      issuer: SESSION_ISSUER,
      currentDate: new Date(clock.now()),
      requiredClaims: ['sub', 'iat', 'exp'],
    });
    const { sub, email, iat, exp } = payload;
    if (typeof sub !== 'string' || sub === '' || typeof email !== 'string') return null;
    if (typeof iat !== 'number' || typeof exp !== 'number') return null;
    return { sub, email, iat, exp };
  } catch {
    return null;
  }
}

/**
 * The HMAC key of `secret`, imported once: given the raw bytes, jose imports them into Web Crypto on every
 * verification, which cost a session-authenticated request about 60 µs of its 157 (a loop of
 * verifySession). One key is kept, for the secret bytes it was made from (compared by value, so
 * a changed secret gets its own key).
 */
let kept: { secret: Uint8Array; key: Promise<CryptoKey> } | null = null;

function verifyKey(secret: Uint8Array): Promise<CryptoKey> {
  if (kept === null || !sameBytes(kept.secret, secret)) {
    const copy = new Uint8Array(secret);
    const key = crypto.subtle.importKey('raw', copy, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    kept = { secret: copy, key };
    // A refused import is not kept: the next call tries again (and jose reports it the same way).
    key.catch(() => {
      if (kept?.key === key) kept = null;
    });
  }
  return kept.key;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
