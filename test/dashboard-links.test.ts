/**
 * Reading pages in the dashboard, in real Chromium (test/helpers/dashboard.ts), beside the editor (test/dashboard-edit.test.ts):
 *  - links between pages: `[[slug]]`, `[[type/slug]]`, `[[slug|text]]` and relative `.md` links lead to the
 *    page, unresolved and ambiguous ones are marked, and the "Linked from" panel lists the links route's
 *    `incoming`;
 *  - untrusted page text stays inert and private: page HTML loses class, id, style, role (and ARIA, data and
 *    tabindex) attributes, remote images and media are not fetched until the reader asks (a raw TCP listener
 *    counts every connection), protocol-relative links open in a new tab without this window, and the
 *    dashboard's pages carry a Content-Security-Policy (meta tag and header) that refuses inline script;
 *  - what the newcomer missed: titles and summaries in lists, history entries linking to their diffs (the
 *    first one too), a search box across every repository, the exact `kr init --repo <id>` of an empty
 *    repository, the token in use marked;
 *  - a repository's lifecycle: export, then delete with a typed confirmation; a member's role changed.
 * Every view: axe-core, 375 px, a screenshot.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard-links.test.ts');

const STORAGE = `---
type: concept
title: Storage
summary: Where the pages live.
---
We use [[postgres]], see [[entities/postgres|the database]] and [the notes](../../notes/readme.md).

Also [[cache]], [[analysis/cache]], [[missing-page]], [gone](../entities/gone.md) and \`[[in code]]\`.
`;

/** A page that is not in the repository. */
const MISSING = 'wiki/entities/nobody.md';

describe.skipIf(!hasChromium)('links, inert text, lifecycle and the newcomer’s list in chromium', () => {
  let h: DashboardHarness;
  let page: Page;
  let alice: SignedUp;
  let bob: SignedUp;
  let tracker: Server;
  let trackerPort = 0;
  const connections: number[] = [];
  const consoleErrors: { text: string; url: string }[] = [];

  const api = async <T,>(path: string, token: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await h.srv.api(path, { ...init, token });
    const text = await res.text();
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${text}`).toBeLessThan(300);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const push = async (who: SignedUp, repo: string, files: { path: string; content: string }[], message: string) =>
    (await api<{ new_head: string }>(`/v1/repos/${repo}/sync/push`, who.session, { method: 'POST', json: { message, files } })).new_head;
  const go = async (hash: string) => {
    await page.goto(`${h.dash.url}/${hash}`);
  };
  const heading = (name: string) => page.getByRole('heading', { name, level: 1, exact: true });
  const noSeriousAxe = async (what: string) => expect(await h.axe(), `axe-core on ${what}`).toEqual([]);
  const fits375 = async (name: string) => {
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      expect(await page.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(375);
      await noSeriousAxe(`${name} at 375 px`);
      await h.shot(`${name}-375px`);
    } finally {
      await page.setViewportSize({ width: 1100, height: 800 });
    }
  };
  beforeAll(async () => {
    // Stands in for a server outside that would track readers: every connection is counted.
    tracker = createServer((s: Socket) => {
      connections.push(Date.now());
      s.on('error', () => undefined);
      s.destroy();
    });
    await new Promise<void>((ok) => tracker.listen(0, '127.0.0.1', ok));
    trackerPort = (tracker.address() as { port: number }).port;

    h = await startDashboard();
    page = h.page;
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'acme' } });
    const invite = await api<{ token: string }>('/v1/repos/acme/invite-keys', alice.session, { method: 'POST', json: {} });
    await api('/v1/repos/join', bob.session, { method: 'POST', json: { key: invite.token } });
    await push(
      alice,
      'acme',
      [
        { path: 'wiki/concepts/storage.md', content: STORAGE },
        { path: 'wiki/entities/postgres.md', content: '---\ntype: entity\ntitle: PostgreSQL\nsummary: The relational database.\n---\nRows.\n' },
        { path: 'wiki/concepts/cache.md', content: '---\ntype: concept\ntitle: Caching\n---\nIdea.\n' },
        { path: 'wiki/analyses/cache.md', content: '---\ntype: analysis\ntitle: Cache hit rates\n---\nNumbers.\n' },
        { path: 'notes/readme.md', content: 'Loose notes, no frontmatter.\n' },
      ],
      'First pages',
    );
    await push(alice, 'acme', [{ path: 'wiki/entities/postgres.md', content: '---\ntype: entity\ntitle: PostgreSQL\nsummary: The relational database.\n---\nRows and columns.\n' }], 'Columns too');
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'empty' } });
    // Violations of the Content-Security-Policy, counted in the page itself.
    await page.addInitScript(() => {
      const w = window as unknown as { __csp?: string[] };
      if (w.__csp) return;
      const seen: string[] = [];
      w.__csp = seen;
      document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push({ text: m.text(), url: m.location().url });
    });
    page.on('pageerror', (e) => consoleErrors.push({ text: String(e), url: '' }));
    await h.signInWithToken(alice.pat);
  }, 180_000);

  afterAll(async () => {
    await h?.close();
    await new Promise<void>((ok) => (tracker ? tracker.close(() => ok()) : ok()));
  });

  it('serves a Content-Security-Policy: no inline or remote script, the API and the provider for connections, no framing', async () => {
    const res = await fetch(`${h.dash.url}/`);
    const api = new URL(h.srv.url).origin;
    const issuer = new URL(h.op.issuer).origin;
    expect(res.headers.get('content-security-policy')).toBe(
      `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:; media-src 'self' data: blob: https:; connect-src 'self' ${api} ${issuer}; font-src 'self'; object-src 'none'; frame-src 'none'; worker-src 'none'; base-uri 'none'; form-action 'self' http://127.0.0.1:*; frame-ancestors 'none'`,
    );
    // The same floor in the page itself, for any static host; nothing inline in the build's index.html.
    const html = await res.text();
    const meta = /<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(html);
    expect(meta?.[1]).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:; media-src 'self' data: blob: https:; connect-src 'self' https: http:; font-src 'self'; object-src 'none'; frame-src 'none'; worker-src 'none'; base-uri 'none'; form-action 'self' http://127.0.0.1:*",
    );
    expect([...html.matchAll(/<script\b[^>]*>/g)].every((m) => /\bsrc="\.\/assets\//.test(m[0]))).toBe(true);
    expect(html).not.toMatch(/<style\b|\sstyle="|\son[a-z]+=/i);

    // In the browser: an inline script is refused (and reported), the build's own code runs.
    await go('#/');
    await heading('Repositories').waitFor();
    const ran = await page.evaluate(async () => {
      const s = document.createElement('script');
      s.textContent = 'window.__inline = 1';
      document.head.append(s);
      await new Promise((r) => setTimeout(r, 50));
      return (window as unknown as { __inline?: number }).__inline ?? null;
    });
    expect(ran).toBeNull();
    // Refused by both policies, the header's and the meta tag's: each reports it.
    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual(['script-src-elem inline', 'script-src-elem inline']);
  });

  it('renders [[slug]], [[type/slug]], [[slug|text]] and relative links as links to the page; marks unresolved and ambiguous ones', async () => {
    await go('#/repo/acme/page/wiki/concepts/storage.md');
    await heading('Storage').waitFor();
    const article = page.locator('article.markdown');
    await article.waitFor();
    const link = (name: string) => article.getByRole('link', { name, exact: true });
    expect(await link('postgres').getAttribute('href')).toBe('#/repo/acme/page/wiki/entities/postgres.md');
    expect(await link('the database').getAttribute('href')).toBe('#/repo/acme/page/wiki/entities/postgres.md');
    expect(await link('the notes').getAttribute('href')).toBe('#/repo/acme/page/notes/readme.md');
    expect(await link('analysis/cache').getAttribute('href')).toBe('#/repo/acme/page/wiki/analyses/cache.md');
    // Unresolved: marked, and a link to write the page (its type known from the path when there is one).
    const missing = article.getByRole('link', { name: 'missing-page (no such page yet: create it)' });
    expect(await missing.getAttribute('href')).toBe('#/repo/acme/new?slug=missing-page');
    expect(await missing.getAttribute('class')).toBe('wikilink unresolved');
    const gone = article.getByRole('link', { name: 'gone (no such page yet: create it)' });
    expect(await gone.getAttribute('href')).toBe('#/repo/acme/new?type=entity&slug=gone');
    // Ambiguous: a slug under two types is no link, and says which pages it could be.
    const cache = article.locator('.wikilink.ambiguous');
    expect(await cache.textContent()).toBe('cache (ambiguous: wiki/concepts/cache.md or wiki/analyses/cache.md)');
    expect(await cache.evaluate((el) => el.tagName)).toBe('SPAN');
    // Code stays code.
    expect(await article.locator('code').textContent()).toBe('[[in code]]');
    await noSeriousAxe('a page with links');
    await h.shot('page-links');

    await link('the database').click();
    await heading('PostgreSQL').waitFor();
    await go('#/repo/acme/page/wiki/concepts/storage.md');
    await article.getByRole('link', { name: /^missing-page/ }).click();
    await heading('New page in acme').waitFor();
    expect(await page.getByLabel('Slug').inputValue()).toBe('missing-page');
  });

  it('lists the pages that link here ("Linked from"), by title', async () => {
    await go('#/repo/acme/page/wiki/entities/postgres.md');
    await heading('PostgreSQL').waitFor();
    const panel = page.getByRole('list', { name: 'Pages that link here' });
    await panel.waitFor();
    expect(await panel.getByRole('link').allTextContents()).toEqual(['Storage']);
    await noSeriousAxe('a page linked from another');
    await h.shot('page-linked-from');
    await panel.getByRole('link', { name: 'Storage' }).click();
    await heading('Storage').waitFor();
    // A page no page links to: the panel says so, from the route's empty `incoming`.
    const linked = page.getByRole('region', { name: 'Linked from' });
    await linked.getByText('No page links here.').waitFor();
    expect(await linked.getByRole('list').count()).toBe(0);
    expect((await api<{ incoming: unknown[] }>('/v1/repos/acme/links/wiki/concepts/storage.md', alice.session)).incoming).toEqual([]);

    // A missing page: the page's own error, and no links panel (the route is not asked: its 404 would say nothing more).
    const asked: string[] = [];
    const onRequest = (r: { url(): string }) => void asked.push(r.url());
    page.on('request', onRequest);
    try {
      await go(`#/repo/acme/page/${MISSING}`);
      await page.getByRole('alert').filter({ hasText: 'page not found' }).waitFor();
      await page.getByRole('heading', { name: 'History' }).waitFor();
      await expect.poll(() => page.locator('.loading').count()).toBe(0);
    } finally {
      page.off('request', onRequest);
    }
    expect(await page.getByRole('heading', { name: 'Linked from' }).count()).toBe(0);
    expect(asked.filter((u) => u.includes('/links/'))).toEqual([]);
    const res = await h.srv.api(`/v1/repos/acme/links/${MISSING}`, { token: alice.session });
    expect([res.status, await res.json()]).toEqual([404, { error: 'page not found', code: 'page_not_found' }]);
  });

  it('keeps page text inert and private: no class, id, style or role; remote media wait for the reader; outside links open apart', async () => {
    const t = `//127.0.0.1:${trackerPort}`;
    const hostile = `---
title: Hostile
---
<p class="error" role="alert" id="app" style="position:fixed;top:0" aria-live="assertive" data-x="1" tabindex="1">Your session expired: sign in again</p>

![pixel](http:${t}/md.png)

<img src="${t}/img.png" alt="tracking pixel">

<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" srcset="${t}/srcset.png 2x" alt="inline">

<video src="${t}/v.mp4" poster="${t}/poster.png"></video>

<audio><source src="${t}/a.mp3"></audio>

<table background="${t}/bg.png"><tr><td background="${t}/td.png">cell</td></tr></table>

[elsewhere](//evil.example/path), [plain](https://example.com/) and <a href="https:evil.example/x" download>no slashes</a>
`;
    await push(alice, 'acme', [{ path: 'notes/hostile.md', content: hostile }], 'Hostile');
    const before = connections.length;
    // Requests under way, but the repository's event stream (which stays open while the page is shown).
    const inFlight = new Set<unknown>();
    const started = (r: { url(): string }) => void (!/\/v1\/repos\/[^/]+\/events(\?|$)/.test(r.url()) && inFlight.add(r));
    const ended = (r: unknown) => void inFlight.delete(r);
    await page.goto('about:blank');
    page.on('request', started);
    page.on('requestfinished', ended);
    page.on('requestfailed', ended);
    await go('#/repo/acme/page/notes/hostile.md');
    await heading('Hostile').waitFor();
    const article = page.locator('article.markdown');
    await article.getByText('Your session expired').waitFor();
    // Nothing of the page's own attributes that could dress it up as the app, or take focus.
    expect(await article.locator('[role], [id], [style], [aria-live], [data-x], [tabindex], [background], [srcset], [download]').count()).toBe(0);
    const classes = await article.locator('[class]').evaluateAll((els) => els.map((e) => e.className));
    expect(classes.every((c) => ['media-blocked'].includes(c))).toBe(true);
    expect(await page.getByRole('alert').count()).toBe(0);
    // The remote media are buttons naming the host; the http one can only be opened apart.
    const host = `127.0.0.1:${trackerPort}`;
    const buttons = article.getByRole('button');
    expect(await buttons.allTextContents()).toEqual([`Load image “tracking pixel” from ${host}`, `Load video from ${host}`, `Load audio from ${host}`]);
    expect(await article.locator('span.media-blocked').textContent()).toBe(`The image “pixel” from ${host} is not loaded (not a secure address): open it in a new tab`);
    expect(await article.locator('img').evaluateAll((imgs) => imgs.map((i) => i.getAttribute('src')))).toEqual(['data:image/gif;base64,R0lGODlhAQABAAAAACw=']);
    // Links out of the page: a new tab, without this window or the address it came from.
    for (const name of ['elsewhere', 'plain', 'no slashes']) {
      const a = article.getByRole('link', { name, exact: true });
      expect(await a.getAttribute('target')).toBe('_blank');
      expect(await a.getAttribute('rel')).toBe('noopener noreferrer');
    }
    await page.waitForLoadState('load');
    await expect.poll(() => inFlight.size).toBe(0);
    page.off('request', started);
    page.off('requestfinished', ended);
    page.off('requestfailed', ended);
    expect(connections.length - before).toBe(0);
    await noSeriousAxe('untrusted page text');
    await h.shot('page-untrusted');

    // The reader asks for one image: that one, and only that one, is fetched (over https).
    await buttons.first().click();
    await expect.poll(() => connections.length - before).toBeGreaterThan(0);
    expect(await article.locator('img').evaluateAll((imgs) => imgs.map((i) => i.getAttribute('src')))).toEqual([`https://${host}/img.png`, 'data:image/gif;base64,R0lGODlhAQABAAAAACw=']);
    expect(await article.getByRole('button').count()).toBe(2);
    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
  });

  it('renders a page of inline handlers and <base> inert, with nothing refused or logged: the console stays clean', async () => {
    const hostile = `---
title: Handlers
---
Before.

<img src=x onerror=alert(1)> <img src="https://example.com/i.png" ONERROR="window.__pwned='img'">

<base href=//evil.example/> <BASE HREF="https://evil.example/">

<a onclick="window.__pwned='a'" href="readme.md">clicky</a> <a href="https://example.com/" onmouseover=alert(2)>hover</a>

<svg onload="window.__pwned='svg'"><circle r="4" onclick="alert(3)"></circle></svg>

<details open ontoggle=alert(4)><summary>more</summary>inside</details>

<p onpointerenter=alert(5) title="onclick=kept as text">After.</p>

<div><body onload=alert(6)>body</body></div>
`;
    await push(alice, 'acme', [{ path: 'notes/handlers.md', content: hostile }], 'Handlers');
    const logged: string[] = [];
    const onConsole = (m: { type(): string; text(): string }) => void (m.type() !== 'debug' && logged.push(`${m.type()}: ${m.text()}`));
    page.on('console', onConsole);
    try {
      await page.goto('about:blank');
      await go('#/repo/acme/page/notes/handlers.md');
      await heading('Handlers').waitFor();
      const article = page.locator('article.markdown');
      await article.getByText('After.').waitFor();
      await article.getByText('inside').waitFor();
      // Inert: no handler, no <base>, and the links and text are there.
      expect(await article.locator('[onerror], [onclick], [onload], [onmouseover], [ontoggle], [onpointerenter], base').count()).toBe(0);
      expect(await page.locator('base').count()).toBe(0);
      expect(await article.getByRole('link', { name: 'clicky' }).getAttribute('href')).toBe('#/repo/acme/page/notes/readme.md');
      expect(await article.getByRole('link', { name: 'hover' }).getAttribute('href')).toBe('https://example.com/');
      expect(await article.locator('p[title]').getAttribute('title')).toBe('onclick=kept as text');
      await article.getByRole('link', { name: 'clicky' }).hover();
      await article.getByRole('link', { name: 'hover' }).hover();
      await page.waitForLoadState('load');
      expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
      // Nothing refused by the Content-Security-Policy, nothing in the console.
      expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
      expect(logged).toEqual([]);
    } finally {
      page.off('console', onConsole);
    }
  });

  it('shows titles with their summaries in lists, and the exact command that starts an empty repository', async () => {
    await go('#/repo/acme');
    await heading('acme').waitFor();
    const concepts = page.locator('section.group').filter({ has: page.getByRole('heading', { name: /^Concepts/ }) });
    await concepts.getByRole('link', { name: 'Storage' }).waitFor();
    // Titles come with the list's second request: waited for, not read at once.
    await concepts.getByRole('link', { name: 'Caching' }).waitFor();
    expect(await concepts.locator('li .title').allTextContents()).toEqual(['Caching', 'Storage']);
    expect(await concepts.locator('li').filter({ hasText: 'Storage' }).locator('.summary').textContent()).toBe('Where the pages live.');
    // A page without a title keeps its file name.
    await page.locator('section.group').filter({ has: page.getByRole('heading', { name: /^Other/ }) }).getByRole('link', { name: 'readme' }).waitFor();
    await noSeriousAxe('the repository');
    await h.shot('repository-titles');
    await fits375('repository-titles');

    await go('#/repo/empty');
    await heading('empty').waitFor();
    await page.getByText('This repository has no pages yet.').waitFor();
    expect(await page.locator('pre.command').textContent()).toBe('kr init --repo empty');
    await noSeriousAxe('an empty repository');
    await h.shot('repository-empty');
  });

  it('links every history entry to its diff, the first one to the diff that created the page', async () => {
    await go('#/repo/acme/page/wiki/entities/postgres.md');
    const history = page.getByRole('heading', { name: 'History' }).locator('xpath=..').getByRole('listitem');
    await history.nth(1).waitFor();
    expect(await history.getByRole('link').allTextContents()).toEqual(['Columns too', 'First pages']);
    await history.getByRole('link', { name: 'First pages' }).click();
    await heading('Changes to PostgreSQL').waitFor();
    const summary = page.locator('.diff > p[role=status]');
    await summary.waitFor();
    expect(await summary.textContent()).toMatch(/^From the empty page to [0-9a-f]{7}: 1 of 1 section changed, 3 frontmatter changes\.$/);
    expect(await page.locator('section.section.status-added .line.add').textContent()).toContain('+ Rows.');
    await go('#/repo/acme/page/wiki/entities/postgres.md');
    await history.getByRole('link', { name: 'Columns too' }).click();
    await heading('Changes to PostgreSQL').waitFor();
    await page.locator('section.section.status-modified').waitFor();
  });

  it('searches every repository from the header', async () => {
    await push(alice, 'other', [{ path: 'wiki/concepts/rows.md', content: '---\ntitle: Rows elsewhere\n---\nRows in another repository.\n' }], 'other');
    await go('#/');
    await heading('Repositories').waitFor();
    const box = page.getByRole('searchbox', { name: 'Search every repository' });
    await box.fill('rows');
    await box.press('Enter');
    await heading('Search: rows').waitFor();
    const results = page.getByRole('list', { name: 'Search results' }).getByRole('listitem');
    await results.first().waitFor();
    const found = await results.evaluateAll((lis) => lis.map((li) => [li.querySelector('a')?.textContent, li.querySelector('.badge')?.textContent]));
    expect(found.sort()).toEqual([
      ['PostgreSQL', 'acme'],
      ['Rows elsewhere', 'other'],
    ]);
    expect(page.url()).toBe(`${h.dash.url}/#/search?q=rows`);
    await noSeriousAxe('the search');
    await h.shot('search-all');
    await fits375('search-all');
    await results.getByRole('link', { name: 'Rows elsewhere' }).click();
    await heading('Rows elsewhere').waitFor();
  });

  it('marks the token the tab signed in with', async () => {
    await go('#/tokens');
    await heading('Personal access tokens').waitFor();
    const table = page.getByRole('table', { name: 'Your personal access tokens' });
    const current = table.getByRole('row').filter({ hasText: 'in use by this tab' });
    await current.waitFor();
    expect(await current.count()).toBe(1);
    expect(await current.textContent()).toContain('alice in the browser');
    await noSeriousAxe('the tokens');
  });

  it('exports a repository and deletes it after its id is typed', async () => {
    await push(alice, 'doomed', [{ path: 'wiki/concepts/x.md', content: 'x\n' }], 'doomed');
    await go('#/repo/doomed/settings');
    await heading('Settings of doomed').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the export' }).click()]);
    expect(download.suggestedFilename()).toBe('doomed.bundle');
    const bundle = await readFile((await download.path())!);
    expect(bundle.subarray(0, 16).toString()).toBe('# v2 git bundle\n');
    await page.getByRole('status').filter({ hasText: 'Downloaded doomed.bundle' }).waitFor();
    await noSeriousAxe('the settings');
    await h.shot('settings');
    await fits375('settings');

    // The button stays disabled (aria-disabled, still focusable) until the id is typed; submitting anyway says why.
    const confirm = page.getByLabel('Type doomed to confirm');
    expect(await page.getByRole('button', { name: 'Delete repository' }).getAttribute('aria-disabled')).toBe('true');
    await confirm.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Type doomed exactly to confirm.' }).waitFor();
    await confirm.fill('doome');
    await confirm.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Type doomed exactly to confirm.' }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('confirm-delete');
    expect((await api<{ repos: { id: string }[] }>('/v1/repos', alice.session)).repos.map((r) => r.id)).toContain('doomed');
    await confirm.fill('doomed');
    expect(await page.getByRole('button', { name: 'Delete repository' }).getAttribute('aria-disabled')).toBeNull();
    await page.getByRole('button', { name: 'Delete repository' }).click();
    await heading('Repositories').waitFor();
    await page.getByRole('status').filter({ hasText: 'Deleted the repository doomed' }).waitFor();
    expect((await api<{ repos: { id: string }[] }>('/v1/repos', alice.session)).repos.map((r) => r.id)).not.toContain('doomed');
    expect(await page.getByRole('link', { name: 'doomed', exact: true }).count()).toBe(0);
  });

  it('a member is offered neither export nor deletion', async () => {
    await h.signInWithToken(bob.pat);
    await go('#/repo/acme/settings');
    await heading('Settings of acme').waitFor();
    await page.getByText('You are a member of this repository. Only an owner can export or delete it.').waitFor();
    expect(await page.getByRole('button').filter({ hasText: /export|Delete/ }).count()).toBe(0);
    await h.signInWithToken(alice.pat);
  });

  it("changes a member's role: make owner, then back to member after a confirm step", async () => {
    await go('#/repo/acme/team');
    await heading('Team of acme').waitFor();
    const members = page.getByRole('table', { name: 'Members of acme' });
    const bobRow = members.getByRole('row').filter({ hasText: 'bob@example.com' });
    await bobRow.getByRole('button', { name: 'Make owner bob@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'bob@example.com is now an owner.' }).waitFor();
    const roles = async () => (await api<{ members: { email: string; role: string }[] }>('/v1/repos/acme/members', alice.session)).members.map((m) => [m.email, m.role]);
    expect(await roles()).toEqual([
      ['alice@example.com', 'owner'],
      ['bob@example.com', 'owner'],
    ]);
    await noSeriousAxe('the team with two owners');
    await bobRow.getByRole('button', { name: 'Make member bob@example.com' }).click();
    await page.getByRole('button', { name: 'Yes, make member bob@example.com' }).click();
    await page.getByRole('status').filter({ hasText: 'bob@example.com is now a member.' }).waitFor();
    expect(await roles()).toEqual([
      ['alice@example.com', 'owner'],
      ['bob@example.com', 'member'],
    ]);
    // The last owner is offered no way to step down.
    await expect.poll(() => members.getByRole('button', { name: /^Make member/ }).count()).toBe(0);
  });

  it('fits 375 px on a page with links', async () => {
    await go('#/repo/acme/page/wiki/concepts/storage.md');
    await page.locator('article.markdown').waitFor();
    await fits375('page-links');
  });

  it('logged no console error but the inline script it tried, an image the reader asked for from a server that is not one, and the missing page', () => {
    const unexpected = consoleErrors.filter(
      (e) =>
        !(e.url.endsWith(`/v1/repos/acme/pages/${MISSING}`) && e.text.includes('404')) &&
        !e.url.startsWith(`https://127.0.0.1:${trackerPort}/`) &&
        !e.text.startsWith('Executing inline script violates'), // the test's own, refused
    );
    expect(unexpected).toEqual([]);
  });
});

