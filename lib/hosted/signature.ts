import { constantTimeEqual } from '../auth/tokens.ts';

/**
 * The billing webhook's signature (docs/api.md "Hosted build: billing"), the scheme of common payment providers:
 *
 *   X-Billing-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * keyed with SERVICE_BILLING_WEBHOOK_SECRET. Several `v1=` entries are allowed (a provider rotating its
 * secret sends one per secret); any one matching is enough. Other keys (`v0=` …) are ignored. Web crypto
 * only, so it runs unchanged on Workers.
 */

/** A signature more than this many seconds from the server's clock is stale. */
export const SIGNATURE_TOLERANCE_S = 300;

export type SignatureCheck =
  | { ok: true; t: number; /** The matching v1 value: what replays are recognised by. */ signature: string }
  | { ok: false; error: 'invalid signature' | 'stale signature' };

const INVALID = { ok: false, error: 'invalid signature' } as const;
const encoder = new TextEncoder();

/** The header's `t` and `v1` values, or null when it is malformed. */
export function parseSignatureHeader(header: string | undefined | null): { t: number; v1: string[] } | null {
  if (!header) return null;
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== null || !/^[0-9]{1,12}$/.test(value)) return null;
      t = Number(value);
    } else if (key === 'v1') {
      if (!/^[0-9a-f]{64}$/.test(value)) return null;
      v1.push(value);
    }
  }
  return t === null || v1.length === 0 ? null : { t, v1 };
}

/** Lowercase hex HMAC-SHA256 of `<t>.<body>` (body as its raw bytes). */
export async function signPayload(secret: string, t: number, body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const prefix = encoder.encode(`${t}.`);
  const data = new Uint8Array(prefix.length + body.length);
  data.set(prefix, 0);
  data.set(body, prefix.length);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
  let hex = '';
  for (const b of mac) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/**
 * Checks the header against the raw body: missing, malformed or wrong → `invalid signature`; right but
 * `t` more than SIGNATURE_TOLERANCE_S from `nowSeconds` → `stale signature`. Compared in constant time.
 */
export async function verifySignature(
  secret: string,
  header: string | undefined | null,
  body: Uint8Array,
  nowSeconds: number,
): Promise<SignatureCheck> {
  const parsed = parseSignatureHeader(header);
  if (!parsed) return INVALID;
  const expected = await signPayload(secret, parsed.t, body);
  let match: string | null = null;
  // Every candidate is compared (no early exit), each in constant time.
  for (const candidate of parsed.v1) if ((await constantTimeEqual(candidate, expected)) && match === null) match = candidate;
  if (match === null) return INVALID;
  if (Math.abs(nowSeconds - parsed.t) > SIGNATURE_TOLERANCE_S) return { ok: false, error: 'stale signature' };
  return { ok: true, t: parsed.t, signature: match };
}
