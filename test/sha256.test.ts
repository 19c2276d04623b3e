// lib/auth/sha256.ts: the hash tokens are stored and looked up by, held to node:crypto's SHA-256 (and to
// Web Crypto's, which hashed every stored token before it) for lengths across the block boundaries.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../lib/auth/sha256.ts';
import { sha256Hex } from '../lib/auth/tokens.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('sha256', () => {
  it('is FIPS 180-4 on the standard vectors', () => {
    const enc = new TextEncoder();
    expect(hex(sha256(new Uint8Array(0)))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hex(sha256(enc.encode('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hex(sha256(enc.encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('equals node:crypto for every length from 0 to 300 bytes and for 20 KB', () => {
    for (let n = 0; n <= 300; n++) {
      const data = randomBytes(n);
      expect(hex(sha256(data)), `${n} bytes`).toBe(createHash('sha256').update(data).digest('hex'));
    }
    const big = randomBytes(20_000);
    expect(hex(sha256(big))).toBe(createHash('sha256').update(big).digest('hex'));
  });

  it('sha256Hex of a token is what Web Crypto gives, for ASCII and non-ASCII text', async () => {
    for (const text of ['krp_' + randomBytes(24).toString('base64url'), 'kri_x', 'é✓ token 🔑', '']) {
      const web = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))).toString('hex');
      expect(await sha256Hex(text)).toBe(web);
    }
  });
});
