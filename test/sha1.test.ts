// lib/git/sha1.ts: the incremental SHA-1 a streamed pack's checksum is made with on Workers, held to node:crypto
// for pieces of every size across the block boundaries, and spent once its digest is taken.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Sha1 } from '../lib/git/sha1.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('Sha1', () => {
  it('equals node:crypto whatever the pieces it is fed in', () => {
    for (const total of [0, 1, 55, 56, 63, 64, 65, 119, 128, 1000, 70_000]) {
      const data = randomBytes(total);
      for (const piece of [1, 7, 64, 100, 65_536]) {
        const h = new Sha1();
        for (let i = 0; i < total; i += piece) h.update(data.subarray(i, i + piece));
        expect(hex(h.digest()), `${total} bytes in pieces of ${piece}`).toBe(createHash('sha1').update(data).digest('hex'));
      }
    }
  });

  it('refuses to be fed or read once its digest is taken', () => {
    const h = new Sha1();
    h.update(new Uint8Array([1, 2, 3]));
    h.digest();
    expect(() => h.update(new Uint8Array([4]))).toThrow('SHA-1 digest already taken');
    expect(() => h.digest()).toThrow('SHA-1 digest already taken');
  });
});
