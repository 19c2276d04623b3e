/**
 * Opaque bearer tokens (docs/concepts.md "Credentials"): a kind prefix plus 32 characters of base64url
 * from 24 random bytes. Only the SHA-256 hex of the whole token is ever stored. Web-standard only
 * (`crypto.getRandomValues`, and SHA-256 in plain JavaScript), so this runs unchanged on Workers.
 */
import { sha256 } from './sha256.ts';

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

/**
 * SHA-256 of the UTF-8 text, lowercase hex: the form tokens are stored and looked up in. Hashed in plain
 * JavaScript (lib/auth/sha256.ts), not with crypto.subtle: see there why.
 */
export async function sha256Hex(text: string): Promise<string> {
  let hex = '';
  for (const b of sha256(encoder.encode(text))) hex += HEX[b];
  return hex;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/**
 * Whether `given` equals `secret`, in time that depends only on the secret's length: every byte of the
 * secret is compared, whatever the given string is and wherever it differs. (No hashing: this runs on
 * every request that presents the legacy key.)
 */
export async function constantTimeEqual(given: string, secret: string): Promise<boolean> {
  // UTF-16 code units: two strings are equal exactly when these are. charCodeAt past the end is NaN,
  // which `| 0` turns into 0 without a branch.
  let diff = given.length ^ secret.length;
  for (let i = 0; i < secret.length; i++) diff |= (given.charCodeAt(i) | 0) ^ secret.charCodeAt(i);
  return diff === 0;
}
