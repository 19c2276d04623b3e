/**
 * One harness for the dashboard's browser tests: the Vite build served by scripts/dashboard.ts, the real API
 * server (self-hosted or hosted), a loopback OpenID Connect provider, Debian's chromium driven by
 * playwright-core, screenshots into test-artifacts/dashboard/, and an axe-core pass over the view shown.
 *
 *   const h = await startDashboard({ env: { SERVICE_HOSTED: '1' } });
 *   const s = await h.signUp('bob', 'Bob');           // a user, through POST /v1/auth/idp
 *   await h.signInWithToken(s.pat);                    // in the browser, with a pasted token
 *   await h.page.goto(`${h.dash.url}/#/tokens`); await h.axe('tokens'); await h.shot('tokens');
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { buildDashboard, serveDashboard, type DashboardServer } from '../../scripts/dashboard.ts';
import type { Clock } from '../../lib/util/clock.ts';
import { startTestServer, type TestServer } from './env.ts';
import { startOidcProvider, type OidcProvider } from './oidc.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'dashboard');
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Call at the top of a dashboard test file: says why the file is skipped on a machine without chromium. */
export function warnIfNoChromium(file: string): void {
  if (!hasChromium) console.warn(`${file}: SKIPPED, ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run does it)`);
}

export interface SignedUp {
  id: string;
  email: string;
  name: string;
  /** A session JWT from POST /v1/auth/idp. */
  session: string;
  /** A personal access token minted with that session (to paste into the sign-in form). */
  pat: string;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

export interface DashboardHarness {
  op: OidcProvider;
  srv: TestServer;
  dash: DashboardServer;
  context: BrowserContext;
  page: Page;
  /** A user signed in through the identity provider (a real ID token), with a session and a PAT. */
  signUp(sub: string, name: string, email?: string): Promise<SignedUp>;
  /** Signs the browser tab in by pasting `token`; resolves once the repositories view shows. */
  signInWithToken(token: string): Promise<void>;
  /** A full-page screenshot into test-artifacts/dashboard/<name>.png. */
  shot(name: string): Promise<void>;
  /** Runs axe-core on the current view; returns the serious and critical violations (an empty list passes). */
  axe(): Promise<AxeViolation[]>;
  close(): Promise<void>;
}

let axeSource: string | undefined;

/** `clock`: the API server's time source (default the system clock), for tests that need expired keys or tokens. */
export async function startDashboard(opts: { env?: Record<string, string>; clock?: Clock } = {}): Promise<DashboardHarness> {
  await mkdir(ARTIFACTS, { recursive: true });
  const outDir = await mkdtemp(join(tmpdir(), 'kr-dashboard-build-'));
  const profile = await mkdtemp(join(tmpdir(), 'kr-dashboard-profile-'));
  const { chromium } = await import('playwright-core');
  const [, op] = await Promise.all([buildDashboard(outDir), startOidcProvider()]);
  const dash = await serveDashboard({ root: outDir, port: 0, config: { apiUrl: 'http://127.0.0.1:9' } });
  const srv = await startTestServer({
    env: { ...op.serverEnv(), SERVICE_CORS_ORIGINS: dash.url, SERVICE_DASHBOARD_URL: dash.url, ...opts.env },
    clock: opts.clock,
  });
  dash.config = { apiUrl: srv.url, oidcIssuer: op.issuer, oidcClientId: op.clientId };
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 800 },
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dash.url });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(10_000);

  const h: DashboardHarness = {
    op,
    srv,
    dash,
    context,
    page,
    async signUp(sub, name, email = `${sub}@example.com`) {
      const idToken = await op.idp.signIdToken({ sub, email, name });
      const signed = await srv.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      if (signed.status !== 200) throw new Error(`sign-in of ${sub}: ${signed.status} ${await signed.text()}`);
      const body = (await signed.json()) as { access_token: string; user: { id: string } };
      const pat = await srv.api('/v1/pats', { method: 'POST', token: body.access_token, json: { label: `${sub} in the browser` } });
      if (pat.status !== 201) throw new Error(`PAT of ${sub}: ${pat.status} ${await pat.text()}`);
      return { id: body.user.id, email, name, session: body.access_token, pat: ((await pat.json()) as { token: string }).token };
    },
    async signInWithToken(token) {
      await page.goto(`${dash.url}/#/`);
      // Wait for the app to settle on one of its two faces (it shows "Loading…" first), then sign out if needed.
      const signOut = page.getByRole('button', { name: 'Sign out' });
      const tokenBox = page.getByLabel('Access token');
      await signOut.or(tokenBox).first().waitFor();
      if (await signOut.isVisible()) await signOut.click();
      await page.getByLabel('Access token').fill(token);
      await page.getByRole('button', { name: 'Sign in with a token' }).click();
      await page.getByRole('heading', { name: 'Repositories', level: 1 }).waitFor();
    },
    async shot(name) {
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    async axe() {
      axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
      // Evaluated through the DevTools protocol: the page's Content-Security-Policy refuses an inline <script>.
      if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
      const found = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
        const r = await axe.run(document, { resultTypes: ['violations'] });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => String(n.target.join(' '))) }));
      });
      return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    },
    async close() {
      await context.close().catch(() => {});
      await Promise.all([srv.stop(), dash.close(), op.close()]);
      await Promise.all([outDir, profile].map((d) => rm(d, { recursive: true, force: true })));
    },
  };
  return h;
}

/** A page in three versions (sections changed, renamed and added; a tag added), for the diff and evolution views. */
export const DECISION_V1 = `---
type: concept
tags: [process]
---
Why we decide the way we do.
## Decision
Use git.
## Risks
Nobody reads it.
`;
export const DECISION_V2 = `---
type: concept
tags: [process, storage]
---
Why we decide the way we do.
## Decision
Use git and SQLite.
## Open questions
Nobody reads it.
## Consequences
History for free.
`;
export const DECISION_V3 = DECISION_V2.replace('History for free.', 'History for free, and blame.');
