/**
 * Forged and spoiled session tokens for the access tests: each names a real user and would be accepted
 * if the server checked less than it should.
 */
import { SignJWT, base64url } from 'jose';

const DAY = 24 * 60 * 60;

/** A session JWT for `userId`, HS256 under `secret`, with the given iat/exp (Unix seconds). */
export function sessionJwt(secret: Uint8Array | string, userId: string, email: string, iat: number, exp: number, iss = 'service'): Promise<string> {
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  return new SignJWT({ email })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(iss)
    .setSubject(userId)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key);
}

/** Expired an hour ago (issued 31 days ago), correctly signed. */
export function expiredSession(secret: Uint8Array, userId: string, email: string, nowSeconds = Math.floor(Date.now() / 1000)) {
  return sessionJwt(secret, userId, email, nowSeconds - 31 * DAY, nowSeconds - 3600);
}

/** Valid in every claim, signed with a secret the server does not hold. */
export function otherSecretSession(userId: string, email: string, nowSeconds = Math.floor(Date.now() / 1000)) {
  return sessionJwt('an-entirely-different-secret-of-48-bytes-000000', userId, email, nowSeconds, nowSeconds + DAY);
}

/** An unsecured JWT (`alg: none`, empty signature) with otherwise valid claims. */
export function algNoneSession(userId: string, email: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const enc = (o: unknown) => base64url.encode(new TextEncoder().encode(JSON.stringify(o)));
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc({ sub: userId, email, iss: 'service', iat: nowSeconds, exp: nowSeconds + DAY })}.`;
}
