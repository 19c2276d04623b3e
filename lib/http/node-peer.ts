import type { Context } from 'hono';

/**
 * The direct peer's address as @hono/node-server exposes it (`c.env.incoming.socket`), or undefined
 * when the request did not come over a socket (in-process `app.request()`, Workers).
 */
export function peerAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? undefined;
}
