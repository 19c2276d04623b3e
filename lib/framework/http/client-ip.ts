/**
 * Client IP derivation for rate limiting (docs/limits.md "Rate limits": X-Forwarded-For is used only when the direct
 * peer is a trusted proxy), on ipaddr.js. Pure, web-standard code; the runtimes supply the peer
 * (lib/runtime/node/client-ip.ts, lib/runtime/workers/client-ip.ts).
 *
 * An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is the IPv4 address it maps. Address text is strict:
 * IPv4 only as a dotted quad without leading zeros (`010.0.0.1` is octal to some parsers), an IPv6 zone
 * (`%eth0`) is dropped, no ports or brackets (see {@link parseForwardedAddress} for those).
 */
import ipaddr from 'ipaddr.js';
import type { Context } from 'hono';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** How a runtime finds the client address of a request: the rate-limit key and the access log's `ip`. */
export type ClientIpOf = (c: Context) => string;

/** Parses an IPv4 or IPv6 address; undefined when it is not one. IPv4-mapped IPv6 comes back as IPv4. */
export function parseIp(input: string): IpAddress | undefined {
  let s = input.trim();
  if (!s.includes(':')) return ipaddr.IPv4.isValidFourPartDecimal(s) ? ipaddr.IPv4.parse(s) : undefined;
  if (s.includes('%')) s = s.slice(0, s.indexOf('%'));
  // ipaddr.js reads an embedded IPv4 tail loosely (`::ffff:0x7f.0.0.1`): hold it to a dotted quad too.
  if (s.length > 45 || (s.includes('.') && !ipaddr.IPv4.isValidFourPartDecimal(s.slice(s.lastIndexOf(':') + 1)))) {
    return undefined;
  }
  if (!ipaddr.IPv6.isValid(s)) return undefined;
  const v6 = ipaddr.IPv6.parse(s);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/** Canonical text: dotted quad for IPv4, RFC 5952 form for IPv6. */
export function formatIp(a: IpAddress): string {
  return a.kind() === 'ipv4' ? a.toString() : (a as ipaddr.IPv6).toRFC5952String();
}

/** The canonical form of an address, or undefined when it is not one. */
export function normalizeIp(input: string): string | undefined {
  const a = parseIp(input);
  return a && formatIp(a);
}

/** Whether an address is loopback (127.0.0.0/8, ::1, or their IPv4-mapped forms). */
export function isLoopbackIp(input: string): boolean {
  return parseIp(input)?.range() === 'loopback';
}

/**
 * An X-Forwarded-For element: a bare address, or one with a port as some proxies write it
 * (`1.2.3.4:5678`, `[2001:db8::1]:443`), or a bracketed or quoted one. Undefined when it is garbage
 * (including the literal `unknown` some proxies write).
 */
export function parseForwardedAddress(input: string): IpAddress | undefined {
  const s = input.trim().replace(/^"(.*)"$/, '$1');
  const m = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(s) ?? /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(s);
  return parseIp(m ? m[1]! : s);
}

/** Every range is kept in IPv6 space (IPv4 `/n` as `::ffff:a.b.c.d/96+n`), so mapped forms match alike. */
type Range = [ipaddr.IPv6, number];

const asV6 = (a: IpAddress): ipaddr.IPv6 => (a.kind() === 'ipv4' ? (a as ipaddr.IPv4).toIPv4MappedAddress() : (a as ipaddr.IPv6));

function parseRange(entry: string): Range | undefined {
  const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  const addr = m && parseIp(m[1]!);
  if (!addr) return undefined;
  const isV4Text = !m[1]!.includes(':');
  const bits = m[2] === undefined ? (isV4Text ? 32 : 128) : Number(m[2]);
  if (bits > (isV4Text ? 32 : 128)) return undefined;
  return [asV6(addr), isV4Text ? 96 + bits : bits];
}

/**
 * The set of trusted proxies: exact IPv4/IPv6 addresses and CIDR blocks (`10.0.0.0/8`, `fd00::/8`; host
 * bits may be set). IPv4-mapped IPv6 peers (`::ffff:10.1.2.3`) match IPv4 entries. Throws a TypeError naming
 * the first entry that is neither an address nor a CIDR block.
 */
export class TrustedProxies {
  readonly #ranges: Range[];

  constructor(list: string[]) {
    this.#ranges = list.map((entry) => {
      const r = parseRange(entry);
      if (!r) throw new TypeError(`invalid trusted proxy entry: ${JSON.stringify(entry)}`);
      return r;
    });
  }

  has(ip: string | IpAddress): boolean {
    const a = typeof ip === 'string' ? parseIp(ip) : ip;
    if (!a) return false;
    const v6 = asV6(a);
    return this.#ranges.some((r) => v6.match(r));
  }
}

/** How many peer addresses {@link peerOf} keeps: a keep-alive client sends many requests from one. */
export const PEERS_KEPT = 1024;
const peers = new Map<string, readonly [IpAddress, string] | null>();

/**
 * A peer address parsed, with its canonical text; null when it is not an address. Kept for the last
 * {@link PEERS_KEPT} peers (oldest dropped first): parsing with ipaddr.js cost 2 µs a request for
 * `127.0.0.1` and 8 for `::ffff:127.0.0.1`, a peer of a server listening on `::` (measured in a loop).
 * Exact, as the answer depends on the text alone; the parsed address is only read, never changed.
 */
function peerOf(peer: string): readonly [IpAddress, string] | null {
  let known = peers.get(peer);
  if (known === undefined) {
    const a = parseIp(peer);
    known = a ? [a, formatIp(a)] : null;
    // No address text is this long (45 characters at most): such a peer is answered, not kept.
    if (peer.length > 64) return known;
    if (peers.size >= PEERS_KEPT) peers.delete(peers.keys().next().value!);
    peers.set(peer, known);
  }
  return known;
}

/**
 * The client address behind a peer that may be a trusted proxy (the Node runtime's rule).
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
 * Addresses are returned in canonical form, so one client gets one bucket however its address was spelled.
 */
export function clientIp(peer: string | undefined, xForwardedFor: string | undefined, trusted: TrustedProxies): string {
  if (peer === undefined || peer.trim() === '') return 'unknown';
  const known = peerOf(peer);
  if (!known) return peer.trim();
  const [peerAddr, peerText] = known;
  if (!xForwardedFor || !trusted.has(peerAddr)) return peerText;

  let last = peerAddr;
  const entries = xForwardedFor.split(',');
  for (let i = entries.length - 1; i >= 0; i--) {
    const raw = entries[i]!.trim();
    if (raw === '') continue;
    const a = parseForwardedAddress(raw);
    if (!a) break;
    if (!trusted.has(a)) return formatIp(a);
    last = a;
  }
  return formatIp(last);
}

/**
 * A rate-limit bucket key for a client address: IPv4 as is, IPv6 truncated to its /64 (one subscriber
 * usually holds a whole /64, so per-address buckets are trivially dodged). Anything else is returned
 * unchanged.
 */
export function ipBucketKey(ip: string): string {
  const a = parseIp(ip);
  if (!a || a.kind() === 'ipv4') return a ? formatIp(a) : ip;
  const parts = (a as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toRFC5952String()}/64`;
}
