/**
 * `kr login --browser` end to end: the real `kr` executable as a child process, its browser
 * opener (KR_BROWSER) a small script that writes the URL to a file; Debian's chromium (playwright-core)
 * then opens that URL on the Vite build of the dashboard, against the real API server. Allow, Cancel, a
 * forged callback, the time limit, bad link parameters, and the link opened while signed out.
 * Plus the CLI module's pieces that need no browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';
import { krUser, runKr, show, type KrResult, type KrUser } from './helpers/cli.ts';
import { dashboardBase, duration, localHostname, loginTimeout, loginUrl, timeoutMessage } from '../cli/browser-login.ts';

warnIfNoChromium('test/cli-browser-login.test.ts');

describe('kr login --browser: the pieces', () => {
  it('takes the dashboard from --dashboard, else KR_DASHBOARD_URL, else http://localhost:5173', () => {
    expect(dashboardBase(undefined, {})).toBe('http://localhost:5173');
    expect(dashboardBase(undefined, { KR_DASHBOARD_URL: 'https://kr.example.com/app/' })).toBe('https://kr.example.com/app');
    expect(dashboardBase('dash.local:8000', { KR_DASHBOARD_URL: 'https://kr.example.com' })).toBe('http://dash.local:8000');
    expect(() => dashboardBase('ftp://x', {})).toThrow(/unsupported URL scheme/);
    expect(() => dashboardBase('https://x/?a=1', {})).toThrow(/query or fragment/);
  });

  it('waits 5 minutes unless KR_LOGIN_TIMEOUT_MS says otherwise, and says so', () => {
    expect(loginTimeout({})).toBe(300_000);
    expect(loginTimeout({ KR_LOGIN_TIMEOUT_MS: '1500' })).toBe(1500);
    expect(() => loginTimeout({ KR_LOGIN_TIMEOUT_MS: '-3' })).toThrow(/KR_LOGIN_TIMEOUT_MS/);
    expect(timeoutMessage(300_000)).toBe('no answer from the browser within 5 minutes');
    expect(duration(60_000)).toBe('1 minute');
    expect(duration(1500)).toBe('1.5 seconds');
    expect(duration(1000)).toBe('1 second');
  });

  it('builds the link with the port, the state and the hostname', () => {
    const u = new URL(loginUrl('https://kr.example.com/app', 4321, 'abc_DEF-123', 'my laptop&co'));
    expect(u.origin + u.pathname).toBe('https://kr.example.com/app/cli-login');
    expect(Object.fromEntries(u.searchParams)).toEqual({ port: '4321', state: 'abc_DEF-123', hostname: 'my laptop&co' });
  });
});

describe.skipIf(!hasChromium)('kr login --browser in chromium', () => {
  let h: DashboardHarness;
  let page: Page;
  let root: string;
  let carol: SignedUp;
  let cli: KrUser;
  const host = localHostname();
  const label = `kr CLI on ${host}`;

  const patCount = async (): Promise<number> => {
    const res = await h.srv.api('/v1/pats', { token: carol.session });
    return ((await res.json()) as { pats: unknown[] }).pats.length;
  };

  /**
   * Signs the tab out, once the app has rendered (h.signInWithToken looks for "Sign out" right after the
   * page loads, so coming from another page it can miss it while the app still says "Loading…").
   */
  const signOut = async () => {
    await page.goto(`${h.dash.url}/#/`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const button = page.getByRole('button', { name: 'Sign out' });
    if (await button.isVisible()) await button.click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
  };
  const signIn = async (token: string) => {
    await signOut();
    await page.getByLabel('Access token').fill(token);
    await page.getByRole('button', { name: 'Sign in with a token' }).click();
    await page.getByRole('heading', { name: 'Repositories', level: 1 }).waitFor();
  };

  /** Starts `kr login --browser`; resolves with the URL its "browser" was given, and the command's outcome. */
  const startLogin = async (extraEnv: Record<string, string> = {}, extraArgs: string[] = []) => {
    const urlFile = join(root, `url-${Math.random().toString(36).slice(2)}.txt`);
    const done: Promise<KrResult> = runKr(['login', '--browser', '--server', h.srv.url, '--dashboard', h.dash.url, ...extraArgs], {
      home: cli.home,
      cwd: cli.project,
      env: { KR_BROWSER: `"${process.execPath}" "${join(root, 'browser.mjs')}" "${urlFile}"`, ...extraEnv },
    });
    let exited: KrResult | undefined;
    void done.then((r) => (exited = r));
    const deadline = Date.now() + 30_000;
    while (!existsSync(urlFile) || (await readFile(urlFile, 'utf8')) === '') {
      if (exited) throw new Error(`kr exited before opening the browser\n${show(exited)}`);
      if (Date.now() > deadline) throw new Error('kr never opened the browser');
      await new Promise((r) => setTimeout(r, 50));
    }
    const url = (await readFile(urlFile, 'utf8')).trim();
    return { url, done, exited: () => exited };
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kr-browser-login-'));
    // The "browser": writes the URL it is given to the file named by its first argument.
    await writeFile(join(root, 'browser.mjs'), "import { writeFileSync } from 'node:fs';\nwriteFileSync(process.argv[2], process.argv[3]);\n");
    h = await startDashboard();
    page = h.page;
    carol = await h.signUp('carol', 'Carol');
    cli = await krUser(root, 'carol');
  });

  afterAll(async () => {
    await h?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('Allow: the dashboard mints a PAT labelled with the hostname, the CLI checks it, saves it, and it works', async () => {
    await signIn(carol.pat);
    const before = await patCount();
    const login = await startLogin();
    const url = new URL(login.url);
    expect(url.origin + url.pathname).toBe(`${h.dash.url}/cli-login`);
    expect(url.searchParams.get('hostname')).toBe(host);
    expect(url.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const port = Number(url.searchParams.get('port'));

    await page.goto(login.url);
    await page.getByRole('heading', { name: `Sign in the command line on ${host}`, level: 1 }).waitFor();
    expect(page.url()).toContain('#/cli-login?');
    await page.getByText('Signed in as Carol (carol@example.com).').waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).toContain(label);
    expect(text).toContain(`127.0.0.1:${port}`);
    expect(await page.getByLabel('Token expires in').inputValue()).toBe('90');
    expect(await h.axe()).toEqual([]);
    await h.shot('cli-login');

    // Every address the tab asks for, and how the answer reaches the CLI.
    const asked: { url: string; method: string; body: string | null }[] = [];
    const onRequest = (req: { url(): string; method(): string; postData(): string | null }) => void asked.push({ url: req.url(), method: req.method(), body: req.postData() });
    page.on('request', onRequest);
    try {
      await page.getByRole('button', { name: 'Allow' }).click();
      const r = await login.done;
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toContain(`Logged in to ${h.srv.url} as carol@example.com.`);
      expect(r.stderr).toContain(`Open this URL to sign in: ${login.url}`);

      // The tab landed on the CLI's page, without the token in its address.
      await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    } finally {
      page.off('request', onRequest);
    }
    expect(page.url()).toBe(`http://127.0.0.1:${port}/callback`);
    expect(await page.content()).not.toContain('krp_');
    // The token went in the body of a form POST, never in an address (history, logs of URLs).
    const handover = asked.filter((a) => a.url.startsWith(`http://127.0.0.1:${port}/`));
    expect(handover.map((a) => [a.url, a.method])).toEqual([[`http://127.0.0.1:${port}/callback`, 'POST']]);
    const fields = new URLSearchParams(handover[0]!.body ?? '');
    expect(fields.get('state')).toBe(url.searchParams.get('state'));
    expect(fields.get('token')).toMatch(/^krp_/);
    expect(asked.filter((a) => a.url.includes('krp_'))).toEqual([]);
    const cdp = await page.context().newCDPSession(page);
    const { entries } = (await cdp.send('Page.getNavigationHistory')) as { entries: { url: string }[] };
    await cdp.detach();
    expect(entries.filter((e) => e.url.includes('krp_') || e.url.includes('token='))).toEqual([]);

    // The saved token is a new PAT of Carol's, labelled with the hostname, expiring in 90 days.
    const creds = JSON.parse(await readFile(join(cli.configDir, 'credentials.json'), 'utf8')) as { server_url: string; token: string };
    expect(creds.server_url).toBe(h.srv.url);
    expect(creds.token).toMatch(/^krp_/);
    const me = await h.srv.api('/v1/me', { token: creds.token });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { email: string }).email).toBe('carol@example.com');
    const pats = ((await (await h.srv.api('/v1/pats', { token: carol.session })).json()) as { pats: { label: string; expires_at?: number }[] }).pats;
    expect(pats.length).toBe(before + 1);
    const minted = pats.find((p) => p.label === label);
    expect(minted, JSON.stringify(pats)).toBeDefined();
    expect(minted!.expires_at! - Date.now() / 1000).toBeGreaterThan(89 * 86_400);
    expect(minted!.expires_at! - Date.now() / 1000).toBeLessThan(91 * 86_400);
    // And the CLI works with it.
    const list = await cli.kr('pats', 'list', '--json');
    expect(list.code, show(list)).toBe(0);
    expect(list.stdout).toContain(label);
    // The listener is gone.
    await expect(fetch(`http://127.0.0.1:${port}/callback`)).rejects.toThrow();
  });

  it('Cancel: the CLI stops at once with the denied message, and no token is minted', async () => {
    await signIn(carol.pat);
    const before = await patCount();
    const login = await startLogin({}, ['--json']);
    await page.goto(login.url);
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    const r = await login.done;
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('{"error":"login cancelled: the sign-in was denied in the browser; no token was saved","code":"denied"}');
    await page.getByRole('heading', { name: 'Sign-in cancelled' }).waitFor();
    expect(await patCount()).toBe(before);
  });

  it('a callback with a forged state gets 400, a GET 405, another body 415 or 413, and the CLI keeps waiting for the real one', async () => {
    await signIn(carol.pat);
    const login = await startLogin({}, ['--json']);
    const url = new URL(login.url);
    const port = url.searchParams.get('port');
    const callback = `http://127.0.0.1:${port}/callback`;
    const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields) });
    const forged = await fetch(callback, form({ state: 'A'.repeat(43), token: 'krp_forged' }));
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('does not belong to the kr command waiting here');
    expect((await fetch(callback, form({ error: 'denied' }))).status).toBe(400);
    // The old handover, a token in the query string, is refused even with the right state.
    const state = url.searchParams.get('state')!;
    const get = await fetch(`${callback}?${new URLSearchParams({ state, token: 'krp_in_the_address' })}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const json = await fetch(callback, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ state, token: 'krp_x' }) });
    expect(json.status).toBe(415);
    const huge = await fetch(callback, form({ state, token: `krp_${'x'.repeat(20_000)}` }));
    expect(huge.status).toBe(413);
    await new Promise((r) => setTimeout(r, 300));
    expect(login.exited()).toBeUndefined();

    await page.goto(login.url);
    await page.getByRole('button', { name: 'Allow' }).click();
    const r = await login.done;
    expect(r.code, show(r)).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ server_url: h.srv.url, identity: { email: 'carol@example.com', name: 'Carol' } });
  });

  it('gives up after KR_LOGIN_TIMEOUT_MS with the exact message, and closes the listener', async () => {
    const login = await startLogin({ KR_LOGIN_TIMEOUT_MS: '1500' });
    const port = new URL(login.url).searchParams.get('port');
    const r = await login.done;
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('error: no answer from the browser within 1.5 seconds\n');
    await expect(fetch(`http://127.0.0.1:${port}/callback`)).rejects.toThrow();
  });

  it('refuses a link with a bad port or state, and mints nothing', async () => {
    await signIn(carol.pat);
    const before = await patCount();
    const state = 'S'.repeat(43);
    const cases: [string, RegExp][] = [
      [`port=80&state=${state}&hostname=box`, /port is not a whole number from 1024 to 65535/],
      [`port=70000&state=${state}&hostname=box`, /port is not a whole number from 1024 to 65535/],
      [`port=8080.5&state=${state}&hostname=box`, /port is not a whole number/],
      [`port=8080@evil.example&state=${state}&hostname=box`, /port is not a whole number/],
      [`port=8080&state=short&hostname=box`, /state is not 16 to 128 letters/],
      [`port=8080&state=${state}%3Cx%3E&hostname=box`, /state is not 16 to 128 letters/],
      [`state=${state}&hostname=box`, /names no port/],
      [`port=8080&state=${state}`, /names no computer/],
    ];
    for (const [query, why] of cases) {
      await page.goto(`${h.dash.url}/cli-login?${query}`);
      await page.getByRole('heading', { name: 'This command-line sign-in link is not valid', level: 1 }).waitFor();
      const alert = (await page.getByRole('alert').textContent()) ?? '';
      expect(alert, query).toMatch(why);
      expect(alert).toContain('no access token was created');
      expect(await page.getByRole('button', { name: 'Allow' }).count()).toBe(0);
    }
    expect(await h.axe()).toEqual([]);
    await h.shot('cli-login-invalid');
    expect(await patCount()).toBe(before);
  });

  it('shows a hostile hostname as text, without direction overrides, and capped', async () => {
    await signIn(carol.pat);
    const evil = `<img src=x onerror="window.__pwned=1">\u202e${'x'.repeat(300)}`;
    await page.goto(`${h.dash.url}/cli-login?${new URLSearchParams({ port: '4000', state: 'S'.repeat(43), hostname: evil })}`);
    const heading = page.getByRole('heading', { level: 1 });
    await heading.waitFor();
    const shown = (await heading.textContent()) ?? '';
    expect(shown).toContain('<img src=x onerror=');
    expect(shown).not.toContain('\u202e');
    expect(shown.length).toBeLessThan(160);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('signed out: the sign-in form comes first, and the CLI-login view after signing in with a token', async () => {
    await signOut();

    const login = await startLogin();
    await page.goto(login.url);
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    expect(page.url()).toContain('#/cli-login?');
    await page.getByLabel('Access token').fill(carol.pat);
    await page.getByRole('button', { name: 'Sign in with a token' }).click();
    await page.getByRole('heading', { name: `Sign in the command line on ${host}`, level: 1 }).waitFor();
    await page.getByText('Signed in as Carol (carol@example.com).').waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    const r = await login.done;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('as carol@example.com');
  });

  it('signed out, through the identity provider: back from it, the CLI-login view shows again', async () => {
    await signOut();
    h.op.user = { sub: 'carol', email: 'carol@example.com', name: 'Carol' };

    const login = await startLogin();
    const state = new URL(login.url).searchParams.get('state')!;
    await page.goto(login.url);
    await page.getByRole('button', { name: 'Sign in with OpenID Connect' }).click();
    await page.getByRole('heading', { name: `Sign in the command line on ${host}`, level: 1 }).waitFor();
    expect(page.url()).toContain(`state=${state}`);
    await page.getByText('Signed in as Carol (carol@example.com).').waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    const r = await login.done;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('as carol@example.com');
  });
});
