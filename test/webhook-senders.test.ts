/**
 * The two builds' webhook senders themselves (lib/runtime/node/webhook-sender.ts, lib/runtime/workers/
 * webhook-sender.ts): the check each makes right before it sends, whatever was checked when the webhook was
 * made. The Node sender against a real receiver on loopback; the Workers sender with a fetch handed in, so
 * that a refused URL is seen never to reach it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeWebhookSender } from '../lib/runtime/node/webhook-sender.ts';
import { fetchSender } from '../lib/runtime/workers/webhook-sender.ts';
import { startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

const body = new TextEncoder().encode('{"event":"ping"}');
const headers = { 'Content-Type': 'application/json', 'X-KR-Event': 'ping' };

describe('the Node sender', () => {
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => rx?.close());

  it('private targets off (http allowed): a name resolving to loopback is refused at the connection, and the receiver hears nothing', async () => {
    const port = new URL(rx.url).port;
    const send = nodeWebhookSender({ allowHttp: true, allowPrivate: false }, 5_000);
    expect(await send({ url: `http://localhost:${port}/by-name`, headers, body })).toEqual({
      error: 'webhook url not allowed: localhost resolves to a non-public address',
    });
    expect(await send({ url: `http://127.0.0.1:${port}/literal`, headers, body })).toEqual({
      error: 'webhook url not allowed: 127.0.0.1 is a loopback address',
    });
    expect(await send({ url: `http://[::ffff:127.0.0.1]:${port}/mapped`, headers, body })).toEqual({
      error: 'webhook url not allowed: [::ffff:7f00:1] is an IPv4-mapped loopback address (127.0.0.1)',
    });
    expect(rx.received).toEqual([]);

    // The same name with private targets on reaches the receiver: the refusal above was the check's.
    const open = nodeWebhookSender({ allowHttp: true, allowPrivate: true }, 5_000);
    expect(await open({ url: `http://localhost:${port}/by-name`, headers, body })).toEqual({ status: 200 });
    expect(rx.received.map((r) => [r.method, r.path, r.raw])).toEqual([['POST', '/by-name', '{"event":"ping"}']]);
  });

  it('a receiver that never answers: an error after the timeout, and the connection is closed', async () => {
    const answer = rx.answer;
    rx.answer = (r) => (r.path === '/silent' ? 'never' : answer(r));
    try {
      const send = nodeWebhookSender({ allowHttp: true, allowPrivate: true }, 300);
      expect(await send({ url: `${rx.url}/silent`, headers, body })).toEqual({ error: 'no answer within 0.3 s' });
      await expect.poll(() => rx.gaveUp.map((r) => r.path)).toEqual(['/silent']);
      expect(rx.hanging()).toBe(0);
    } finally {
      rx.answer = answer;
    }
  });
});

describe('the Workers sender', () => {
  const strict = { allowHttp: false, allowPrivate: false };

  it('loopback targets, literal or by name, are refused before fetch is called', async () => {
    const calls: string[] = [];
    const fetcher = (async (input: RequestInfo | URL) => {
      calls.push(String(input));
      return new Response(null, { status: 204 });
    }) as typeof fetch;
    const send = fetchSender(strict, 5_000, fetcher);
    const refused: Array<[string, string]> = [
      ['https://127.0.0.1/', 'webhook url not allowed: 127.0.0.1 is a loopback address'],
      ['https://localhost/', 'webhook url not allowed: localhost is a loopback name'],
      ['https://hooks.localhost:8443/x', 'webhook url not allowed: hooks.localhost is a loopback name'],
      ['https://[::127.0.0.1]/', 'webhook url not allowed: [::7f00:1] is an IPv4-compatible address (127.0.0.1)'],
      ['https://169.254.169.254/latest', 'webhook url not allowed: 169.254.169.254 is a link-local address'],
      ['http://example.com/', 'webhook url must use https'],
    ];
    for (const [url, error] of refused) expect(await send({ url, headers, body }), url).toEqual({ error });
    expect(calls).toEqual([]);

    // A public name is fetched: a POST, no redirects followed, the receiver's status as the result.
    let init: RequestInit | undefined;
    const seen = fetchSender(strict, 5_000, (async (input: RequestInfo | URL, i?: RequestInit) => {
      calls.push(String(input));
      init = i;
      return new Response('ok', { status: 202 });
    }) as typeof fetch);
    expect(await seen({ url: 'https://hooks.example.com/kr', headers, body })).toEqual({ status: 202 });
    expect(calls).toEqual(['https://hooks.example.com/kr']);
    expect([init?.method, init?.redirect, init?.headers]).toEqual(['POST', 'manual', headers]);
  });
});
