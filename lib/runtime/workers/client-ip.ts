import type { Context } from 'hono';
import { getConnInfo } from 'hono/cloudflare-workers';
import { normalizeIp } from '../../framework/http/client-ip.ts';

/**
 * The Workers runtime's client address: `CF-Connecting-IP` (Hono's getConnInfo for Workers), which
 * Cloudflare's edge sets itself, overwriting whatever the client sent. There is no proxy chain to walk:
 * X-Forwarded-For is never looked at. No header (a request that did not come through the edge) → `"unknown"`.
 */
export function workersClientIp(c: Context): string {
  const ip = getConnInfo(c).remote.address?.trim();
  if (!ip) return 'unknown';
  return normalizeIp(ip) ?? ip;
}
