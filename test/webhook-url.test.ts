/**
 * The webhook address rules (lib/events/url.ts) as pure functions, with a resolver injected where the Node
 * build asks DNS; and the configuration of live events and webhooks (lib/framework/config.ts).
 */
import { describe, expect, it } from 'vitest';
import { addressProblem, checkWebhookUrl, parseWebhookUrl, resolvedProblem } from '../lib/events/url.ts';
import { HttpError } from '../lib/core/errors.ts';
import { ConfigError, loadConfig, retrySchedule } from '../lib/framework/config.ts';

const strict = { allowHttp: false, allowPrivate: false };

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof HttpError && e.status === 400) return e.message;
    throw e;
  }
  return 'accepted';
}

describe('addressProblem', () => {
  it('accepts public unicast addresses only', () => {
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '2606:4700:4700::1111',
      '[2001:4860:4860::8888]',
      '2001:4860:4860:0:0:0:0:8888',
      '2A00:1450:4001:81B::200E',
      // 6to4 of a public IPv4 address; AS112's direct delegation (globally reachable).
      '2002:808:808::1',
      '2620:4f:8000::1',
    ]) {
      expect(addressProblem(a), a).toBeNull();
    }
    const cases: Array<[string, string]> = [
      ['127.0.0.1', 'a loopback address'],
      ['10.255.0.1', 'a private address'],
      ['172.31.255.255', 'a private address'],
      ['192.168.10.1', 'a private address'],
      ['169.254.0.5', 'a link-local address'],
      ['100.127.0.1', 'a carrier-grade NAT address'],
      ['0.0.0.0', 'an unspecified address'],
      ['224.0.0.1', 'a multicast address'],
      ['255.255.255.255', 'a broadcast address'],
      ['240.0.0.1', 'a reserved address'],
      ['fe80::1%eth0', 'a link-local address'],
    ];
    for (const [a, problem] of cases) expect(addressProblem(a), a).toBe(problem);
  });

  it('refuses every special-purpose IPv6 range, in every spelling', () => {
    const cases: Array<[string, string]> = [
      // Loopback and unspecified: compressed, expanded, bracketed, with a zone id.
      ['::1', 'a loopback address'],
      ['0:0:0:0:0:0:0:1', 'a loopback address'],
      ['0000:0000:0000:0000:0000:0000:0000:0001', 'a loopback address'],
      ['[::1]', 'a loopback address'],
      ['::1%lo', 'a loopback address'],
      ['::', 'an unspecified address'],
      ['0:0:0:0:0:0:0:0', 'an unspecified address'],
      // IPv4-compatible ::/96, whatever it embeds: a dotted-quad tail, hex groups, expanded.
      ['::127.0.0.1', 'an IPv4-compatible address (127.0.0.1)'],
      ['[::127.0.0.1]', 'an IPv4-compatible address (127.0.0.1)'],
      ['::7f00:1', 'an IPv4-compatible address (127.0.0.1)'],
      ['::a00:1', 'an IPv4-compatible address (10.0.0.1)'],
      ['::A00:1', 'an IPv4-compatible address (10.0.0.1)'],
      ['0:0:0:0:0:0:10.0.0.1', 'an IPv4-compatible address (10.0.0.1)'],
      ['::8.8.8.8', 'an IPv4-compatible address (8.8.8.8)'],
      // IPv4-mapped, whatever it maps.
      ['::ffff:127.0.0.1', 'an IPv4-mapped loopback address (127.0.0.1)'],
      ['::FFFF:7F00:1', 'an IPv4-mapped loopback address (127.0.0.1)'],
      ['0:0:0:0:0:ffff:c0a8:0101', 'an IPv4-mapped private address (192.168.1.1)'],
      ['::ffff:169.254.169.254', 'an IPv4-mapped link-local address (169.254.169.254)'],
      ['::ffff:8.8.8.8', 'an IPv4-mapped address (8.8.8.8)'],
      // NAT64, the well-known and the local-use prefix.
      ['64:ff9b::a00:1', 'a NAT64 address'],
      ['64:ff9b::10.0.0.1', 'a NAT64 address'],
      ['64:FF9B::8.8.8.8', 'a NAT64 address'],
      ['64:ff9b:1::a00:1', 'a NAT64 (local-use) address'],
      // 6to4 of a refused IPv4 address.
      ['2002:7f00:1::', 'a 6to4 address of a loopback address (127.0.0.1)'],
      ['2002:7F00:0001:0000:0000:0000:0000:0001', 'a 6to4 address of a loopback address (127.0.0.1)'],
      ['2002:a00:1::1', 'a 6to4 address of a private address (10.0.0.1)'],
      ['2002:a9fe:a9fe::', 'a 6to4 address of a link-local address (169.254.169.254)'],
      // Teredo, benchmarking, the rest of 2001::/23, documentation, discard, dummy, segment routing.
      ['2001::1', 'a Teredo address'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'a Teredo address'],
      ['2001:2::1', 'a benchmarking address'],
      ['2001:3::1', 'an IETF protocol assignment address'],
      ['2001:1ff::1', 'an IETF protocol assignment address'],
      ['2001:db8::1', 'a documentation address'],
      ['2001:DB8:0:0:0:0:0:1', 'a documentation address'],
      ['3fff::1', 'a documentation address'],
      ['3fff:fff::1', 'a documentation address'],
      ['100::1', 'a discard-only address'],
      ['100:0:0:1::1', 'a dummy address'],
      ['5f00::1', 'a segment routing address'],
      // Unique-local, link-local (with zone ids), site-local, multicast.
      ['fc00::1', 'a unique-local address'],
      ['fdff::1', 'a unique-local address'],
      ['FD12:3456::1', 'a unique-local address'],
      ['fe80::abcd', 'a link-local address'],
      ['FE80::1%25eth0', 'a link-local address'],
      ['[fe80::1%eth0]', 'a link-local address'],
      ['febf::1', 'a link-local address'],
      ['fec0::1', 'a site-local address'],
      ['ff02::1', 'a multicast address'],
      ['FF0E::1%2', 'a multicast address'],
      // Outside global unicast (2000::/3): reserved by the IETF.
      ['1::', 'a reserved address'],
      ['::1:0:0:1', 'a reserved address'],
      ['4000::1', 'a reserved address'],
      ['e000::1', 'a reserved address'],
    ];
    for (const [a, problem] of cases) expect(addressProblem(a), a).toBe(problem);
  });
});

describe('parseWebhookUrl and checkWebhookUrl', () => {
  it('https only, unless http is allowed; a URL at most 2048 characters; no credentials', () => {
    expect(() => parseWebhookUrl('http://example.com/', strict)).toThrow('webhook url must use https');
    expect(parseWebhookUrl('http://example.com/', { allowHttp: true, allowPrivate: false }).href).toBe('http://example.com/');
    expect(() => parseWebhookUrl('ws://example.com/', { allowHttp: true, allowPrivate: false })).toThrow('webhook url must use https');
    expect(() => parseWebhookUrl(`https://example.com/${'a'.repeat(2030)}`, strict)).toThrow('webhook url not allowed: longer than 2048 characters');
    expect(parseWebhookUrl(`https://example.com/${'a'.repeat(2028)}`, strict).hostname).toBe('example.com');
    expect(() => parseWebhookUrl('https://u@example.com/', strict)).toThrow('webhook url not allowed: credentials in the URL');
  });

  it('literal addresses in every spelling the URL parser accepts', () => {
    for (const [url, host] of [
      ['https://0x7f.1/', '127.0.0.1'],
      ['https://017700000001/', '127.0.0.1'],
      ['https://[0:0:0:0:0:ffff:7f00:1]/', '[::ffff:7f00:1]'],
      ['https://[::127.0.0.1]/', '[::7f00:1]'],
      ['https://[::a00:1]/', '[::a00:1]'],
      ['https://[0:0:0:0:0:0:A00:1]:8443/', '[::a00:1]'],
      ['https://[64:ff9b::127.0.0.1]/', '[64:ff9b::7f00:1]'],
      ['https://[2002:7f00:1::]/', '[2002:7f00:1::]'],
      ['https://[2001:DB8::1]/', '[2001:db8::1]'],
      ['https://[fec0::1]/', '[fec0::1]'],
    ] as const) {
      expect(() => parseWebhookUrl(url, strict), url).toThrow(`webhook url not allowed: ${host} is a`);
    }
    // With private addresses allowed, anything goes but the scheme.
    expect(parseWebhookUrl('https://127.0.0.1:8/', { allowHttp: false, allowPrivate: true }).port).toBe('8');
  });

  it('a name is judged by every address it resolves to (the Node build); without a resolver, localhost by name', async () => {
    const dns: Record<string, string[]> = {
      'public.test': ['93.184.216.34', '2606:2800:220:1::1'],
      'mixed.test': ['93.184.216.34', '10.0.0.7'],
      'mapped.test': ['::ffff:169.254.169.254'],
      'compat.test': ['2606:2800:220:1::1', '::a0b:c0d'],
      'empty.test': [],
    };
    const resolve = async (host: string) => {
      const found = dns[host];
      if (!found) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      return found;
    };
    expect((await checkWebhookUrl('https://public.test/h', strict, resolve)).hostname).toBe('public.test');
    // Refused without saying what the name resolves to: an owner must not learn the internal DNS through it.
    expect(await refusal(checkWebhookUrl('https://mixed.test/h', strict, resolve))).toBe('webhook url not allowed: mixed.test resolves to a non-public address');
    expect(await refusal(checkWebhookUrl('https://mapped.test/h', strict, resolve))).toBe('webhook url not allowed: mapped.test resolves to a non-public address');
    expect(await refusal(checkWebhookUrl('https://compat.test/h', strict, resolve))).toBe('webhook url not allowed: compat.test resolves to a non-public address');
    // A name that does not resolve now names no address: accepted, and checked again at each delivery.
    expect(await refusal(checkWebhookUrl('https://empty.test/h', strict, resolve))).toBe('accepted');
    expect(await refusal(checkWebhookUrl('https://nowhere.test/h', strict, resolve))).toBe('accepted');
    expect(resolvedProblem('empty.test', [])).toBe('empty.test does not resolve');
    // No resolver (Workers): names pass, but localhost names.
    expect((await checkWebhookUrl('https://mixed.test/h', strict)).hostname).toBe('mixed.test');
    expect(await refusal(checkWebhookUrl('https://app.localhost/h', strict))).toBe('webhook url not allowed: app.localhost is a loopback name');
    // Private addresses allowed: nothing is resolved.
    expect((await checkWebhookUrl('https://mixed.test/h', { allowHttp: false, allowPrivate: true }, resolve)).hostname).toBe('mixed.test');
    expect(resolvedProblem('x.test', ['8.8.8.8', '::1'])).toBe('x.test resolves to a non-public address');
    expect(resolvedProblem('db.internal', ['10.11.12.13'])).toBe('db.internal resolves to a non-public address');
    expect(resolvedProblem('x.test', ['8.8.8.8', '2606:4700:4700::1111'])).toBeNull();
  });
});

describe('configuration of live events and webhooks', () => {
  const load = (env: Record<string, string>) => loadConfig({ SERVICE_SESSION_SECRET: 'x'.repeat(32), ...env }, '/');

  it('defaults: https only, public addresses only, a ping every 15 s, retries at 10 s, 1 min, 10 min, 1 h, 6 h', () => {
    const { config } = load({});
    expect([config.webhookAllowHttp, config.webhookAllowPrivate, config.eventsPingMs]).toEqual([false, false, 15_000]);
    expect(config.webhookRetryMs).toEqual([10_000, 60_000, 600_000, 3_600_000, 21_600_000]);
  });

  it('the allow flags, a shorter ping (a longer one is lowered to 15 s, with a warning), a retry schedule', () => {
    const { config, warnings } = load({
      SERVICE_WEBHOOK_ALLOW_HTTP: 'yes',
      SERVICE_WEBHOOK_ALLOW_PRIVATE: '1',
      SERVICE_EVENTS_PING_MS: '60000',
      SERVICE_WEBHOOK_RETRY_MS: ' 100, 200 ,5000',
    });
    expect([config.webhookAllowHttp, config.webhookAllowPrivate, config.eventsPingMs]).toEqual([true, true, 15_000]);
    expect(warnings).toContain('SERVICE_EVENTS_PING_MS (60000) is above 15000; using 15000');
    expect(config.webhookRetryMs).toEqual([100, 200, 5000]);
    expect(load({ SERVICE_EVENTS_PING_MS: '250' }).config.eventsPingMs).toBe(250);
    expect(load({ SERVICE_EVENTS_PING_MS: 'soon' }).config.eventsPingMs).toBe(15_000);
  });

  it('a delivery timeout of 10 s and 1,000 pending deliveries per webhook; either may be lowered, never raised', () => {
    expect([load({}).config.webhookTimeoutMs, load({}).config.webhookMaxPending]).toEqual([10_000, 1_000]);
    const low = load({ SERVICE_WEBHOOK_TIMEOUT_MS: '2500', SERVICE_WEBHOOK_MAX_PENDING: ' 5 ' });
    expect([low.config.webhookTimeoutMs, low.config.webhookMaxPending]).toEqual([2_500, 5]);
    expect(low.warnings.filter((w) => w.includes('WEBHOOK'))).toEqual([]);
    const high = load({ SERVICE_WEBHOOK_TIMEOUT_MS: '60000', SERVICE_WEBHOOK_MAX_PENDING: '5000' });
    expect([high.config.webhookTimeoutMs, high.config.webhookMaxPending]).toEqual([10_000, 1_000]);
    expect(high.warnings.filter((w) => w.includes('WEBHOOK'))).toEqual([
      'SERVICE_WEBHOOK_TIMEOUT_MS (60000) is above 10000; using 10000',
      'SERVICE_WEBHOOK_MAX_PENDING (5000) is above 1000; using 1000',
    ]);
    const junk = load({ SERVICE_WEBHOOK_TIMEOUT_MS: 'soon', SERVICE_WEBHOOK_MAX_PENDING: '0' });
    expect([junk.config.webhookTimeoutMs, junk.config.webhookMaxPending]).toEqual([10_000, 1_000]);
  });

  it('SERVICE_EVENTS_MAX_STREAMS: 5,000 open streams by default; a positive integer sets it, anything else is the default', () => {
    expect(load({}).config.eventsMaxStreams).toBe(5_000);
    expect(load({ SERVICE_EVENTS_MAX_STREAMS: '12' }).config.eventsMaxStreams).toBe(12);
    for (const bad of ['0', '-3', 'many', '2.5']) expect(load({ SERVICE_EVENTS_MAX_STREAMS: bad }).config.eventsMaxStreams, bad).toBe(5_000);
  });

  it('a retry schedule that is not increasing whole milliseconds (at most 10) refuses to start', () => {
    for (const bad of ['x', '100,100', '200,100', '0', '-5', '1.5', '1,,2', Array.from({ length: 11 }, (_, i) => i + 1).join(',')]) {
      expect(() => retrySchedule(bad), bad).toThrow(ConfigError);
    }
    expect(retrySchedule('')).toEqual([10_000, 60_000, 600_000, 3_600_000, 21_600_000]);
  });
});
