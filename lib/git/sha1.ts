/**
 * SHA-1 computed incrementally (FIPS 180-4), in plain JavaScript: the checksum of a pack that is streamed
 * as it is made (lib/git/bundle.ts), on a runtime whose codec has no incremental hash of its own. Web Crypto
 * (crypto.subtle.digest) only hashes a whole buffer, which would mean holding the whole pack. Node's codec
 * supplies node:crypto's instead (ObjectCodec.sha1Stream), which is several times faster.
 */

/** An incremental hash: feed it bytes in any pieces, then take the digest once. */
export interface Hasher {
  update(data: Uint8Array): void;
  /** The 20-byte digest of everything fed; the hasher is spent afterwards. */
  digest(): Uint8Array;
}

export class Sha1 implements Hasher {
  private h0 = 0x67452301;
  private h1 = 0xefcdab89;
  private h2 = 0x98badcfe;
  private h3 = 0x10325476;
  private h4 = 0xc3d2e1f0;
  /** The partial block not yet hashed. */
  private readonly block = new Uint8Array(64);
  private filled = 0;
  /** Bytes fed so far (a double: exact up to 2^53). */
  private length = 0;
  private readonly w = new Int32Array(80);
  private done = false;

  update(data: Uint8Array): void {
    if (this.done) throw new Error('SHA-1 digest already taken');
    this.length += data.byteLength;
    let at = 0;
    if (this.filled > 0) {
      const take = Math.min(64 - this.filled, data.byteLength);
      this.block.set(data.subarray(0, take), this.filled);
      this.filled += take;
      at = take;
      if (this.filled < 64) return;
      this.compress(this.block, 0);
      this.filled = 0;
    }
    for (; at + 64 <= data.byteLength; at += 64) this.compress(data, at);
    if (at < data.byteLength) {
      this.block.set(data.subarray(at), 0);
      this.filled = data.byteLength - at;
    }
  }

  digest(): Uint8Array {
    if (this.done) throw new Error('SHA-1 digest already taken');
    const bits = this.length * 8;
    const pad = new Uint8Array((this.filled < 56 ? 64 : 128) - this.filled);
    pad[0] = 0x80;
    // The message length in bits, big-endian, in the last 8 bytes.
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    const n = pad.length;
    pad[n - 8] = hi >>> 24;
    pad[n - 7] = hi >>> 16;
    pad[n - 6] = hi >>> 8;
    pad[n - 5] = hi;
    pad[n - 4] = lo >>> 24;
    pad[n - 3] = lo >>> 16;
    pad[n - 2] = lo >>> 8;
    pad[n - 1] = lo;
    const length = this.length;
    this.update(pad);
    this.length = length;
    this.done = true;
    const out = new Uint8Array(20);
    const words = [this.h0, this.h1, this.h2, this.h3, this.h4];
    words.forEach((v, i) => {
      out[i * 4] = v >>> 24;
      out[i * 4 + 1] = v >>> 16;
      out[i * 4 + 2] = v >>> 8;
      out[i * 4 + 3] = v;
    });
    return out;
  }

  /** One 64-byte block of `data` from `at`. */
  private compress(data: Uint8Array, at: number): void {
    const w = this.w;
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (data[j]! << 24) | (data[j + 1]! << 16) | (data[j + 2]! << 8) | data[j + 3]!;
    }
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!;
      w[i] = (x << 1) | (x >>> 31);
    }
    let a = this.h0;
    let b = this.h1;
    let c = this.h2;
    let d = this.h3;
    let e = this.h4;
    for (let i = 0; i < 80; i++) {
      let f: number;
      let k: number;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const t = (((a << 5) | (a >>> 27)) + f + e + k + w[i]!) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = t;
    }
    this.h0 = (this.h0 + a) | 0;
    this.h1 = (this.h1 + b) | 0;
    this.h2 = (this.h2 + c) | 0;
    this.h3 = (this.h3 + d) | 0;
    this.h4 = (this.h4 + e) | 0;
  }
}
