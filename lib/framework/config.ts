/**
 * Environment → typed configuration, with the rules of docs/self-hosting.md "Configuration" and
 * docs/concepts.md "Credentials". Pure: warnings are returned, never printed, and nothing here touches the
 * filesystem or the network. Only web-standard globals are used (`crypto.getRandomValues`, TextEncoder).
 *
 * Conventions where the documents are silent:
 * - A variable set to the empty string (or only whitespace) counts as unset, except where an explicit empty
 *   value has a meaning of its own: SERVICE_CORS_ORIGINS (`""` = no browser origin allowed),
 *   SERVICE_TRUSTED_PROXIES (`""` = trust no proxy) and SERVICE_SESSION_SECRET (set but too short → refused).
 * - Surrounding whitespace is trimmed from every value except SERVICE_SESSION_SECRET (whose bytes are used
 *   as they are). So `" 100 "` is accepted as 100 for a numeric setting; inner garbage is not.
 */
import { TrustedProxies, isLoopbackIp, normalizeIp } from './http/client-ip.ts';
import { SHARES_PER_BUDGET } from './http/body-limit.ts';

export interface Config {
  /** PORT (default 8080): only used to build the listen address when SERVICE_LISTEN_ADDR is unset. */
  port: number;
  /** Host to bind; undefined = every interface (`:8080` form). IPv6 hosts come without brackets. */
  listenHost: string | undefined;
  /** Port actually bound (from SERVICE_LISTEN_ADDR when set, else PORT). 0 = an ephemeral port. */
  listenPort: number;
  /** Absolute path. */
  dataRoot: string;
  sessionSecret: Uint8Array;
  /** True when SERVICE_SESSION_SECRET was unset and a random secret was drawn for this boot. */
  sessionSecretGenerated: boolean;
  idpClientId: string | undefined;
  idpJwksUrl: string;
  idpIssuers: string[];
  apiKey: string;
  /** True when SERVICE_API_KEY was unset and the development key is in use. */
  apiKeyDefaulted: boolean;
  /** Allowed browser origins; exactly `['*']` when `*` was listed. */
  corsOrigins: string[];
  /** Addresses and CIDR blocks, validated (each is accepted by `new TrustedProxies`). */
  trustedProxies: string[];
  maxBodyBytes: number;
  /**
   * SERVICE_MAX_IMPORT_BYTES: the largest git bundle `POST /v1/repos/:id/import` takes (413 past it). Import
   * bodies are streamed to storage, not held: those in flight share a ceiling of four such bodies (a quarter
   * per client address or identity), a budget of their own beside the pushes'. The Workers build holds it to
   * the platform's request-body limit.
   */
  maxImportBytes: number;
  /**
   * Ceiling on the bytes held by all push bodies in flight (503 `server busy` past it, or past a quarter of
   * it for one client address or identity); ≥ 4 × maxBodyBytes.
   */
  maxInflightBodyBytes: number;
  /** A request body with no new byte for this long is cut off (408). */
  bodyIdleTimeoutMs: number;
  /** A request body not whole this long after its first byte is cut off (408); at most MAX_BODY_TIMEOUT_MS. */
  bodyTimeoutMs: number;
  rateLimitPerMin: number;
  rateLimitBurst: number;
  authRateLimitPerMin: number;
  authRateLimitBurst: number;
  rateLimitDisabled: boolean;
  /**
   * The hosted build's extras: billing and admin routes (functions/hosted/) and the plan caps
   * (lib/hosted/quota.ts). SERVICE_HOSTED = `1`, `true` or `yes` (wrangler.toml sets it for a Workers
   * deployment). A hosted configuration must set SERVICE_API_KEY (not `dev-key`) and SERVICE_SESSION_SECRET.
   */
  hosted: boolean;
  /** SERVICE_PLAN_FREE_REPOS: repositories a user on the free plan may own. */
  planFreeRepos: number;
  /** SERVICE_PLAN_FREE_MEMBERS: members (owners included) of a repository none of whose owners subscribes. */
  planFreeMembers: number;
  /** SERVICE_BILLING_CHECKOUT_URL: where `POST /v1/billing/checkout` sends a user; unset → 503. */
  billingCheckoutUrl: string | undefined;
  /** SERVICE_BILLING_WEBHOOK_SECRET: HMAC key of `X-Billing-Signature` (bytes as given); unset → 503. */
  billingWebhookSecret: string | undefined;
  /** SERVICE_BILLING_UPGRADE_URL: `upgrade_url` of a 402 (default `<dashboardUrl>/billing`). */
  billingUpgradeUrl: string;
  /** SERVICE_DASHBOARD_URL, without a trailing slash. */
  dashboardUrl: string;
  /** SERVICE_ADMIN_EMAILS, lowercased: the users the /v1/admin routes accept. */
  adminEmails: string[];
  /**
   * SERVICE_CACHE_MB × 2^20: the one budget of the in-memory caches (git objects, parsed pages, outlines,
   * blame indexes), split among them by {@link cacheBudget}. 0 turns caching off.
   */
  cacheBytes: number;
  /** SERVICE_WEBHOOK_ALLOW_HTTP: webhooks may use `http://` URLs. */
  webhookAllowHttp: boolean;
  /** SERVICE_WEBHOOK_ALLOW_PRIVATE: webhooks may point at loopback, private and other non-public addresses. */
  webhookAllowPrivate: boolean;
  /** SERVICE_EVENTS_PING_MS: how often an event stream gets a `: ping` (and its caller's access a re-check). */
  eventsPingMs: number;
  /**
   * SERVICE_EVENTS_MAX_STREAMS: open event streams one server (Node) or one repository's Durable Object
   * (Workers) holds at most; past it a new one is refused with 503 `server busy`.
   */
  eventsMaxStreams: number;
  /** SERVICE_WEBHOOK_RETRY_MS: when a failed delivery is tried again, ms after its first attempt. */
  webhookRetryMs: number[];
  /** SERVICE_WEBHOOK_TIMEOUT_MS: how long a receiver has to answer a delivery. */
  webhookTimeoutMs: number;
  /** SERVICE_WEBHOOK_MAX_PENDING: pending deliveries kept per webhook (beyond, the oldest is dropped). */
  webhookMaxPending: number;
}

/**
 * How the cache budget is split (estimated bytes each cache may hold), from what the workloads gain:
 * the git store half (every read and push: its own split is blobs 1/2, trees 1/4, commits 1/8 and the
 * head entries RepoStore keeps 1/8, lib/git/store.ts); parsed pages (diffs) 30 %; their outlines (blame
 * walks of up to 200 revisions) 12.5 %; blame indexes 7.5 %.
 */
export function cacheBudget(totalBytes: number): { gitStore: number; parsedPages: number; outlines: number; blames: number } {
  const parsedPages = Math.floor(totalBytes * 0.3);
  const outlines = Math.floor(totalBytes * 0.125);
  const blames = Math.floor(totalBytes * 0.075);
  return { gitStore: totalBytes - parsedPages - outlines - blames, parsedPages, outlines, blames };
}

/** SERVICE_CACHE_MB: a whole number of MiB, 0 to {@link MAX_CACHE_MB}; anything else refuses to start. */
export function cacheMb(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULTS.cacheMb;
  const t = value.trim();
  const n = Number(t);
  if (!/^[0-9]+$/.test(t) || !Number.isSafeInteger(n) || n > MAX_CACHE_MB) {
    throw new ConfigError(
      `SERVICE_CACHE_MB: ${JSON.stringify(value)} is not a whole number of MiB from 0 to ${MAX_CACHE_MB} ` +
        `(the total memory of the caches; default ${DEFAULTS.cacheMb}, 0 = no caching)`,
    );
  }
  return n;
}

/** Above this SERVICE_CACHE_MB is surely a mistake (a value in bytes or KiB, say). */
export const MAX_CACHE_MB = 65_536;

/** A configuration the server must refuse to start with; the message says what to fix. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const DEFAULTS = {
  port: 8080,
  dataRoot: './service-data',
  apiKey: 'dev-key',
  corsOrigins: ['http://localhost:5173', 'http://localhost:3000'],
  trustedProxies: ['127.0.0.1', '::1'],
  idpJwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
  idpIssuers: ['https://accounts.google.com', 'accounts.google.com'],
  maxBodyBytes: 8388608,
  maxImportBytes: 256 * 1024 * 1024,
  maxInflightBodyBytes: 32 * 1024 * 1024,
  bodyIdleTimeoutMs: 30_000,
  bodyTimeoutMs: 120_000,
  rateLimitPerMin: 300,
  rateLimitBurst: 100,
  authRateLimitPerMin: 15,
  authRateLimitBurst: 8,
  planFreeRepos: 3,
  planFreeMembers: 5,
  dashboardUrl: 'http://localhost:5173',
  /** SERVICE_CACHE_MB: sized so that the server's peak RSS stays within 1.3× a bare Hono server's (bench/). */
  cacheMb: 16,
  /** docs/limits.md: a ping at least every 15 s. */
  eventsPingMs: 15_000,
  /** docs/api.md: at most 5,000 open streams on one server (or one repository's object). */
  eventsMaxStreams: 5_000,
  /** docs/limits.md: retries about 10 s, 1 min, 10 min, 1 h and 6 h after the first attempt. */
  webhookRetryMs: [10_000, 60_000, 600_000, 3_600_000, 21_600_000],
  /** docs/api.md: a receiver has 10 s to answer. */
  webhookTimeoutMs: 10_000,
  /** docs/api.md: at most 1,000 pending deliveries per webhook. */
  webhookMaxPending: 1_000,
} as const;

/** The longest SERVICE_EVENTS_PING_MS (docs/limits.md: a ping at least every 15 s). */
export const MAX_EVENTS_PING_MS = 15_000;
/** Retries SERVICE_WEBHOOK_RETRY_MS may list at most. */
export const MAX_WEBHOOK_RETRIES = 10;

/**
 * SERVICE_WEBHOOK_RETRY_MS: comma-separated whole milliseconds after a delivery's first attempt, increasing,
 * at most MAX_WEBHOOK_RETRIES of them (the last failure after the last is final). Anything else refuses to
 * start: a mistake here would silently drop or flood deliveries.
 */
export function retrySchedule(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [...DEFAULTS.webhookRetryMs];
  const parts = value.split(',').map((p) => p.trim());
  const out: number[] = [];
  for (const p of parts) {
    const n = Number(p);
    if (!/^[0-9]+$/.test(p) || !Number.isSafeInteger(n) || n <= 0 || (out.length > 0 && n <= out[out.length - 1]!)) {
      out.length = 0;
      break;
    }
    out.push(n);
  }
  if (out.length === 0 || out.length > MAX_WEBHOOK_RETRIES) {
    throw new ConfigError(
      `SERVICE_WEBHOOK_RETRY_MS: ${JSON.stringify(value)} is not a list of increasing whole milliseconds (at most ` +
        `${MAX_WEBHOOK_RETRIES}, comma-separated; default ${DEFAULTS.webhookRetryMs.join(',')})`,
    );
  }
  return out;
}

/** The longest a request body may take from its first byte (docs/limits.md "Request bodies"): SERVICE_BODY_TIMEOUT_MS's ceiling. */
export const MAX_BODY_TIMEOUT_MS = 120_000;

/** Minimum length of SERVICE_SESSION_SECRET, in bytes of its UTF-8 encoding. */
export const MIN_SESSION_SECRET_BYTES = 32;

/** Prefix of personal access tokens; a legacy key with it could never be used (PATs are resolved first). */
const PAT_PREFIX = 'krp_';

type Env = Record<string, string | undefined>;

/** The value trimmed, or undefined when unset, empty or only whitespace. */
function str(env: Env, name: string): string | undefined {
  const v = env[name];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

/**
 * docs/self-hosting.md "Configuration": an integer greater than zero, else the default, silently. Only plain decimal digits
 * (after trimming surrounding whitespace) are integers: `"12abc"`, `"1.5"`, `"1e3"`, `"+5"`, `"0x10"`,
 * `"0"`, `"-3"`, `""` all give the default, as does a value beyond Number.MAX_SAFE_INTEGER.
 */
export function positiveInt(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const t = value.trim();
  if (!/^[0-9]+$/.test(t)) return fallback;
  const n = Number(t);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** Comma-separated list: entries trimmed, empty entries dropped. */
function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function parsePort(text: string, what: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) {
    throw new ConfigError(`${what}: port must be an integer from 0 to 65535, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

const HOSTNAME_RE = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * SERVICE_LISTEN_ADDR in Go's `host:port` form: `:8080` (every interface), `127.0.0.1:8080`,
 * `0.0.0.0:9000`, `[::1]:8080`, `localhost:8080`. Port 0 asks for an ephemeral port.
 */
export function parseListenAddr(value: string): { host: string | undefined; port: number } {
  const what = `SERVICE_LISTEN_ADDR ${JSON.stringify(value)}`;
  const hint = 'expected host:port, e.g. ":8080", "127.0.0.1:8080" or "[::1]:8080"';
  if (value.includes('://')) throw new ConfigError(`${what} is a URL, not a listen address; ${hint}`);
  if (value.startsWith('[')) {
    const m = /^\[([^\]]*)\]:([^:]*)$/.exec(value);
    if (!m) throw new ConfigError(`${what} is not a valid listen address; ${hint}`);
    const host = m[1]!;
    if (!host.includes(':') || !isIp(host)) {
      throw new ConfigError(`${what}: ${JSON.stringify(host)} is not an IPv6 address; ${hint}`);
    }
    return { host, port: parsePort(m[2]!, what) };
  }
  const colon = value.lastIndexOf(':');
  if (colon < 0) {
    throw new ConfigError(`${what} has no port; ${hint}`);
  }
  const host = value.slice(0, colon);
  const port = value.slice(colon + 1);
  if (host.includes(':')) {
    throw new ConfigError(`${what}: an IPv6 host must be in brackets; ${hint}`);
  }
  if (host !== '' && !isIp(host) && !HOSTNAME_RE.test(host)) {
    throw new ConfigError(`${what}: ${JSON.stringify(host)} is not an IP address or host name; ${hint}`);
  }
  return { host: host === '' ? undefined : host, port: parsePort(port, what) };
}

/** An http(s) URL setting, as given (trimmed); anything else refuses to start. */
function httpUrl(env: Env, name: string): string | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError(`${name}: ${JSON.stringify(v)} is not a URL (expected http:// or https://)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name}: ${JSON.stringify(v)} is not an http(s) URL`);
  }
  return v;
}

/** `1`, `true` or `yes` (any case) → true; anything else, or unset → false. */
function flag(env: Env, name: string): boolean {
  const v = str(env, name)?.toLowerCase();
  return v === '1' || v === 'true' || v === 'yes';
}

function isIp(s: string): boolean {
  return normalizeIp(s) !== undefined;
}

/** Whether a bind host is loopback-only. Undefined (every interface) is not. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || isLoopbackIp(h);
}

/** POSIX path resolution without node:path: `rel` against `base`, `.`/`..`/`//` normalised. */
export function resolvePath(base: string, rel: string): string {
  const joined = rel.startsWith('/') ? rel : `${base}/${rel}`;
  const out: string[] = [];
  for (const seg of joined.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}

function currentDirectory(): string {
  const proc = (globalThis as { process?: { cwd?: () => string } }).process;
  return proc?.cwd?.() ?? '/';
}

/** A CORS origin in the form browsers send (`scheme://host[:port]`), or undefined. */
function normalizeOrigin(entry: string): { origin: string; hadPath: boolean } | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password) return undefined;
  return { origin: url.origin, hadPath: url.pathname !== '/' || url.search !== '' || url.hash !== '' };
}

/**
 * The hosted build serves the public: it refuses to start (docs/self-hosting.md "Configuration") with the publicly
 * known development key, which would give anyone full legacy access, or with a session secret drawn for
 * this boot, which would sign sessions that die with it (and that no other Worker isolate accepts).
 */
function refuseHostedDefaults(apiKeyDefaulted: boolean, apiKey: string, sessionSecretGenerated: boolean): void {
  const problems: string[] = [];
  const random = '(e.g. openssl rand -base64 48)';
  if (apiKeyDefaulted || apiKey === DEFAULTS.apiKey) {
    const cause = apiKeyDefaulted ? `is unset, so the legacy key would be the public "${DEFAULTS.apiKey}"` : `is the public development value "${DEFAULTS.apiKey}"`;
    problems.push(`SERVICE_API_KEY ${cause}: set it to a long random value ${random}`);
  }
  if (sessionSecretGenerated) {
    problems.push(`SERVICE_SESSION_SECRET is unset: set it to at least ${MIN_SESSION_SECRET_BYTES} random bytes ${random}`);
  }
  if (problems.length > 0) throw new ConfigError(`the hosted build (SERVICE_HOSTED) refuses to start: ${problems.join('; ')}`);
}

export function loadConfig(env: Env, cwd?: string): { config: Config; warnings: string[] } {
  const warnings: string[] = [];

  // --- listen address
  // PORT is only needed when SERVICE_LISTEN_ADDR is unset: then an invalid PORT is refused; otherwise it is
  // ignored with a warning (binding somewhere the operator did not ask for is worse than not starting).
  const portText = str(env, 'PORT');
  const listenAddr = str(env, 'SERVICE_LISTEN_ADDR');
  let port: number = DEFAULTS.port;
  if (portText !== undefined) {
    try {
      port = parsePort(portText, `PORT ${JSON.stringify(portText)}`);
    } catch (e) {
      if (!listenAddr) throw e;
      warnings.push(`PORT ${JSON.stringify(portText)} is not a valid port; ignored (SERVICE_LISTEN_ADDR is set)`);
    }
  }
  const { host: listenHost, port: listenPort } = listenAddr
    ? parseListenAddr(listenAddr)
    : { host: undefined, port };

  // --- data root
  const base = cwd ?? currentDirectory();
  const dataRoot = resolvePath(resolvePath('/', base), str(env, 'SERVICE_DATA_ROOT') ?? DEFAULTS.dataRoot);

  // --- session secret (not trimmed: its bytes are the key)
  const secretText = env.SERVICE_SESSION_SECRET;
  let sessionSecret: Uint8Array;
  let sessionSecretGenerated = false;
  if (secretText !== undefined) {
    sessionSecret = new TextEncoder().encode(secretText);
    if (sessionSecret.length < MIN_SESSION_SECRET_BYTES) {
      throw new ConfigError(
        `SERVICE_SESSION_SECRET must be at least ${MIN_SESSION_SECRET_BYTES} bytes (got ${sessionSecret.length}); ` +
          'generate one with: openssl rand -base64 48',
      );
    }
  } else {
    sessionSecret = new Uint8Array(MIN_SESSION_SECRET_BYTES);
    globalThis.crypto.getRandomValues(sessionSecret);
    sessionSecretGenerated = true;
    warnings.push(
      'SERVICE_SESSION_SECRET is unset: using a random secret for this boot; every session token is ' +
        'invalidated on restart. Set SERVICE_SESSION_SECRET (at least 32 bytes) to keep sessions.',
    );
  }

  // --- legacy key
  const rawKey = env.SERVICE_API_KEY;
  const keyText = str(env, 'SERVICE_API_KEY');
  if (rawKey !== undefined && keyText !== undefined && keyText !== rawKey) {
    warnings.push('SERVICE_API_KEY had leading or trailing whitespace; it was removed.');
  }
  if (keyText?.startsWith(PAT_PREFIX)) {
    throw new ConfigError(
      `SERVICE_API_KEY must not start with "${PAT_PREFIX}": that prefix is reserved for personal access tokens`,
    );
  }
  const apiKey = keyText ?? DEFAULTS.apiKey;
  const apiKeyDefaulted = keyText === undefined;
  if (apiKey === DEFAULTS.apiKey) {
    const where = listenHost === undefined ? `every interface (:${listenPort})` : `${listenHost}:${listenPort}`;
    const cause = apiKeyDefaulted ? 'SERVICE_API_KEY is unset' : 'SERVICE_API_KEY is the public development value';
    if (isLoopbackHost(listenHost)) {
      warnings.push(
        `${cause}: the legacy key is "${DEFAULTS.apiKey}" (server-wide admin). Fine for local development ` +
          'only; set SERVICE_API_KEY to a long random value before exposing the server.',
      );
    } else {
      warnings.push(
        `SECURITY: ${cause} and the server listens on ${where}, which is not loopback. ANYONE who can ` +
          `reach it gets full admin access to every repository with the publicly known key "${DEFAULTS.apiKey}". ` +
          'Set SERVICE_API_KEY to a long random value, or bind to 127.0.0.1 behind the proxy.',
      );
    }
  }

  // --- identity provider
  const idpClientId = str(env, 'IDP_OAUTH_CLIENT_ID');
  const idpJwksUrl = str(env, 'IDP_JWKS_URL') ?? DEFAULTS.idpJwksUrl;
  let jwks: URL;
  try {
    jwks = new URL(idpJwksUrl);
  } catch {
    throw new ConfigError(`IDP_JWKS_URL ${JSON.stringify(idpJwksUrl)} is not a URL`);
  }
  if (jwks.protocol !== 'https:' && jwks.protocol !== 'http:') {
    throw new ConfigError(`IDP_JWKS_URL ${JSON.stringify(idpJwksUrl)} must be an http(s) URL`);
  }
  if (jwks.protocol === 'http:' && !isLoopbackHost(jwks.hostname.replace(/^\[(.*)\]$/, '$1'))) {
    warnings.push(
      `IDP_JWKS_URL uses plain http to a non-loopback host (${jwks.host}): whoever can tamper with that ` +
        'traffic can forge sign-ins. Use https.',
    );
  }
  const issuersText = str(env, 'IDP_ISSUERS');
  const parsedIssuers = issuersText === undefined ? [] : list(issuersText);
  const idpIssuers = parsedIssuers.length > 0 ? parsedIssuers : [...DEFAULTS.idpIssuers];

  // --- CORS: unset → default; set → exactly that list (possibly empty); `*` anywhere → ['*']
  const corsText = env.SERVICE_CORS_ORIGINS;
  let corsOrigins: string[];
  if (corsText === undefined) {
    corsOrigins = [...DEFAULTS.corsOrigins];
  } else {
    const entries = list(corsText);
    if (entries.includes('*')) {
      corsOrigins = ['*'];
    } else {
      corsOrigins = [];
      for (const entry of entries) {
        const o = normalizeOrigin(entry);
        if (!o) {
          warnings.push(`SERVICE_CORS_ORIGINS: ignoring ${JSON.stringify(entry)}, not an http(s) origin`);
          continue;
        }
        if (o.hadPath) {
          warnings.push(
            `SERVICE_CORS_ORIGINS: ${JSON.stringify(entry)} has a path; using its origin ${o.origin}`,
          );
        }
        if (!corsOrigins.includes(o.origin)) corsOrigins.push(o.origin);
      }
    }
  }

  // --- trusted proxies: unset → default; set → exactly that list (possibly empty); invalid → refuse
  const proxiesText = env.SERVICE_TRUSTED_PROXIES;
  const trustedProxies = proxiesText === undefined ? [...DEFAULTS.trustedProxies] : list(proxiesText);
  for (const entry of trustedProxies) {
    try {
      new TrustedProxies([entry]);
    } catch {
      throw new ConfigError(
        `SERVICE_TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR block ` +
          '(e.g. 127.0.0.1, ::1, 10.0.0.0/8, fd00::/8)',
      );
    }
  }

  // --- limits (positive integers, else the default: see positiveInt)
  const maxBodyBytes = positiveInt(env.SERVICE_MAX_BODY_BYTES, DEFAULTS.maxBodyBytes);
  // One client address or identity may hold a quarter of the ceiling (lib/framework/http/body-limit.ts), and that
  // share must let one body of the largest size through, or no maximal push could ever start.
  // Unset: 32 MiB, or four maximal bodies if that is more; set below four: raised to it, with a warning.
  const minInflight = SHARES_PER_BUDGET * maxBodyBytes;
  let maxInflightBodyBytes = positiveInt(env.SERVICE_MAX_INFLIGHT_BODY_BYTES, Math.max(DEFAULTS.maxInflightBodyBytes, minInflight));
  if (maxInflightBodyBytes < minInflight) {
    warnings.push(
      `SERVICE_MAX_INFLIGHT_BODY_BYTES (${maxInflightBodyBytes}) is below ${SHARES_PER_BUDGET} × SERVICE_MAX_BODY_BYTES ` +
        `(${maxBodyBytes}); using ${minInflight}`,
    );
    maxInflightBodyBytes = minInflight;
  }
  const maxImportBytes = positiveInt(env.SERVICE_MAX_IMPORT_BYTES, DEFAULTS.maxImportBytes);
  const bodyIdleTimeoutMs = positiveInt(env.SERVICE_BODY_IDLE_TIMEOUT_MS, DEFAULTS.bodyIdleTimeoutMs);
  let bodyTimeoutMs = positiveInt(env.SERVICE_BODY_TIMEOUT_MS, DEFAULTS.bodyTimeoutMs);
  if (bodyTimeoutMs > MAX_BODY_TIMEOUT_MS) {
    warnings.push(`SERVICE_BODY_TIMEOUT_MS (${bodyTimeoutMs}) is above ${MAX_BODY_TIMEOUT_MS}; using ${MAX_BODY_TIMEOUT_MS}`);
    bodyTimeoutMs = MAX_BODY_TIMEOUT_MS;
  }
  const rateLimitPerMin = positiveInt(env.SERVICE_RATELIMIT_PER_MIN, DEFAULTS.rateLimitPerMin);
  const rateLimitBurst = positiveInt(env.SERVICE_RATELIMIT_BURST, DEFAULTS.rateLimitBurst);
  const authRateLimitPerMin = positiveInt(env.SERVICE_AUTH_RATELIMIT_PER_MIN, DEFAULTS.authRateLimitPerMin);
  const authRateLimitBurst = positiveInt(env.SERVICE_AUTH_RATELIMIT_BURST, DEFAULTS.authRateLimitBurst);
  const rateLimitDisabled = flag(env, 'SERVICE_RATELIMIT_DISABLE');

  // --- hosted build: caps (positive integers like the other numbers), billing URLs, admins
  const hosted = flag(env, 'SERVICE_HOSTED');
  const planFreeRepos = positiveInt(env.SERVICE_PLAN_FREE_REPOS, DEFAULTS.planFreeRepos);
  const planFreeMembers = positiveInt(env.SERVICE_PLAN_FREE_MEMBERS, DEFAULTS.planFreeMembers);
  const billingCheckoutUrl = httpUrl(env, 'SERVICE_BILLING_CHECKOUT_URL');
  const webhookSecretText = env.SERVICE_BILLING_WEBHOOK_SECRET;
  const billingWebhookSecret = webhookSecretText === undefined || webhookSecretText.trim() === '' ? undefined : webhookSecretText;
  const dashboardUrl = (httpUrl(env, 'SERVICE_DASHBOARD_URL') ?? DEFAULTS.dashboardUrl).replace(/\/+$/, '');
  const billingUpgradeUrl = httpUrl(env, 'SERVICE_BILLING_UPGRADE_URL') ?? `${dashboardUrl}/billing`;
  const adminEmails = [...new Set(list(env.SERVICE_ADMIN_EMAILS ?? '').map((e) => e.toLowerCase()))];
  if (hosted) refuseHostedDefaults(apiKeyDefaulted, apiKey, sessionSecretGenerated);

  // --- memory: unlike the limits above (which keep the original service's silent default), a
  // new setting whose mistakes would quietly cost memory or speed refuses to start instead.
  const cacheBytes = cacheMb(env.SERVICE_CACHE_MB) * 1024 * 1024;

  // --- live events and webhooks
  const webhookAllowHttp = flag(env, 'SERVICE_WEBHOOK_ALLOW_HTTP');
  const webhookAllowPrivate = flag(env, 'SERVICE_WEBHOOK_ALLOW_PRIVATE');
  let eventsPingMs = positiveInt(env.SERVICE_EVENTS_PING_MS, DEFAULTS.eventsPingMs);
  if (eventsPingMs > MAX_EVENTS_PING_MS) {
    warnings.push(`SERVICE_EVENTS_PING_MS (${eventsPingMs}) is above ${MAX_EVENTS_PING_MS}; using ${MAX_EVENTS_PING_MS}`);
    eventsPingMs = MAX_EVENTS_PING_MS;
  }
  const eventsMaxStreams = positiveInt(env.SERVICE_EVENTS_MAX_STREAMS, DEFAULTS.eventsMaxStreams);
  const webhookRetryMs = retrySchedule(env.SERVICE_WEBHOOK_RETRY_MS);
  // Both may be lowered (tests, a receiver known to be quick), never raised past what the contract promises.
  let webhookTimeoutMs = positiveInt(env.SERVICE_WEBHOOK_TIMEOUT_MS, DEFAULTS.webhookTimeoutMs);
  if (webhookTimeoutMs > DEFAULTS.webhookTimeoutMs) {
    warnings.push(`SERVICE_WEBHOOK_TIMEOUT_MS (${webhookTimeoutMs}) is above ${DEFAULTS.webhookTimeoutMs}; using ${DEFAULTS.webhookTimeoutMs}`);
    webhookTimeoutMs = DEFAULTS.webhookTimeoutMs;
  }
  let webhookMaxPending = positiveInt(env.SERVICE_WEBHOOK_MAX_PENDING, DEFAULTS.webhookMaxPending);
  if (webhookMaxPending > DEFAULTS.webhookMaxPending) {
    warnings.push(`SERVICE_WEBHOOK_MAX_PENDING (${webhookMaxPending}) is above ${DEFAULTS.webhookMaxPending}; using ${DEFAULTS.webhookMaxPending}`);
    webhookMaxPending = DEFAULTS.webhookMaxPending;
  }

  return {
    config: {
      port,
      listenHost,
      listenPort,
      dataRoot,
      sessionSecret,
      sessionSecretGenerated,
      idpClientId,
      idpJwksUrl,
      idpIssuers,
      apiKey,
      apiKeyDefaulted,
      corsOrigins,
      trustedProxies,
      maxBodyBytes,
      maxImportBytes,
      maxInflightBodyBytes,
      bodyIdleTimeoutMs,
      bodyTimeoutMs,
      rateLimitPerMin,
      rateLimitBurst,
      authRateLimitPerMin,
      authRateLimitBurst,
      rateLimitDisabled,
      hosted,
      planFreeRepos,
      planFreeMembers,
      billingCheckoutUrl,
      billingWebhookSecret,
      billingUpgradeUrl,
      dashboardUrl,
      adminEmails,
      cacheBytes,
      webhookAllowHttp,
      webhookAllowPrivate,
      eventsPingMs,
      eventsMaxStreams,
      webhookRetryMs,
      webhookTimeoutMs,
      webhookMaxPending,
    },
    warnings,
  };
}
