import { describe, expect, it } from 'vitest';
import {
  cacheBudget,
  ConfigError,
  DEFAULTS,
  MAX_CACHE_MB,
  isLoopbackHost,
  loadConfig,
  parseListenAddr,
  positiveInt,
  resolvePath,
} from '../lib/framework/config.ts';

const CWD = '/srv/app';
const load = (env: Record<string, string | undefined> = {}) => loadConfig(env, CWD);
const cfg = (env: Record<string, string | undefined> = {}) => load(env).config;
const SECRET32 = 'x'.repeat(32);

describe('defaults', () => {
  it('applies every default on an empty environment', () => {
    const c = cfg();
    expect(c.port).toBe(8080);
    expect(c.listenHost).toBeUndefined();
    expect(c.listenPort).toBe(8080);
    expect(c.dataRoot).toBe('/srv/app/service-data');
    expect(c.sessionSecret).toBeInstanceOf(Uint8Array);
    expect(c.sessionSecret.length).toBe(32);
    expect(c.sessionSecretGenerated).toBe(true);
    expect(c.idpClientId).toBeUndefined();
    expect(c.idpJwksUrl).toBe('https://www.googleapis.com/oauth2/v3/certs');
    expect(c.idpIssuers).toEqual(['https://accounts.google.com', 'accounts.google.com']);
    expect(c.apiKey).toBe('dev-key');
    expect(c.apiKeyDefaulted).toBe(true);
    expect(c.corsOrigins).toEqual(['http://localhost:5173', 'http://localhost:3000']);
    expect(c.trustedProxies).toEqual(['127.0.0.1', '::1']);
    expect(c.maxBodyBytes).toBe(8388608);
    expect(c.rateLimitPerMin).toBe(300);
    expect(c.rateLimitBurst).toBe(100);
    expect(c.authRateLimitPerMin).toBe(15);
    expect(c.authRateLimitBurst).toBe(8);
    expect(c.rateLimitDisabled).toBe(false);
  });

  it('returns warnings instead of printing them: unset secret and unset key on all interfaces', () => {
    const { warnings } = load();
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/SERVICE_SESSION_SECRET is unset.*invalidated on restart/);
    expect(warnings[1]).toMatch(/^SECURITY: SERVICE_API_KEY is unset.*every interface \(:8080\).*not loopback/);
  });

  it('a fully configured environment yields no warning', () => {
    const { warnings } = load({
      SERVICE_SESSION_SECRET: SECRET32,
      SERVICE_API_KEY: 'a-real-key',
    });
    expect(warnings).toEqual([]);
  });

  it('defaults table is what docs/self-hosting.md says', () => {
    expect(DEFAULTS.maxBodyBytes).toBe(8 * 1024 * 1024);
  });
});

describe('the five numeric settings (integers > 0, otherwise the default, silently)', () => {
  const numeric = [
    ['SERVICE_MAX_BODY_BYTES', 'maxBodyBytes', 8388608],
    ['SERVICE_RATELIMIT_PER_MIN', 'rateLimitPerMin', 300],
    ['SERVICE_RATELIMIT_BURST', 'rateLimitBurst', 100],
    ['SERVICE_AUTH_RATELIMIT_PER_MIN', 'authRateLimitPerMin', 15],
    ['SERVICE_AUTH_RATELIMIT_BURST', 'authRateLimitBurst', 8],
  ] as const;
  const base = { SERVICE_SESSION_SECRET: SECRET32, SERVICE_API_KEY: 'k' };

  for (const [name, key, def] of numeric) {
    describe(name, () => {
      it('accepts a valid integer', () => {
        expect(cfg({ [name]: '42' })[key]).toBe(42);
        expect(cfg({ [name]: '1' })[key]).toBe(1);
      });
      it('accepts surrounding whitespace', () => {
        expect(cfg({ [name]: ' 42\t' })[key]).toBe(42);
      });
      it.each([
        ['zero', '0'],
        ['negative', '-3'],
        ['float', '1.5'],
        ['trailing garbage', '12abc'],
        ['garbage', 'abc'],
        ['empty', ''],
        ['blank', ' '],
        ['exponent', '1e3'],
        ['plus sign', '+5'],
        ['hex', '0x10'],
        ['inner space', '1 2'],
        ['beyond safe integer', '99999999999999999999'],
      ])('%s (%j) → default, silently', (_label, value) => {
        const { config, warnings } = load({ ...base, [name]: value });
        expect(config[key]).toBe(def);
        expect(warnings).toEqual([]);
      });
      it('unset → default', () => {
        expect(cfg({ ...base })[key]).toBe(def);
      });
    });
  }

  it('positiveInt itself', () => {
    expect(positiveInt(undefined, 7)).toBe(7);
    expect(positiveInt('007', 7)).toBe(7);
    expect(positiveInt('010', 7)).toBe(10);
    expect(positiveInt('0', 7)).toBe(7);
  });
});

describe('SERVICE_RATELIMIT_DISABLE', () => {
  it.each(['1', 'true', 'yes', 'TRUE', 'Yes', ' yes '])('%j disables', (v) => {
    expect(cfg({ SERVICE_RATELIMIT_DISABLE: v }).rateLimitDisabled).toBe(true);
  });
  it.each(['0', 'false', 'no', 'on', 'y', '2', '', ' ', 'truee'])('%j leaves limiting on', (v) => {
    expect(cfg({ SERVICE_RATELIMIT_DISABLE: v }).rateLimitDisabled).toBe(false);
  });
  it('unset leaves limiting on', () => {
    expect(cfg().rateLimitDisabled).toBe(false);
  });
});

describe('SERVICE_CORS_ORIGINS', () => {
  it('parses a comma list, trimming entries and dropping empties', () => {
    expect(cfg({ SERVICE_CORS_ORIGINS: ' https://a.example , ,https://b.example:8443,' }).corsOrigins).toEqual([
      'https://a.example',
      'https://b.example:8443',
    ]);
  });
  it('honours * (anywhere in the list) as the only entry', () => {
    expect(cfg({ SERVICE_CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(cfg({ SERVICE_CORS_ORIGINS: 'https://a.example, *' }).corsOrigins).toEqual(['*']);
  });
  it('normalises entries to the form browsers send (trailing slash, case, default port)', () => {
    expect(
      cfg({ SERVICE_CORS_ORIGINS: 'https://A.Example/,https://a.example:443,http://x.test:80' }).corsOrigins,
    ).toEqual(['https://a.example', 'http://x.test']);
  });
  it('drops entries that are not http(s) origins, with a warning', () => {
    const { config, warnings } = load({ SERVICE_CORS_ORIGINS: 'null,ftp://x.test,not a url,https://ok.test' });
    expect(config.corsOrigins).toEqual(['https://ok.test']);
    expect(warnings.filter((w) => w.startsWith('SERVICE_CORS_ORIGINS'))).toHaveLength(3);
  });
  it('keeps the origin of an entry with a path, with a warning', () => {
    const { config, warnings } = load({ SERVICE_CORS_ORIGINS: 'https://a.test/app' });
    expect(config.corsOrigins).toEqual(['https://a.test']);
    expect(warnings.some((w) => w.includes('has a path'))).toBe(true);
  });
  it('an explicitly empty value allows no origin; unset gives the default', () => {
    expect(cfg({ SERVICE_CORS_ORIGINS: '' }).corsOrigins).toEqual([]);
    expect(cfg({ SERVICE_CORS_ORIGINS: ' , ' }).corsOrigins).toEqual([]);
    expect(cfg({}).corsOrigins).toEqual(['http://localhost:5173', 'http://localhost:3000']);
  });
});

describe('SERVICE_TRUSTED_PROXIES', () => {
  it('parses a comma list of addresses and CIDR blocks (IPv4 and IPv6)', () => {
    expect(
      cfg({ SERVICE_TRUSTED_PROXIES: ' 10.0.0.0/8, 192.168.1.7 ,,fd00::/8, 2001:db8::1, ::ffff:10.1.2.3 ' })
        .trustedProxies,
    ).toEqual(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '2001:db8::1', '::ffff:10.1.2.3']);
  });
  it('defaults to loopback', () => {
    expect(cfg().trustedProxies).toEqual(['127.0.0.1', '::1']);
  });
  it('an explicitly empty value trusts no proxy', () => {
    expect(cfg({ SERVICE_TRUSTED_PROXIES: '' }).trustedProxies).toEqual([]);
  });
  it.each(['10.0.0.0/33', 'fd00::/129', '10.0.0.256', 'proxy.internal', '10.0.0.0/x', '010.0.0.1', '1.2.3.4:80'])(
    'refuses %j with a ConfigError naming it',
    (entry) => {
      expect(() => cfg({ SERVICE_TRUSTED_PROXIES: `127.0.0.1,${entry}` })).toThrow(ConfigError);
      expect(() => cfg({ SERVICE_TRUSTED_PROXIES: `127.0.0.1,${entry}` })).toThrow(JSON.stringify(entry));
    },
  );
});

describe('listen address', () => {
  it('defaults to :$PORT', () => {
    const c = cfg({ PORT: '9090' });
    expect([c.port, c.listenHost, c.listenPort]).toEqual([9090, undefined, 9090]);
  });
  it('PORT 0 asks for an ephemeral port', () => {
    expect(cfg({ PORT: '0' }).listenPort).toBe(0);
  });
  it.each(['abc', '-1', '65536', '80.5', '8080x'])('invalid PORT %j without SERVICE_LISTEN_ADDR is a ConfigError', (p) => {
    expect(() => cfg({ PORT: p })).toThrow(ConfigError);
    expect(() => cfg({ PORT: p })).toThrow(/^PORT /);
  });
  it('an invalid PORT is ignored with a warning when SERVICE_LISTEN_ADDR is set', () => {
    const { config, warnings } = load({ PORT: 'abc', SERVICE_LISTEN_ADDR: '127.0.0.1:9000' });
    expect(config.port).toBe(8080);
    expect(config.listenPort).toBe(9000);
    expect(warnings.some((w) => w.startsWith('PORT "abc"'))).toBe(true);
  });
  it.each([
    [':8080', undefined, 8080],
    ['127.0.0.1:8080', '127.0.0.1', 8080],
    ['[::1]:8080', '::1', 8080],
    ['0.0.0.0:9000', '0.0.0.0', 9000],
    ['[::]:7000', '::', 7000],
    ['localhost:3000', 'localhost', 3000],
    ['127.0.0.1:0', '127.0.0.1', 0],
    [' 127.0.0.1:8081 ', '127.0.0.1', 8081],
  ])('SERVICE_LISTEN_ADDR %j → host %j port %j, overriding PORT', (addr, host, port) => {
    const c = cfg({ SERVICE_LISTEN_ADDR: addr, PORT: '1234' });
    expect(c.listenHost).toBe(host);
    expect(c.listenPort).toBe(port);
    expect(c.port).toBe(1234);
  });
  it.each([
    ['8080', /has no port/],
    ['127.0.0.1', /has no port/],
    ['127.0.0.1:', /port must be an integer/],
    [':http', /port must be an integer/],
    [':65536', /port must be an integer/],
    [':-1', /port must be an integer/],
    ['::1:8080', /IPv6 host must be in brackets/],
    ['[::1]', /not a valid listen address/],
    ['[::1]8080', /not a valid listen address/],
    ['[127.0.0.1]:8080', /is not an IPv6 address/],
    ['[zz::1]:8080', /is not an IPv6 address/],
    ['bad host:8080', /not an IP address or host name/],
    ['http://x:80', /is a URL, not a listen address/],
  ])('SERVICE_LISTEN_ADDR %j is a ConfigError (%s)', (addr, message) => {
    let err: unknown;
    try {
      cfg({ SERVICE_LISTEN_ADDR: addr });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('SERVICE_LISTEN_ADDR');
    expect((err as Error).message).toMatch(message);
  });
  it('empty SERVICE_LISTEN_ADDR counts as unset', () => {
    expect(cfg({ SERVICE_LISTEN_ADDR: '', PORT: '9001' }).listenPort).toBe(9001);
  });
  it('parseListenAddr exported for the entry point', () => {
    expect(parseListenAddr('[2001:db8::5]:443')).toEqual({ host: '2001:db8::5', port: 443 });
  });
});

describe('SERVICE_SESSION_SECRET', () => {
  it('refuses a secret shorter than 32 bytes with the exact message', () => {
    expect(() => cfg({ SERVICE_SESSION_SECRET: 'x'.repeat(31) })).toThrow(ConfigError);
    expect(() => cfg({ SERVICE_SESSION_SECRET: 'x'.repeat(31) })).toThrow(
      /^SERVICE_SESSION_SECRET must be at least 32 bytes/,
    );
  });
  it('set but empty is refused too (it is set)', () => {
    expect(() => cfg({ SERVICE_SESSION_SECRET: '' })).toThrow(/SERVICE_SESSION_SECRET must be at least 32 bytes/);
  });
  it('counts UTF-8 bytes, not characters', () => {
    // 16 × "é" = 32 bytes
    const c = cfg({ SERVICE_SESSION_SECRET: 'é'.repeat(16) });
    expect(c.sessionSecret.length).toBe(32);
    expect(() => cfg({ SERVICE_SESSION_SECRET: 'é'.repeat(15) + 'x' })).toThrow(ConfigError);
  });
  it('accepts exactly 32 bytes, used verbatim (not trimmed), no warning', () => {
    const { config, warnings } = load({ SERVICE_SESSION_SECRET: SECRET32, SERVICE_API_KEY: 'k' });
    expect(config.sessionSecret).toEqual(new TextEncoder().encode(SECRET32));
    expect(config.sessionSecretGenerated).toBe(false);
    expect(warnings).toEqual([]);
    const spaced = ` ${'y'.repeat(31)}`;
    expect(new TextDecoder().decode(cfg({ SERVICE_SESSION_SECRET: spaced }).sessionSecret)).toBe(spaced);
  });
  it('unset → 32 random bytes, different at each load, with a warning', () => {
    const a = load({ SERVICE_API_KEY: 'k' });
    const b = load({ SERVICE_API_KEY: 'k' });
    expect(a.config.sessionSecret.length).toBe(32);
    expect(b.config.sessionSecret.length).toBe(32);
    expect(a.config.sessionSecretGenerated).toBe(true);
    expect(Buffer.from(a.config.sessionSecret).equals(Buffer.from(b.config.sessionSecret))).toBe(false);
    expect(a.config.sessionSecret.some((x) => x !== 0)).toBe(true);
    expect(a.warnings).toHaveLength(1);
    expect(a.warnings[0]).toMatch(/SERVICE_SESSION_SECRET is unset.*session token is invalidated on restart/);
  });
});

describe('SERVICE_API_KEY', () => {
  const base = { SERVICE_SESSION_SECRET: SECRET32 };
  it('uses the configured key, no warning', () => {
    const { config, warnings } = load({ ...base, SERVICE_API_KEY: 's3cret' });
    expect(config.apiKey).toBe('s3cret');
    expect(config.apiKeyDefaulted).toBe(false);
    expect(warnings).toEqual([]);
  });
  it('unset → dev-key with a plain warning on a loopback address', () => {
    for (const addr of ['127.0.0.1:8080', '[::1]:8080', 'localhost:8080', '127.1.2.3:8080']) {
      const { config, warnings } = load({ ...base, SERVICE_LISTEN_ADDR: addr });
      expect(config.apiKey).toBe('dev-key');
      expect(config.apiKeyDefaulted).toBe(true);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^SERVICE_API_KEY is unset: the legacy key is "dev-key"/);
      expect(warnings[0]).not.toMatch(/SECURITY/);
    }
  });
  it('unset → dev-key with a louder, different warning on a non-loopback address or all interfaces', () => {
    const loud = new Set<string>();
    for (const addr of [':8080', '0.0.0.0:8080', '[::]:8080', '10.0.0.5:8080', 'example.org:80']) {
      const { config, warnings } = load({ ...base, SERVICE_LISTEN_ADDR: addr });
      expect(config.apiKeyDefaulted).toBe(true);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^SECURITY: SERVICE_API_KEY is unset and the server listens on .* not loopback\. ANYONE/);
      loud.add(warnings[0]!.replace(/listens on .*?, which/, 'listens on X, which'));
    }
    expect(loud.size).toBe(1);
    expect(load({ ...base }).warnings[0]).toContain('every interface (:8080)');
    expect(load({ ...base, SERVICE_LISTEN_ADDR: '0.0.0.0:9000' }).warnings[0]).toContain('0.0.0.0:9000');
  });
  it('an explicit "dev-key" is warned about as well (not defaulted)', () => {
    const { config, warnings } = load({ ...base, SERVICE_API_KEY: 'dev-key', SERVICE_LISTEN_ADDR: '127.0.0.1:1' });
    expect(config.apiKeyDefaulted).toBe(false);
    expect(warnings[0]).toMatch(/public development value/);
  });
  it('empty or blank counts as unset', () => {
    expect(cfg({ ...base, SERVICE_API_KEY: '' }).apiKeyDefaulted).toBe(true);
    expect(cfg({ ...base, SERVICE_API_KEY: '  ' }).apiKey).toBe('dev-key');
  });
  it('surrounding whitespace is trimmed with a warning (Bearer values can never carry it)', () => {
    const { config, warnings } = load({ ...base, SERVICE_API_KEY: ' abc\r' });
    expect(config.apiKey).toBe('abc');
    expect(warnings).toEqual(['SERVICE_API_KEY had leading or trailing whitespace; it was removed.']);
  });
  it('refuses a key with the PAT prefix krp_ (it would always be looked up as a PAT)', () => {
    expect(() => cfg({ ...base, SERVICE_API_KEY: 'krp_abc' })).toThrow(ConfigError);
  });
});

describe('the hosted build refuses the development defaults (SERVICE_HOSTED)', () => {
  const KEY = 'a-long-random-legacy-key';
  const refusal = (...problems: string[]) => `the hosted build (SERVICE_HOSTED) refuses to start: ${problems.join('; ')}`;
  const UNSET_KEY = 'SERVICE_API_KEY is unset, so the legacy key would be the public "dev-key": set it to a long random value (e.g. openssl rand -base64 48)';
  const DEV_KEY = 'SERVICE_API_KEY is the public development value "dev-key": set it to a long random value (e.g. openssl rand -base64 48)';
  const UNSET_SECRET = 'SERVICE_SESSION_SECRET is unset: set it to at least 32 random bytes (e.g. openssl rand -base64 48)';
  const refused = (env: Record<string, string | undefined>) => {
    try {
      load(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    return null;
  };

  it('SERVICE_API_KEY unset, blank or "dev-key"; SERVICE_SESSION_SECRET unset: each named, all at once', () => {
    for (const hosted of ['1', 'true', 'YES']) {
      expect(refused({ SERVICE_HOSTED: hosted, SERVICE_SESSION_SECRET: SECRET32 })).toBe(refusal(UNSET_KEY));
      expect(refused({ SERVICE_HOSTED: hosted, SERVICE_SESSION_SECRET: SECRET32, SERVICE_API_KEY: '  ' })).toBe(refusal(UNSET_KEY));
      expect(refused({ SERVICE_HOSTED: hosted, SERVICE_SESSION_SECRET: SECRET32, SERVICE_API_KEY: ' dev-key ' })).toBe(refusal(DEV_KEY));
      expect(refused({ SERVICE_HOSTED: hosted, SERVICE_API_KEY: KEY })).toBe(refusal(UNSET_SECRET));
      expect(refused({ SERVICE_HOSTED: hosted })).toBe(refusal(UNSET_KEY, UNSET_SECRET));
      expect(refused({ SERVICE_HOSTED: hosted, SERVICE_API_KEY: 'dev-key' })).toBe(refusal(DEV_KEY, UNSET_SECRET));
    }
  });

  it('a key and a secret of its own: starts; the self-hosted build still only warns', () => {
    expect(refused({ SERVICE_HOSTED: '1', SERVICE_API_KEY: KEY, SERVICE_SESSION_SECRET: SECRET32 })).toBeNull();
    expect(cfg({ SERVICE_HOSTED: '1', SERVICE_API_KEY: KEY, SERVICE_SESSION_SECRET: SECRET32 })).toMatchObject({ hosted: true, apiKey: KEY });
    for (const env of [{}, { SERVICE_HOSTED: '0' }, { SERVICE_HOSTED: 'no', SERVICE_API_KEY: 'dev-key' }]) {
      const { config, warnings } = load(env);
      expect(config.hosted).toBe(false);
      expect(config.apiKey).toBe('dev-key');
      expect(warnings.length).toBeGreaterThan(0);
    }
  });
});

describe('SERVICE_DATA_ROOT', () => {
  it('defaults to ./service-data resolved against the working directory', () => {
    expect(loadConfig({}, '/work/main').config.dataRoot).toBe('/work/main/service-data');
    expect(loadConfig({}, '/work/main/').config.dataRoot).toBe('/work/main/service-data');
  });
  it('resolves a relative value against cwd', () => {
    expect(cfg({ SERVICE_DATA_ROOT: 'data' }).dataRoot).toBe('/srv/app/data');
    expect(cfg({ SERVICE_DATA_ROOT: './x/../y/' }).dataRoot).toBe('/srv/app/y');
    expect(cfg({ SERVICE_DATA_ROOT: '../other/d' }).dataRoot).toBe('/srv/other/d');
  });
  it('keeps an absolute value (normalised)', () => {
    expect(cfg({ SERVICE_DATA_ROOT: '/data' }).dataRoot).toBe('/data');
    expect(cfg({ SERVICE_DATA_ROOT: '//data//x/./' }).dataRoot).toBe('/data/x');
  });
  it('empty counts as unset', () => {
    expect(cfg({ SERVICE_DATA_ROOT: ' ' }).dataRoot).toBe('/srv/app/service-data');
  });
  it('without cwd uses the process working directory', () => {
    expect(loadConfig({}).config.dataRoot).toBe(resolvePath(process.cwd(), 'service-data'));
  });
  it('resolvePath', () => {
    expect(resolvePath('/a/b', '../../../..')).toBe('/');
    expect(resolvePath('/a', '.')).toBe('/a');
  });
});

describe('identity provider', () => {
  it('IDP_OAUTH_CLIENT_ID unset or empty → undefined; set → trimmed', () => {
    expect(cfg().idpClientId).toBeUndefined();
    expect(cfg({ IDP_OAUTH_CLIENT_ID: '' }).idpClientId).toBeUndefined();
    expect(cfg({ IDP_OAUTH_CLIENT_ID: ' abc.apps ' }).idpClientId).toBe('abc.apps');
  });
  it('IDP_JWKS_URL default and override', () => {
    expect(cfg().idpJwksUrl).toBe('https://www.googleapis.com/oauth2/v3/certs');
    expect(cfg({ IDP_JWKS_URL: 'http://127.0.0.1:5555/jwks' }).idpJwksUrl).toBe('http://127.0.0.1:5555/jwks');
  });
  it('IDP_JWKS_URL must be an http(s) URL', () => {
    expect(() => cfg({ IDP_JWKS_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => cfg({ IDP_JWKS_URL: 'file:///etc/jwks' })).toThrow(ConfigError);
  });
  it('plain-http IDP_JWKS_URL to a non-loopback host is warned about; loopback is not', () => {
    const base = { SERVICE_SESSION_SECRET: SECRET32, SERVICE_API_KEY: 'k' };
    expect(load({ ...base, IDP_JWKS_URL: 'http://idp.example/jwks' }).warnings).toHaveLength(1);
    expect(load({ ...base, IDP_JWKS_URL: 'http://localhost:1/jwks' }).warnings).toEqual([]);
    expect(load({ ...base, IDP_JWKS_URL: 'http://[::1]:1/jwks' }).warnings).toEqual([]);
  });
  it('IDP_ISSUERS default and comma list; empty list → default', () => {
    expect(cfg().idpIssuers).toEqual(['https://accounts.google.com', 'accounts.google.com']);
    expect(cfg({ IDP_ISSUERS: ' http://127.0.0.1:9/ , ,x ' }).idpIssuers).toEqual(['http://127.0.0.1:9/', 'x']);
    expect(cfg({ IDP_ISSUERS: ' , ' }).idpIssuers).toEqual(['https://accounts.google.com', 'accounts.google.com']);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['localhost', true],
    ['LOCALHOST.', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.1', false],
    ['example.org', false],
  ])('%j → %j', (h, expected) => {
    expect(isLoopbackHost(h)).toBe(expected);
  });
  it('undefined (every interface) is not loopback', () => {
    expect(isLoopbackHost(undefined)).toBe(false);
  });
});

describe('SERVICE_CACHE_MB', () => {
  it('defaults to DEFAULTS.cacheMb MiB; unset, empty and blank are the default', () => {
    expect(cfg().cacheBytes).toBe(DEFAULTS.cacheMb * 1024 * 1024);
    expect(cfg({ SERVICE_CACHE_MB: '' }).cacheBytes).toBe(DEFAULTS.cacheMb * 1024 * 1024);
    expect(cfg({ SERVICE_CACHE_MB: '  ' }).cacheBytes).toBe(DEFAULTS.cacheMb * 1024 * 1024);
  });

  it.each([
    ['64', 64 * 1024 * 1024],
    [' 8 ', 8 * 1024 * 1024],
    ['0', 0],
    [String(MAX_CACHE_MB), MAX_CACHE_MB * 1024 * 1024],
  ])('%j → %d bytes', (v, bytes) => {
    expect(cfg({ SERVICE_CACHE_MB: v }).cacheBytes).toBe(bytes);
  });

  it.each(['abc', '-1', '1.5', '1e3', '+5', '0x10', '64MB', String(MAX_CACHE_MB + 1), '99999999999999999999'])(
    'refuses %j with a ConfigError naming the variable and the range',
    (v) => {
      let err: unknown;
      try {
        cfg({ SERVICE_CACHE_MB: v });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('SERVICE_CACHE_MB');
      expect((err as Error).message).toContain(JSON.stringify(v));
      expect((err as Error).message).toContain(`from 0 to ${MAX_CACHE_MB}`);
    },
  );

  it('is split among the caches without exceeding the total', () => {
    for (const total of [0, 1, 1023, 16 * 1024 * 1024, 123_456_789]) {
      const b = cacheBudget(total);
      expect(b.gitStore + b.parsedPages + b.outlines + b.blames).toBe(total);
      for (const v of Object.values(b)) expect(v).toBeGreaterThanOrEqual(0);
    }
    const b = cacheBudget(16 * 1024 * 1024);
    // Half to the git store (give or take the rounding of the other shares).
    expect(Math.abs(b.gitStore - 8 * 1024 * 1024)).toBeLessThanOrEqual(2);
    expect(b.parsedPages).toBe(Math.floor(16 * 1024 * 1024 * 0.3));
    expect(b.outlines).toBe(2 * 1024 * 1024);
    expect(b.blames).toBe(Math.floor(16 * 1024 * 1024 * 0.075));
  });
});
