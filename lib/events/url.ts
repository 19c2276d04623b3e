import ipaddr from 'ipaddr.js';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { MAX_WEBHOOK_URL_CHARS } from '../../schema/wire/webhooks.ts';

/**
 * Where a webhook may point (docs/api.md "Webhooks"): an `https://` URL (or `http://` with
 * SERVICE_WEBHOOK_ALLOW_HTTP) whose host is, and resolves only to, public addresses — not loopback, private,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved, nor an IPv6 address outside global
 * unicast or in a special-purpose block (addressProblem) — unless SERVICE_WEBHOOK_ALLOW_PRIVATE. Checked when a webhook is made and again at each delivery (a name
 * may come to resolve elsewhere). Runtime-neutral: resolving names is the runtime's (HostResolver; Node:
 * lib/runtime/node/webhook-sender.ts, which also connects to the very address it checked).
 */

export interface UrlPolicy {
  /** SERVICE_WEBHOOK_ALLOW_HTTP: `http://` URLs are accepted too. */
  allowHttp: boolean;
  /** SERVICE_WEBHOOK_ALLOW_PRIVATE: any address is accepted (internal targets, tests on loopback). */
  allowPrivate: boolean;
}

/** The addresses a host name resolves to (every one of them). */
export type HostResolver = (host: string) => Promise<string[]>;

export const NOT_ALLOWED = 'webhook url not allowed';

/** A refusal of a webhook URL: 400 with docs/api.md's message ("Webhooks"). */
export const notAllowed = (reason: string) => refuse(R.webhook_url_not_allowed, reason);

const RANGE_NAMES: Record<string, string> = {
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  carrierGradeNat: 'carrier-grade NAT',
  unspecified: 'unspecified',
  multicast: 'multicast',
  broadcast: 'broadcast',
  reserved: 'reserved',
};

/** `a`/`an` and the name: the end of a sentence such as `10.0.0.8 is a private address`. */
const article = (name: string) => (/^(?:[aeio]|un(?!i)|IETF)/i.test(name) ? `an ${name}` : `a ${name}`);

/** What is wrong with an IPv4 address (ipaddr.js's ranges: all but `unicast` are refused), or null. */
function ipv4Problem(ip: ipaddr.IPv4): string | null {
  const range = ip.range();
  if (range === 'unicast') return null;
  return `${article(RANGE_NAMES[range] ?? `non-public (${range})`)} address`;
}

/**
 * The IPv6 blocks refused whatever follows their prefix, after IANA's IPv6 Special-Purpose Address Registry
 * (every block there that is not globally reachable, and those that translate to or tunnel IPv4, whose
 * target cannot be judged here) and its Address Space registry: only 2000::/3 is global unicast, so anything
 * outside it (reserved, ULA, link-local, site-local, multicast, the discard and NAT64 prefixes, segment
 * routing's 5f00::/16) is refused as well. Checked in order: the first match names the refusal.
 */
const IPV6_REFUSED: ReadonlyArray<[prefix: string, bits: number, name: string]> = [
  ['64:ff9b::', 96, 'NAT64'],
  ['64:ff9b:1::', 48, 'NAT64 (local-use)'],
  ['100::', 64, 'discard-only'],
  ['100:0:0:1::', 64, 'dummy'],
  ['2001::', 32, 'Teredo'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:db8::', 32, 'documentation'],
  // The rest of IETF protocol assignments (anycast services, AMT, AS112, ORCHID): no webhook lives there.
  ['2001::', 23, 'IETF protocol assignment'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment routing'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];
const IPV6_BLOCKS = IPV6_REFUSED.map(([prefix, bits, name]) => ({ net: ipaddr.IPv6.parse(prefix), bits, name }));
const GLOBAL_UNICAST = ipaddr.IPv6.parse('2000::');

/** The IPv4 address in bits 16–47 of a 6to4 address (2002:AABB:CCDD::/48 carries AA.BB.CC.DD). */
const sixToFourV4 = (p: number[]) => new ipaddr.IPv4([p[1]! >> 8, p[1]! & 0xff, p[2]! >> 8, p[2]! & 0xff]);
/** The IPv4 address in the last 32 bits. */
const lowV4 = (p: number[]) => new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);

/** What is wrong with an IPv6 address, or null for a global unicast address outside every special block. */
function ipv6Problem(ip: ipaddr.IPv6): string | null {
  const p = ip.parts;
  if (p.slice(0, 5).every((x) => x === 0) && p[5] === 0xffff) {
    const v4 = lowV4(p);
    const inner = ipv4Problem(v4);
    return inner ? `an IPv4-mapped ${inner.replace(/^an? /, '')} (${v4.toString()})` : `an IPv4-mapped address (${v4.toString()})`;
  }
  if (p.slice(0, 6).every((x) => x === 0)) {
    if (p[6] === 0 && p[7] === 0) return 'an unspecified address';
    if (p[6] === 0 && p[7] === 1) return 'a loopback address';
    return `an IPv4-compatible address (${lowV4(p).toString()})`;
  }
  if (ip.match(ipaddr.IPv6.parse('2002::'), 16)) {
    const v4 = sixToFourV4(p);
    const inner = ipv4Problem(v4);
    return inner ? `a 6to4 address of ${inner} (${v4.toString()})` : null;
  }
  for (const { net, bits, name } of IPV6_BLOCKS) if (ip.match(net, bits)) return `${article(name)} address`;
  if (!ip.match(GLOBAL_UNICAST, 3)) return 'a reserved address';
  return null;
}

/**
 * An IPv6 text with a dotted-quad tail (`::127.0.0.1`, `64:ff9b::10.0.0.1`) spelled in hex groups instead:
 * ipaddr.js reads any such tail as IPv4-mapped, whatever its prefix.
 */
function hexTail(text: string): string {
  const m = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (!m || !ipaddr.IPv4.isValidFourPartDecimal(m[2]!)) return text;
  const [a, b, c, d] = ipaddr.IPv4.parse(m[2]!).octets as [number, number, number, number];
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/**
 * What is wrong with connecting to `address` (an IPv4 or IPv6 literal, brackets and a zone id allowed), as
 * the end of a sentence (`a loopback address`), or null for a public unicast address. IPv4 addresses are
 * refused in ipaddr.js's non-unicast ranges; IPv6 ones outside global unicast or in a special-purpose block
 * (IPV6_REFUSED), IPv4-mapped and IPv4-compatible ones whatever they embed, 6to4 ones when the IPv4 address
 * they embed is refused.
 */
export function addressProblem(address: string): string | null {
  const text = hexTail(address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, ''));
  if (!ipaddr.isValid(text)) return 'not an IP address';
  const ip = ipaddr.parse(text);
  return ip.kind() === 'ipv4' ? ipv4Problem(ip as ipaddr.IPv4) : ipv6Problem(ip as ipaddr.IPv6);
}

/** Whether a URL host (as `URL.hostname` gives it) is an IP literal. */
export function isIpHost(hostname: string): boolean {
  return ipaddr.isValid(hostname.replace(/^\[(.*)\]$/, '$1'));
}

/**
 * The URL's own rules, before any name is resolved: its length, scheme, no credentials in it, and — unless
 * private addresses are allowed — no literal non-public address. Where names are not resolved
 * (`resolvesNames` false: Workers), `localhost` and `*.localhost` are refused by name. Throws the 400.
 */
export function parseWebhookUrl(text: string, policy: UrlPolicy, resolvesNames = false): URL {
  if (text.length > MAX_WEBHOOK_URL_CHARS) throw notAllowed(`longer than ${MAX_WEBHOOK_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw refuse(R.webhook_url_https);
  }
  const schemes = policy.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol) || url.hostname === '') throw refuse(R.webhook_url_https);
  if (url.username !== '' || url.password !== '') throw notAllowed('credentials in the URL (sign with the secret instead)');
  if (policy.allowPrivate) return url;
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (isIpHost(host)) {
    const problem = addressProblem(host);
    if (problem) throw notAllowed(`${host} is ${problem}`);
  } else if (!resolvesNames && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw notAllowed(`${host} is a loopback name`);
  }
  return url;
}

/**
 * The problem with the addresses a name resolved to, or null when every one is public. Which address, and
 * why, is not said: the refusal reaches the webhook's owner, who must not learn through it what a name
 * resolves to inside the server's network.
 */
export function resolvedProblem(host: string, addresses: readonly string[]): string | null {
  if (addresses.length === 0) return `${host} does not resolve`;
  return addresses.some((a) => addressProblem(a) !== null) ? `${host} resolves to a non-public address` : null;
}

/**
 * The whole check of a webhook URL at its creation: parseWebhookUrl, then (private addresses not allowed, a
 * name, a resolver given) every address the name resolves to. A name that does not resolve now is accepted:
 * it names no address yet, and each delivery checks it again (a typo shows in the deliveries). Without a
 * resolver (Workers) names are left to the platform.
 */
export async function checkWebhookUrl(text: string, policy: UrlPolicy, resolve?: HostResolver): Promise<URL> {
  const url = parseWebhookUrl(text, policy, resolve !== undefined);
  if (policy.allowPrivate || !resolve || isIpHost(url.hostname)) return url;
  let addresses: string[];
  try {
    addresses = await resolve(url.hostname);
  } catch {
    return url;
  }
  const problem = addresses.length > 0 ? resolvedProblem(url.hostname, addresses) : null;
  if (problem) throw notAllowed(problem);
  return url;
}
