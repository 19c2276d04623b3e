import { DELIVERY_TIMEOUT_MS, type WebhookResult, type WebhookSender } from '../../events/deliver.ts';
import { parseWebhookUrl, type UrlPolicy } from '../../events/url.ts';
import { HttpError } from '../../core/errors.ts';

/**
 * Webhook POSTs with the web platform's fetch: the hosted build's sender (the repository's Durable Object
 * runs it from its alarm). The URL's own rules are checked again before each attempt (scheme, credentials,
 * literal addresses, `localhost` names); a Worker cannot resolve a name to check where it points, and need
 * not: on Cloudflare its subrequests leave from Cloudflare's network to the public internet, where loopback,
 * private, link-local and unique-local addresses reach nothing of the operator's (docs/architecture.md).
 * Redirects are not followed (`redirect: 'manual'`: a 3xx is a failed attempt); 10 s timeout. `fetcher` is
 * the platform's fetch (tests hand in their own, to see that a refused URL never reaches it).
 */
export function fetchSender(policy: UrlPolicy, timeoutMs = DELIVERY_TIMEOUT_MS, fetcher: typeof fetch = (input, init) => fetch(input, init)): WebhookSender {
  return async (req): Promise<WebhookResult> => {
    try {
      parseWebhookUrl(req.url, policy);
    } catch (e) {
      if (e instanceof HttpError) return { error: e.message };
      throw e;
    }
    try {
      const res = await fetcher(req.url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.body?.cancel().catch(() => undefined);
      return { status: res.status };
    } catch (e) {
      const name = e instanceof Error ? e.name : '';
      if (name === 'TimeoutError' || name === 'AbortError') return { error: `no answer within ${timeoutMs / 1000} s` };
      return { error: e instanceof Error ? e.message : String(e) };
    }
  };
}
