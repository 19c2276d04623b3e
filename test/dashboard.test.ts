/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core): the Vite build served by
 * scripts/dashboard.ts, the real API server, and a loopback OpenID Connect provider. Sign-in both ways,
 * repositories, pages grouped, a page rendered/raw with its frontmatter, search, the section diff of two
 * commits, untrusted page text rendered inert, 375 px, sign-out. Every view shown passes axe-core (no serious
 * or critical violation) and is saved as a screenshot in test-artifacts/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { DashboardServer } from '../scripts/dashboard.ts';
import type { TestServer } from './helpers/env.ts';
import type { OidcProvider } from './helpers/oidc.ts';
import {
  DECISION_V1,
  DECISION_V2,
  DECISION_V3,
  hasChromium,
  startDashboard,
  warnIfNoChromium,
  type DashboardHarness,
} from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard.test.ts');


const EVIL = `---
type: concept
title: Untrusted
---
Hello <script>window.__pwned = 'script'</script> there.

<img src=x onerror="window.__pwned = 'onerror'">

[click me](javascript:window.__pwned='md-link')

<a href="javascript:window.__pwned='a-link'">raw link</a> <a href="JaVaScRiPt:window.__pwned='mixed'">mixed case</a>

<svg><script>window.__pwned = 'svg'</script></svg>
`;

describe.skipIf(!hasChromium)('the dashboard in chromium', () => {
  let h: DashboardHarness;
  let op: OidcProvider;
  let srv: TestServer;
  let dash: DashboardServer;
  let page: Page;
  let bobPat: string;
  let bobSession: string;
  const shas: string[] = [];

  /** Every view shown gets an axe-core pass (no serious or critical violation) and a screenshot artifact. */
  const shot = async (name: string) => {
    expect(await h.axe(), `axe-core on the ${name} view`).toEqual([]);
    await h.shot(name);
  };
  const push = async (files: { path: string; content: string }[], message: string): Promise<string> => {
    const res = await srv.api('/v1/repos/acme/sync/push', {
      method: 'POST',
      token: bobSession,
      json: { message, author_name: 'Bob', author_email: 'bob@example.com', files },
    });
    const body = (await res.json()) as { new_head: string };
    expect(res.status).toBe(200);
    return body.new_head;
  };
  const alertText = async () => (await page.getByRole('alert').first().textContent()) ?? '';

  beforeAll(async () => {
    h = await startDashboard();
    ({ op, srv, dash, page } = h);
    // Bob signs in once through the API, for a session to push with and a personal access token to paste.
    const bob = await h.signUp('bob', 'Bob');
    bobSession = bob.session;
    bobPat = bob.pat;
  });

  afterAll(async () => {
    await h?.close();
  });

  it('serves the build and a config.json made for this deployment', async () => {
    const res = await fetch(`${dash.url}/config.json`);
    expect(await res.json()).toEqual({ apiUrl: srv.url, oidcIssuer: op.issuer, oidcClientId: op.clientId });
    expect((await fetch(`${dash.url}/%2e%2e/package.json`)).status).toBe(404);
  });

  it('signs in with a pasted token; a bad one gets the API error', async () => {
    await page.goto(`${dash.url}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot('sign-in');
    await page.getByLabel('Access token').fill('krp_not-a-real-token');
    await page.getByRole('button', { name: 'Sign in with a token' }).click();
    await page.getByRole('alert').waitFor();
    expect(await alertText()).toMatch(/Invalid token \(HTTP 401\)/);

    await page.getByLabel('Access token').fill(bobPat);
    await page.getByRole('button', { name: 'Sign in with a token' }).click();
    await page.getByRole('heading', { name: 'Repositories' }).waitFor();
    expect(await page.locator('.user').textContent()).toBe('Bob');
    // The heading comes first; the list (here its empty state) once the API has answered.
    await page.getByText('You have no repositories yet').waitFor();
    expect(await page.getByText('You have no repositories yet').count()).toBe(1);
    const stored = await page.evaluate(() => sessionStorage.getItem('kr.session'));
    expect(JSON.parse(stored!).token).toBe(bobPat);
  });

  it('creates a repository; an invalid id shows why', async () => {
    await page.getByLabel('New repository id').fill('bad id!');
    await page.getByRole('button', { name: 'Create repository' }).click();
    await page.getByRole('alert').waitFor();
    expect(await alertText()).toContain('Id must match [A-Za-z0-9][A-Za-z0-9_-]{0,63} (HTTP 400)');

    await page.getByLabel('New repository id').fill('acme');
    await page.getByRole('button', { name: 'Create repository' }).click();
    await page.getByRole('status').filter({ hasText: 'Created acme' }).waitFor();
    const item = page.getByRole('list', { name: 'Repositories' }).getByRole('listitem');
    await item.filter({ hasText: 'acme' }).waitFor();
    expect(await item.textContent()).toContain('0 pages');
    expect(await item.textContent()).toContain('no changes yet');
  });

  it('shows the pages pushed through the API, grouped by type', async () => {
    shas.push(
      await push(
        [
          { path: 'wiki/concepts/decision-log.md', content: DECISION_V1 },
          { path: 'wiki/entities/acme.md', content: '---\ntype: entity\n---\nAcme makes anvils.\n' },
          { path: 'wiki/analyses/latency.md', content: '# Latency\nSQLite reads are fast.\n' },
          { path: 'raw/sessions/2026-11-23.md', content: 'We talked about storage.\n' },
          { path: 'notes/readme.md', content: 'Loose notes.\n' },
        ],
        'first pages',
      ),
    );
    shas.push(await push([{ path: 'wiki/concepts/decision-log.md', content: DECISION_V2 }], 'decide on storage'));
    await push([{ path: 'wiki/concepts/evil.md', content: EVIL }], 'an untrusted page');

    await page.reload();
    const acme = page.getByRole('list', { name: 'Repositories' }).getByRole('listitem').filter({ hasText: 'acme' });
    await acme.filter({ hasText: '6 pages' }).waitFor();
    expect(await acme.textContent()).toMatch(/last change .* by Bob: an untrusted page/);
    await shot('repositories');

    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    await page.locator('section.group h2').first().waitFor();
    const groups = await page.locator('section.group h2').allTextContents();
    expect(groups).toEqual(['Concepts (2)', 'Entities (1)', 'Analyses (1)', 'Sources (1)', 'Other (1)']);
    // Titles where pages have one (evil.md's frontmatter says "Untrusted"), else the file name.
    const concepts = page.locator('section.group').first().locator('li .title');
    await concepts.filter({ hasText: 'Untrusted' }).waitFor();
    expect(await concepts.allTextContents()).toEqual(['decision-log', 'Untrusted']);
    await shot('repository');
  });

  it('opens a page: rendered markdown, frontmatter table, raw view, copy link', async () => {
    await page.getByRole('link', { name: 'decision-log' }).click();
    await page.getByRole('heading', { name: 'decision-log', level: 1 }).waitFor();
    const article = page.locator('article.markdown');
    await article.getByRole('heading', { name: 'Decision', level: 2 }).waitFor();
    expect(await article.textContent()).toContain('Use git and SQLite.');
    expect(await article.textContent()).not.toContain('type: concept');
    const table = page.getByRole('table', { name: 'Frontmatter' });
    expect(await table.getByRole('row').allTextContents()).toEqual(['typeconcept', 'tagsprocess, storage']);
    await shot('page');

    await page.getByRole('button', { name: 'Raw' }).click();
    const raw = page.getByLabel('Raw page text');
    expect(await raw.textContent()).toBe(DECISION_V2);
    expect(await page.getByRole('button', { name: 'Raw' }).getAttribute('aria-pressed')).toBe('true');
    await shot('page-raw');
    await page.getByRole('button', { name: 'Rendered' }).click();
    await article.waitFor();

    await page.getByRole('button', { name: 'Copy link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link copied.' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
      `${dash.url}/#/repo/acme/page/wiki/concepts/decision-log.md`,
    );

    const history = page.getByRole('heading', { name: 'History' }).locator('xpath=..').getByRole('listitem');
    await history.nth(1).waitFor();
    expect(await history.count()).toBe(2);
    expect(await history.first().textContent()).toContain('decide on storage');
    expect(await history.last().textContent()).toContain('created the page');
  });

  it('searches: the match is marked, the rest is text, and no match has an empty state', async () => {
    await page.getByRole('link', { name: 'acme' }).click();
    // The repository view has loaded its pages before anyone types a query into it.
    await page.locator('section.group').first().waitFor();
    await page.getByLabel('Search pages').fill('sqlite');
    await page.getByRole('button', { name: 'Search' }).click();
    const results = page.getByRole('list', { name: 'Search results' }).getByRole('listitem');
    await results.first().waitFor();
    const links = await results.getByRole('link').allTextContents();
    expect(links).toContain('decision-log');
    expect(links).toContain('latency');
    const marks = await page.locator('.snippet mark').allTextContents();
    expect(marks.length).toBeGreaterThan(0);
    for (const m of marks) expect(m.toLowerCase()).toBe('sqlite');
    expect(await page.locator('.snippet').first().textContent()).not.toMatch(/[«»]/);
    expect(page.url()).toContain('#/repo/acme?q=sqlite');
    await shot('search');

    // The untrusted page's text comes back in a snippet: shown as text, never as HTML.
    await page.getByLabel('Search pages').fill('hello');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('list', { name: 'Search results' }).getByRole('link', { name: 'Untrusted' }).waitFor();
    expect(await page.locator('.snippet img, .snippet script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();

    await page.getByLabel('Search pages').fill('zebrafish');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No page matches.').waitFor();
    await page.getByRole('link', { name: 'Clear the search' }).click();
    await page.locator('section.group').first().waitFor();
    expect(await page.getByRole('list', { name: 'Search results' }).count()).toBe(0);
  });

  it('shows the section diff of the last change, and of any two commits picked', async () => {
    await page.goto(`${dash.url}/#/repo/acme/page/wiki/concepts/decision-log.md`);
    await page.getByRole('link', { name: 'Last change' }).click();
    await page.getByRole('heading', { name: 'Changes to decision-log' }).waitFor();
    const decision = page.locator('section.section').filter({ has: page.getByRole('heading', { name: 'Decision', exact: true }) });
    await decision.waitFor();
    expect(await decision.locator('.status').textContent()).toBe('modified');
    expect(await decision.locator('.line.del').textContent()).toContain('- Use git.');
    expect(await decision.locator('.line.add').textContent()).toContain('+ Use git and SQLite.');
    expect(await decision.locator('.chip').textContent()).toMatch(/introduced by Bob · \d{4}-\d\d-\d\d · [0-9a-f]{7}/);
    const renamed = page.locator('section.section.status-renamed');
    expect(await renamed.getByRole('heading').textContent()).toBe('Open questions');
    expect(await renamed.locator('.renamed-from').textContent()).toBe('renamed from Risks');
    const added = page.locator('section.section.status-added');
    expect(await added.getByRole('heading').textContent()).toBe('Consequences');
    const fm = page.getByRole('table', { name: 'Frontmatter changes' });
    expect(await fm.getByRole('row').filter({ hasText: 'tags' }).textContent()).toBe('tagsaddedstorage');
    expect(await page.locator('.diff > p[role=status]').textContent()).toContain(`From ${shas[0]!.slice(0, 7)} to ${shas[1]!.slice(0, 7)}`);
    await shot('diff');

    // A third commit; compare the first with the third through the pickers.
    shas.push(await push([{ path: 'wiki/concepts/decision-log.md', content: DECISION_V3 }], 'say more'));
    // The default diff is held back until the reader has picked: a diff that arrives late must not undo the picks
    // (CI once saw exactly this race).
    let release!: () => void;
    const picked = new Promise<void>((r) => (release = r));
    const held = '**/v1/repos/acme/diff/**';
    await page.route(held, async (route) => {
      await picked;
      await route.continue();
    });
    await page.reload();
    await page.getByLabel('From (older)').locator('option').nth(2).waitFor({ state: 'attached' });
    await page.getByLabel('From (older)').selectOption(shas[0]!);
    await page.getByLabel('To (newer)').selectOption(shas[2]!);
    release();
    await page.getByText('Loading the changes').waitFor({ state: 'detached' });
    await page.unroute(held);
    expect(await page.getByLabel('From (older)').inputValue()).toBe(shas[0]);
    expect(await page.getByLabel('To (newer)').inputValue()).toBe(shas[2]);
    await page.getByRole('button', { name: 'Compare' }).click();
    await page.waitForURL(`**/#/repo/acme/diff/wiki/concepts/decision-log.md?from=${shas[0]}&to=${shas[2]}`);
    const summary = page.locator('.diff > p[role=status]');
    // The whole range: the default diff shown before (the last change) also ends at the third commit.
    await summary.filter({ hasText: `From ${shas[0]!.slice(0, 7)} to ${shas[2]!.slice(0, 7)}` }).waitFor();
    const consequences = page.locator('section.section').filter({ has: page.getByRole('heading', { name: 'Consequences' }) });
    expect(await consequences.locator('.line.add').textContent()).toContain('+ History for free, and blame.');
    expect(await page.getByLabel('From (older)').inputValue()).toBe(shas[0]);
  });

  it('renders untrusted page text inert: no script runs, no javascript: link, no handler', async () => {
    await page.goto(`${dash.url}/#/repo/acme/page/wiki/concepts/evil.md`);
    const article = page.locator('article.markdown');
    await article.waitFor();
    expect(await article.textContent()).toContain('Hello');
    expect(await article.locator('script').count()).toBe(0);
    expect(await article.locator('[onerror], [onclick], [onload]').count()).toBe(0);
    // The author's <img> with a relative address is never fetched: it is said so, as text.
    expect(await article.locator('img').count()).toBe(0);
    expect(await article.locator('span.media-blocked').textContent()).toBe('The image (x) is not available here.');
    const hrefs = await article.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    for (const h of hrefs) expect(h.trim().toLowerCase().startsWith('javascript:')).toBe(false);
    for (const name of ['click me', 'raw link', 'mixed case']) {
      const link = article.getByText(name);
      if ((await link.count()) > 0) await link.first().click();
    }
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(page.url()).toContain('#/repo/acme/page/wiki/concepts/evil.md');
    await shot('untrusted-page');
  });

  it('fits 375 px and works from the keyboard', async () => {
    await page.setViewportSize({ width: 375, height: 740 });
    for (const hash of ['#/repo/acme', '#/repo/acme/page/wiki/concepts/decision-log.md', '#/repo/acme/diff/wiki/concepts/decision-log.md']) {
      await page.goto(`${dash.url}/${hash}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.locator('main li, main section.section').first().waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    }
    await shot('diff-375px');
    await page.goto(`${dash.url}/#/`);
    await page.getByRole('heading', { name: 'Repositories' }).waitFor();
    await page.getByRole('link', { name: 'acme' }).waitFor();
    await shot('repositories-375px');
    // A new view puts focus on its heading; Tab goes on to the id box, Create, the repository's link; Enter follows it.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Repositories');
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      seen.push(await page.evaluate(() => `${document.activeElement?.tagName}:${document.activeElement?.textContent || (document.activeElement as HTMLInputElement).id}`));
    }
    expect(seen).toEqual(['INPUT:new-repo', 'BUTTON:Create repository', 'A:acme']);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    await page.setViewportSize({ width: 1100, height: 800 });
  });

  it('says so at an address that leads nowhere, with a way back', async () => {
    await page.goto(`${dash.url}/#/no/such/view`);
    await page.getByRole('heading', { name: 'Not found', level: 1 }).waitFor();
    await shot('not-found');
    await page.getByRole('link', { name: 'Back to your repositories' }).click();
    await page.getByRole('heading', { name: 'Repositories', level: 1 }).waitFor();
  });

  it('signs out: the session is gone from the tab', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('kr.session'))).toBeNull();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  });

  it('signs in through the OpenID Connect provider, state and nonce checked', async () => {
    await page.goto(`${dash.url}/`);
    await page.getByRole('button', { name: 'Sign in with OpenID Connect' }).click();
    await page.getByRole('heading', { name: 'Repositories' }).waitFor();
    expect(await page.locator('.user').textContent()).toBe('Alice');
    expect(page.url()).toBe(`${dash.url}/#/`);
    const q = op.authorizations.at(-1)!;
    expect(q.get('response_type')).toBe('id_token');
    expect(q.get('client_id')).toBe(op.clientId);
    expect(q.get('redirect_uri')).toBe(`${dash.url}/`);
    expect(q.get('scope')).toContain('openid');
    expect(q.get('state')).toMatch(/^[0-9a-f]{48}$/);
    expect(q.get('nonce')).toMatch(/^[0-9a-f]{48}$/);
    // Alice belongs to no repository.
    await page.getByText('You have no repositories yet').waitFor();
    const s = JSON.parse((await page.evaluate(() => sessionStorage.getItem('kr.session')))!) as { token: string; via: string };
    expect(s.via).toBe('oidc');
    expect((await srv.api('/v1/me', { token: s.token })).status).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  });

  it('refuses a provider answer with the wrong nonce, or one it never asked for', async () => {
    op.nonceOverride = 'replayed-nonce';
    try {
      await page.getByRole('button', { name: 'Sign in with OpenID Connect' }).click();
      await page.getByRole('alert').waitFor();
      expect(await alertText()).toBe('Sign-in answer rejected: the nonce does not match.');
    } finally {
      op.nonceOverride = null;
    }
    expect(await page.evaluate(() => sessionStorage.getItem('kr.session'))).toBeNull();

    const forged = await op.idp.signIdToken({ ...op.user, nonce: 'x' });
    await page.goto('about:blank');
    await page.goto(`${dash.url}/#id_token=${forged}&state=forged`);
    await page.getByRole('alert').waitFor();
    expect(await alertText()).toBe('Sign-in answer rejected: no sign-in was started in this tab.');
    expect(await page.evaluate(() => sessionStorage.getItem('kr.session'))).toBeNull();
    expect(page.url()).not.toContain('id_token');
  });
});
