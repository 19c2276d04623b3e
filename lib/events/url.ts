import ipaddr from 'ipaddr.js';
import { HttpError } from '../errors.ts';
import { MAX_WEBHOOK_URL_CHARS } from '../../schema/wire/webhooks.ts';

/**
 * Where a webhook may point (API.md "Webhooks"): an `https://` URL (or `http://` with
 * SERVICE_WEBHOOK_ALLOW_HTTP) whose host is, and resolves only to, public addresses — not loopback, private,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved, nor any of those mapped into IPv6 —
 * unless SERVICE_WEBHOOK_ALLOW_PRIVATE. Checked when a webhook is made and again at each delivery (a name
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

export const MUST_USE_HTTPS = 'webhook url must use https';
export const NOT_ALLOWED = 'webhook url not allowed';

/** A refusal of a webhook URL: 400 with API.md's message. */
export const notAllowed = (reason: string) => new HttpError(400, `${NOT_ALLOWED}: ${reason}`);

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

/**
 * What is wrong with connecting to `address` (an IPv4 or IPv6 literal, brackets allowed), as the end of a
 * sentence (`a loopback address`), or null for a public unicast address. An IPv4-mapped IPv6 address is
 * judged as the IPv4 address it maps.
 */
export function addressProblem(address: string): string | null {
  const text = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (!ipaddr.isValid(text)) return 'not an IP address';
  let ip = ipaddr.parse(text);
  const mapped = ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress();
  if (mapped) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  if (range === 'unicast') return null;
  const name = RANGE_NAMES[range] ?? `non-public (${range})`;
  return mapped ? `an IPv4-mapped ${name} address (${ip.toString()})` : `${name === 'unspecified' ? 'an' : 'a'} ${name} address`;
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
    throw new HttpError(400, MUST_USE_HTTPS);
  }
  const schemes = policy.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol) || url.hostname === '') throw new HttpError(400, MUST_USE_HTTPS);
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

/** The problem with any of the addresses a name resolved to, or null when every one is public. */
export function resolvedProblem(host: string, addresses: readonly string[]): string | null {
  if (addresses.length === 0) return `${host} does not resolve`;
  for (const a of addresses) {
    const problem = addressProblem(a);
    if (problem) return `${host} resolves to ${a}, ${problem}`;
  }
  return null;
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
