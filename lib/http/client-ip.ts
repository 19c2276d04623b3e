/**
 * Client IP derivation for rate limiting (SPEC.md "Limits": X-Forwarded-For is used only when the direct
 * peer is a trusted proxy) and the IP/CIDR parsing it needs. Pure, web-standard code.
 *
 * Every address is handled as 16 bytes: IPv4 `a.b.c.d` is stored as the IPv4-mapped IPv6 address
 * `::ffff:a.b.c.d`, so `127.0.0.1`, `::ffff:127.0.0.1` and `::ffff:7f00:1` are the same address, and an
 * IPv4 CIDR `/n` is the IPv6 prefix `/96+n`.
 */

type Bytes = Uint8Array; // always 16 bytes

const V4_MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function isV4Mapped(b: Bytes): boolean {
  for (let i = 0; i < 12; i++) if (b[i] !== V4_MAPPED_PREFIX[i]) return false;
  return true;
}

/** Dotted quad without leading zeros (`010.0.0.1` is refused: some parsers read it as octal). */
function parseV4Parts(s: string): number[] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const parts: number[] = [];
  for (let i = 1; i <= 4; i++) {
    const p = m[i]!;
    if (p.length > 1 && p[0] === '0') return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    parts.push(n);
  }
  return parts;
}

function parseV6(s: string): Bytes | undefined {
  if (s.length === 0 || s.length > 45) return undefined;
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) stands for the last two groups.
  let tail: number[] = [];
  let head = s;
  const lastColon = s.lastIndexOf(':');
  if (lastColon >= 0 && s.indexOf('.', lastColon) >= 0) {
    const v4 = parseV4Parts(s.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    head = s.slice(0, lastColon + 1);
    // `::1.2.3.4` leaves `::`, `a::1.2.3.4` leaves `a::`, `a:b:c:d:e:f:1.2.3.4` leaves `a:...:f:`.
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupRe = /^[0-9a-fA-F]{1,4}$/;
  const parseGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (!groupRe.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  let groups: number[];
  const dbl = head.indexOf('::');
  if (dbl >= 0) {
    if (head.indexOf('::', dbl + 1) >= 0) return undefined;
    const left = parseGroups(head.slice(0, dbl));
    const right = parseGroups(head.slice(dbl + 2));
    if (!left || !right) return undefined;
    const missing = 8 - left.length - right.length - tail.length;
    if (missing < 1) return undefined;
    groups = [...left, ...new Array<number>(missing).fill(0), ...right, ...tail];
  } else {
    const all = parseGroups(head);
    if (!all || (head === '' && tail.length === 0)) return undefined;
    groups = [...all, ...tail];
    if (groups.length !== 8) return undefined;
  }
  const b = new Uint8Array(16);
  groups.forEach((g, i) => {
    b[i * 2] = g >> 8;
    b[i * 2 + 1] = g & 0xff;
  });
  return b;
}

/**
 * Parses an IPv4 or IPv6 address (an IPv6 zone `%eth0` is dropped) into 16 bytes; undefined if invalid.
 * No ports, no brackets: see {@link parseForwardedAddress} for those.
 */
export function parseIp(input: string): Uint8Array | undefined {
  const s = input.trim();
  const v4 = parseV4Parts(s);
  if (v4) return new Uint8Array([...V4_MAPPED_PREFIX, ...v4]);
  if (!s.includes(':')) return undefined;
  const pct = s.indexOf('%');
  return parseV6(pct >= 0 ? s.slice(0, pct) : s);
}

/** Canonical text: dotted quad for IPv4 (and IPv4-mapped IPv6), RFC 5952 form for IPv6. */
export function formatIp(b: Uint8Array): string {
  if (isV4Mapped(b)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push((b[i * 2]! << 8) | b[i * 2 + 1]!);
  // Longest run of two or more zero groups (first one on a tie) becomes `::`.
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

/** The canonical form of an address, or undefined when it is not one. */
export function normalizeIp(input: string): string | undefined {
  const b = parseIp(input);
  return b ? formatIp(b) : undefined;
}

/** Whether an address is loopback (127.0.0.0/8, ::1, or their IPv4-mapped forms). */
export function isLoopbackIp(input: string): boolean {
  const b = parseIp(input);
  if (!b) return false;
  if (isV4Mapped(b)) return b[12] === 127;
  for (let i = 0; i < 15; i++) if (b[i] !== 0) return false;
  return b[15] === 1;
}

/**
 * An X-Forwarded-For element: a bare address, or one with a port as some proxies write it
 * (`1.2.3.4:5678`, `[2001:db8::1]:443`), or a bracketed IPv6 address. Undefined when it is garbage
 * (including the literal `unknown` some proxies write).
 */
export function parseForwardedAddress(input: string): Uint8Array | undefined {
  const s = input.trim().replace(/^"(.*)"$/, '$1');
  const bracket = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(s);
  if (bracket) return parseIp(bracket[1]!);
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(s);
  if (v4port) return parseIp(v4port[1]!);
  return parseIp(s);
}

interface Prefix {
  bytes: Uint8Array;
  bits: number; // 0..128, over the 16-byte form
}

function parsePrefix(entry: string): Prefix | undefined {
  const s = entry.trim();
  const slash = s.indexOf('/');
  if (slash < 0) {
    const bytes = parseIp(s);
    return bytes ? { bytes, bits: 128 } : undefined;
  }
  const addr = s.slice(0, slash);
  const len = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(len)) return undefined;
  const n = Number(len);
  const bytes = parseIp(addr);
  if (!bytes) return undefined;
  const isV4Text = parseV4Parts(addr.trim()) !== undefined;
  if (isV4Text ? n > 32 : n > 128) return undefined;
  return { bytes, bits: isV4Text ? 96 + n : n };
}

function matches(p: Prefix, b: Uint8Array): boolean {
  const full = Math.floor(p.bits / 8);
  for (let i = 0; i < full; i++) if (p.bytes[i] !== b[i]) return false;
  const rest = p.bits % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (p.bytes[full]! & mask) === (b[full]! & mask);
}

/** Whether a string is a valid trusted-proxy entry: an IPv4/IPv6 address or CIDR block. */
export function isValidProxyEntry(entry: string): boolean {
  return parsePrefix(entry) !== undefined;
}

/**
 * The set of trusted proxies: exact IPv4/IPv6 addresses and CIDR blocks (`10.0.0.0/8`, `fd00::/8`).
 * IPv4-mapped IPv6 peers (`::ffff:10.1.2.3`) match IPv4 entries. Throws a TypeError naming the first
 * entry that is neither an address nor a CIDR block.
 */
export class TrustedProxies {
  constructor(list: string[]) {
    const prefixes: Prefix[] = [];
    for (const entry of list) {
      const p = parsePrefix(entry);
      if (!p) throw new TypeError(`invalid trusted proxy entry: ${JSON.stringify(entry)}`);
      prefixes.push(p);
    }
    prefixesOf.set(this, prefixes);
  }

  has(ip: string): boolean {
    const b = parseIp(ip);
    return b !== undefined && trustedBytes(this, b);
  }
}

const prefixesOf = new WeakMap<TrustedProxies, Prefix[]>();

function trustedBytes(t: TrustedProxies, b: Uint8Array): boolean {
  return (prefixesOf.get(t) ?? []).some((p) => matches(p, b));
}

/**
 * The client address used as the rate-limit key.
 *
 * - No peer (no socket, e.g. in-process `app.request()`) → `"unknown"`; X-Forwarded-For is not trusted.
 * - Peer not a trusted proxy → the peer (canonical form); X-Forwarded-For is ignored, whatever it says.
 * - Peer trusted → X-Forwarded-For is walked right to left (each trusted proxy appends the address it saw
 *   on the right). Trusted addresses are skipped; the first untrusted one is the client. Entries left of it
 *   were written by the client and are never looked at.
 * - A garbage entry met during the walk stops it: the answer is the last trusted hop seen (the hop that
 *   passed the garbage on). Returning the garbage itself would let a client pick a fresh bucket per request.
 * - Every entry trusted → the left-most one (e.g. a request made by a proxy itself). No or empty header →
 *   the peer. Empty elements (`a,,b`) are skipped.
 *
 * Addresses are returned in canonical form: IPv4-mapped IPv6 as dotted quad, IPv6 per RFC 5952, so one
 * client gets one bucket however its address was spelled.
 */
export function clientIp(
  peer: string | undefined,
  xForwardedFor: string | undefined,
  trusted: TrustedProxies,
): string {
  if (peer === undefined || peer.trim() === '') return 'unknown';
  const peerBytes = parseIp(peer);
  if (!peerBytes) return peer.trim();
  if (!trustedBytes(trusted, peerBytes) || !xForwardedFor) return formatIp(peerBytes);

  let last = peerBytes;
  const entries = xForwardedFor.split(',');
  for (let i = entries.length - 1; i >= 0; i--) {
    const raw = entries[i]!.trim();
    if (raw === '') continue;
    const b = parseForwardedAddress(raw);
    if (!b) break;
    if (!trustedBytes(trusted, b)) return formatIp(b);
    last = b;
  }
  return formatIp(last);
}

/**
 * A rate-limit bucket key for a client address: IPv4 as is, IPv6 truncated to its /64 (one subscriber
 * usually holds a whole /64, so per-address buckets are trivially dodged). Anything else is returned
 * unchanged.
 */
export function ipBucketKey(ip: string): string {
  const b = parseIp(ip);
  if (!b || isV4Mapped(b)) return b ? formatIp(b) : ip;
  const masked = new Uint8Array(16);
  masked.set(b.subarray(0, 8));
  return `${formatIp(masked)}/64`;
}
