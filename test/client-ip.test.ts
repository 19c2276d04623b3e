// The runtimes' client-address seams (AppOptions.clientIp): Workers from CF-Connecting-IP, Node from the
// socket peer. The trusted-proxy rules themselves are pinned in http-pipeline.test.ts.
import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { workersClientIp } from '../lib/runtime/workers/client-ip.ts';
import { nodeClientIp, nodePeer } from '../lib/runtime/node/client-ip.ts';

function echo(of: (c: Parameters<typeof workersClientIp>[0]) => unknown) {
  const app = new Hono();
  app.get('/ip', (c) => c.json({ ip: of(c) ?? null }));
  return async (headers: Record<string, string>) => ((await (await app.request('/ip', { headers })).json()) as { ip: unknown }).ip;
}

describe('workersClientIp', () => {
  const ip = echo(workersClientIp);

  it('is CF-Connecting-IP', async () => {
    expect(await ip({ 'cf-connecting-ip': '203.0.113.9' })).toBe('203.0.113.9');
    expect(await ip({ 'CF-Connecting-IP': ' 2001:db8::1 ' })).toBe('2001:db8::1');
  });

  it('ignores X-Forwarded-For and the other forwarding headers, whatever the address', async () => {
    const forged = { 'x-forwarded-for': '1.1.1.1, 10.0.0.1', 'x-real-ip': '1.1.1.2', forwarded: 'for=1.1.1.3' };
    expect(await ip({ ...forged, 'cf-connecting-ip': '198.51.100.7' })).toBe('198.51.100.7');
    // No trusted-proxy walk on Workers, even from a loopback address (as local development reports).
    expect(await ip({ ...forged, 'cf-connecting-ip': '127.0.0.1' })).toBe('127.0.0.1');
    expect(await ip(forged)).toBe('unknown');
  });

  it('is canonical, so one client is one bucket however it is spelled', async () => {
    expect(await ip({ 'cf-connecting-ip': '::ffff:203.0.113.9' })).toBe('203.0.113.9');
    expect(await ip({ 'cf-connecting-ip': '2001:DB8:0:0:0:0:0:1' })).toBe('2001:db8::1');
  });

  it('no header, or an empty one → "unknown"; anything else is kept as it came', async () => {
    expect(await ip({})).toBe('unknown');
    expect(await ip({ 'cf-connecting-ip': ' ' })).toBe('unknown');
    expect(await ip({ 'cf-connecting-ip': 'weird' })).toBe('weird');
  });
});

describe('nodeClientIp without a socket (in-process app.request())', () => {
  it('has no peer, so X-Forwarded-For is not trusted: "unknown"', async () => {
    expect(await echo(nodePeer)({ 'x-forwarded-for': '203.0.113.9' })).toBeNull();
    expect(await echo(nodeClientIp(['127.0.0.1', '::1']))({ 'x-forwarded-for': '203.0.113.9' })).toBe('unknown');
  });

  it('refuses an invalid trusted-proxy entry at once', () => {
    expect(() => nodeClientIp(['proxy.internal'])).toThrow(/invalid trusted proxy entry/);
  });
});
