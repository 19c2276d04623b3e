import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { DELIVERY_TIMEOUT_MS, type WebhookResult, type WebhookSender } from '../../events/deliver.ts';
import { NOT_ALLOWED, parseWebhookUrl, resolvedProblem, type HostResolver, type UrlPolicy } from '../../events/url.ts';
import { HttpError } from '../../core/errors.ts';

/**
 * Webhooks on Node: names resolved with the system resolver (node:dns, as every connection of the process
 * is), and POSTs over node:http(s) that connect only to an address that was checked.
 *
 * The check and the connection use one resolution: the request's `lookup` resolves the name, refuses the
 * connection when any address it got is not public (unless SERVICE_WEBHOOK_ALLOW_PRIVATE), and hands the
 * socket those same addresses. A name that answers a public address to the check and a private one to the
 * connection (DNS rebinding) thus cannot slip through. Literal addresses are checked by parseWebhookUrl.
 * No redirects are followed (node:http never does); 10 s for the whole exchange up to the status line.
 */

/** Every address `host` resolves to (both families, as the system resolver orders them). */
export const nodeResolveHost: HostResolver = async (host) =>
  (await dnsLookupAll(host, { all: true, verbatim: true })).map((a) => a.address);

/** A `lookup` for node:net that refuses names resolving to any non-public address. */
function checkedLookup(policy: UrlPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, verbatim: true, family: options.family }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!policy.allowPrivate) {
        const problem = resolvedProblem(hostname, addresses.map((a) => a.address));
        if (problem) return callback(new Error(`${NOT_ALLOWED}: ${problem}`), '', 0);
      }
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      else if (addresses.length === 0) callback(new Error(`${NOT_ALLOWED}: ${hostname} does not resolve`), '', 0);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

export function nodeWebhookSender(policy: UrlPolicy, timeoutMs = DELIVERY_TIMEOUT_MS): WebhookSender {
  const lookup = checkedLookup(policy);
  return (req) =>
    new Promise<WebhookResult>((resolve) => {
      let url: URL;
      try {
        url = parseWebhookUrl(req.url, policy, true);
      } catch (e) {
        resolve({ error: e instanceof HttpError ? e.message : String(e) });
        return;
      }
      const client = url.protocol === 'https:' ? https : http;
      const request = client.request(
        url,
        {
          method: 'POST',
          headers: { ...req.headers, 'Content-Length': String(req.body.byteLength) },
          lookup,
          // A connection of its own: never a pooled socket opened to an address checked for another request.
          agent: false,
        },
        (res) => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0 });
          // The body is not wanted.
          res.destroy();
        },
      );
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
      request.on('error', (e) => {
        clearTimeout(timer);
        resolve({ error: e.message });
      });
      request.end(req.body);
    });
}
