import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { TrustedProxies, clientIp, type ClientIpOf } from '../../framework/http/client-ip.ts';

/**
 * The direct peer's address on @hono/node-server (Hono's getConnInfo), or undefined when the request did not
 * come over a socket (in-process `app.request()`).
 */
export function nodePeer(c: Context): string | undefined {
  const env = c.env as { incoming?: unknown; server?: unknown } | undefined;
  if (!env?.incoming && !env?.server) return undefined;
  return getConnInfo(c).remote.address;
}

/** The Node runtime's client address: the peer, or X-Forwarded-For behind a trusted proxy (docs/limits.md "Rate limits"). */
export function nodeClientIp(trustedProxies: string[]): ClientIpOf {
  const trusted = new TrustedProxies(trustedProxies);
  return (c) => clientIp(nodePeer(c), c.req.header('x-forwarded-for'), trusted);
}
