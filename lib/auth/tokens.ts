/**
 * Opaque bearer tokens (API.md "Identities and tokens"): a kind prefix plus 32 characters of base64url
 * from 24 random bytes. Only the SHA-256 hex of the whole token is ever stored. Web-standard only
 * (`crypto.getRandomValues`, `crypto.subtle`), so this runs unchanged on Workers.
 */

/** Personal access tokens. A token with this prefix is only ever looked up as a PAT. */
export const PAT_PREFIX = 'krp_';
/** Invite keys. */
export const INVITE_PREFIX = 'kri_';

const TOKEN_BYTES = 24;
const encoder = new TextEncoder();

/** RFC 4648 §5 base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `prefix` + 32 base64url characters of 24 fresh random bytes (192 bits). */
export function randomToken(prefix: string): string {
  const bytes = new Uint8Array(TOKEN_BYTES);
  crypto.getRandomValues(bytes);
  return prefix + base64url(bytes);
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}

/** SHA-256 of the UTF-8 text, lowercase hex: the form tokens are stored and looked up in. */
export async function sha256Hex(text: string): Promise<string> {
  let hex = '';
  for (const b of await sha256(text)) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/**
 * Whether two strings are equal, in time independent of where they differ and of their lengths: both
 * are hashed to 32 bytes first, then every byte is compared.
 */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([sha256(a), sha256(b)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}
