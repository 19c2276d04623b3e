/**
 * SHA-256 of a short byte string, synchronous: the hash every request bearing a personal access token is
 * looked up by (lib/auth/tokens.ts). @noble/hashes (audited, plain JavaScript, the same on both builds) rather
 * than Web Crypto: Node's `crypto.subtle.digest` spends most of its time checking its arguments and hops to
 * the threadpool — 16% of a PAT-authenticated page read's server CPU went to it in a CPU profile;
 * in a loop a token's digest took 54 µs that way against 3–4 µs here. test/sha256.test.ts holds it to
 * node:crypto's and Web Crypto's answers.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

/** The 32-byte SHA-256 digest of `data`. */
export function sha256(data: Uint8Array): Uint8Array {
  return nobleSha256(data);
}
