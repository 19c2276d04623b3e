/**
 * Session tokens (API.md "Identities and tokens"): JWTs signed with HMAC-SHA256 under
 * SERVICE_SESSION_SECRET. Claims `sub` (user id), `email`, `iss: "service"`, `iat`, `exp` = iat + 30 days.
 * Verification pins the algorithm to HS256 and the issuer; time comes from the injected clock.
 */
import { SignJWT, jwtVerify } from 'jose';
import type { Clock } from '../clock.ts';

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
    const { payload } = await jwtVerify(token, secret, {
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
