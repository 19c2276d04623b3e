/**
 * The webhook address rules (lib/events/url.ts) as pure functions, with a resolver injected where the Node
 * build asks DNS; and the configuration of live events and webhooks (lib/config.ts).
 */
import { describe, expect, it } from 'vitest';
import { addressProblem, checkWebhookUrl, parseWebhookUrl, resolvedProblem } from '../lib/events/url.ts';
import { HttpError } from '../lib/errors.ts';
import { ConfigError, loadConfig, retrySchedule } from '../lib/config.ts';

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
    for (const a of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '[2001:4860:4860::8888]']) expect(addressProblem(a), a).toBeNull();
    const cases: Array<[string, string]> = [
      ['127.0.0.1', 'a loopback address'],
      ['::1', 'a loopback address'],
      ['10.255.0.1', 'a private address'],
      ['172.31.255.255', 'a private address'],
      ['192.168.10.1', 'a private address'],
      ['169.254.0.5', 'a link-local address'],
      ['fe80::abcd', 'a link-local address'],
      ['fc00::1', 'a unique-local address'],
      ['fdff::1', 'a unique-local address'],
      ['100.127.0.1', 'a carrier-grade NAT address'],
      ['0.0.0.0', 'an unspecified address'],
      ['::', 'an unspecified address'],
      ['224.0.0.1', 'a multicast address'],
      ['ff02::1', 'a multicast address'],
      ['255.255.255.255', 'a broadcast address'],
      ['240.0.0.1', 'a reserved address'],
      ['2001:db8::1', 'a reserved address'],
      ['::ffff:127.0.0.1', 'an IPv4-mapped loopback address (127.0.0.1)'],
      ['::ffff:c0a8:0101', 'an IPv4-mapped private address (192.168.1.1)'],
      ['64:ff9b::a00:1', 'a non-public (rfc6052) address'],
      ['2002:7f00:1::', 'a non-public (6to4) address'],
      ['fe80::1%eth0', 'a link-local address'],
    ];
    for (const [a, problem] of cases) expect(addressProblem(a), a).toBe(problem);
    // A mapped public address is public.
    expect(addressProblem('::ffff:8.8.8.8')).toBeNull();
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
      'empty.test': [],
    };
    const resolve = async (host: string) => {
      const found = dns[host];
      if (!found) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      return found;
    };
    expect((await checkWebhookUrl('https://public.test/h', strict, resolve)).hostname).toBe('public.test');
    expect(await refusal(checkWebhookUrl('https://mixed.test/h', strict, resolve))).toBe(
      'webhook url not allowed: mixed.test resolves to 10.0.0.7, a private address',
    );
    expect(await refusal(checkWebhookUrl('https://mapped.test/h', strict, resolve))).toBe(
      'webhook url not allowed: mapped.test resolves to ::ffff:169.254.169.254, an IPv4-mapped link-local address (169.254.169.254)',
    );
    // A name that does not resolve now names no address: accepted, and checked again at each delivery.
    expect(await refusal(checkWebhookUrl('https://empty.test/h', strict, resolve))).toBe('accepted');
    expect(await refusal(checkWebhookUrl('https://nowhere.test/h', strict, resolve))).toBe('accepted');
    expect(resolvedProblem('empty.test', [])).toBe('empty.test does not resolve');
    // No resolver (Workers): names pass, but localhost names.
    expect((await checkWebhookUrl('https://mixed.test/h', strict)).hostname).toBe('mixed.test');
    expect(await refusal(checkWebhookUrl('https://app.localhost/h', strict))).toBe('webhook url not allowed: app.localhost is a loopback name');
    // Private addresses allowed: nothing is resolved.
    expect((await checkWebhookUrl('https://mixed.test/h', { allowHttp: false, allowPrivate: true }, resolve)).hostname).toBe('mixed.test');
    expect(resolvedProblem('x.test', ['8.8.8.8', '::1'])).toBe('x.test resolves to ::1, a loopback address');
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
