/**
 * Live events in the dashboard, in real Chromium (test/helpers/dashboard.ts) against the real server's event
 * stream (docs/api.md "Live events"): pushes by another client reach the activity view without a reload, an open
 * page says it changed on the server with a working link to the diff, the editor says that saving will merge,
 * merged pushes are marked (activity feed, live and loaded, and the page's history), and a member removed
 * meanwhile sees why the updates stopped. Each new view: axe-core, 375 px, a screenshot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { DECISION_V1, hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard-live.test.ts');

const LOG = 'wiki/concepts/decision-log.md';

describe.skipIf(!hasChromium)('live events in the dashboard', () => {
  let h: DashboardHarness;
  let page: Page;
  let alice: SignedUp;
  let bob: SignedUp;
  let carol: SignedUp;
  const consoleErrors: { text: string; url: string }[] = [];

  const api = async <T,>(path: string, token: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await h.srv.api(path, { ...init, token });
    const text = await res.text();
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${text}`).toBeLessThan(300);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  type Pushed = { new_head: string; pushed: { path: string; sha: string; merged?: true }[] };
  const push = async (who: SignedUp, files: { path: string; content?: string; parent_sha?: string; delete?: true }[], message: string, merge?: 'sections') =>
    api<Pushed>('/v1/repos/acme/sync/push', who.session, { method: 'POST', json: { message, files, ...(merge ? { merge } : {}) } });
  const serverPage = async (path: string) => {
    const res = await h.srv.api(`/v1/repos/acme/pages/${path}`, { token: alice.session });
    expect(res.status).toBe(200);
    return { text: await res.text(), sha: res.headers.get('x-page-sha')! };
  };
  /** A fresh document at `hash` (another hash of the same document would keep its stream open). */
  const go = async (hash: string) => {
    await page.goto('about:blank');
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
  /** A mark on the document: still there afterwards means the view changed without a reload. */
  const markDocument = () => page.evaluate(() => void ((window as unknown as { __same?: boolean }).__same = true));
  const sameDocument = () => page.evaluate(() => (window as unknown as { __same?: boolean }).__same === true);
  /** Resolves once a view's event stream has answered 200 (call it before the view opens). */
  const streamOpen = () => page.waitForResponse((r) => /\/v1\/repos\/acme\/events(\?|$)/.test(r.url()) && r.status() === 200);
  const feedItems = () => page.getByRole('list', { name: 'Events, newest first' }).getByRole('listitem');

  beforeAll(async () => {
    h = await startDashboard();
    page = h.page;
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    carol = await h.signUp('carol', 'Carol');
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'acme' } });
    for (const who of [bob, carol]) {
      const invite = await api<{ token: string }>('/v1/repos/acme/invite-keys', alice.session, { method: 'POST', json: {} });
      await api('/v1/repos/join', who.session, { method: 'POST', json: { key: invite.token } });
    }
    await push(alice, [{ path: LOG, content: DECISION_V1 }], 'Decision log');
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push({ text: m.text(), url: m.location().url });
    });
    page.on('pageerror', (e) => consoleErrors.push({ text: String(e), url: '' }));
    await h.signInWithToken(alice.pat);
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  it('activity: a push by another client shows at the top without a reload; a merged one is marked, live and once loaded', async () => {
    const opened = streamOpen();
    await go('#/repo/acme/activity');
    await heading('Activity in acme').waitFor();
    await opened;
    await page.getByText('Live: new pushes appear at the top as they happen.').waitFor();
    // Alice's push and, before it, Bob and Carol joining.
    await expect.poll(() => feedItems().count()).toBe(3);
    await markDocument();

    const start = await serverPage(LOG);
    const first = await push(bob, [{ path: LOG, content: start.text.replace('Use git.', 'Use git and SQLite.') }], 'SQLite');
    await feedItems().filter({ hasText: 'SQLite' }).waitFor();
    expect(await feedItems().count()).toBe(4);
    const top = feedItems().first();
    expect(await top.locator('.title').textContent()).toBe('bob@example.com');
    expect(await top.locator('.badge').allTextContents()).toEqual(['pushed', 'new']);
    expect(await top.locator('.message').textContent()).toBe('SQLite');
    expect(await top.getByRole('link').allTextContents()).toEqual([LOG]);
    await page.getByRole('status').filter({ hasText: 'Events 1–4 of 4' }).waitFor();
    // Counted in the chart too: today's pushes by bob.
    expect(await page.locator('table').filter({ hasText: 'bob@example.com' }).count()).toBe(1);

    // Carol saves from the version before Bob's, another section: the server merges it.
    const merged = await push(carol, [{ path: LOG, content: start.text.replace('Nobody reads it.', 'Everybody reads it.'), parent_sha: start.sha }], 'Risks', 'sections');
    expect(merged.pushed[0]!.merged).toBe(true);
    const carols = feedItems().filter({ hasText: 'carol@example.com' }).filter({ has: page.locator('.message', { hasText: 'Risks' }) });
    await carols.waitFor();
    expect(await feedItems().first().locator('.title').textContent()).toBe('carol@example.com');
    expect(await carols.locator('.badge').allTextContents()).toEqual(['pushed', 'merged', 'new']);
    expect(await carols.locator('.merged-paths').textContent()).toBe(`Merged section by section with changes made meanwhile:${LOG}`);
    expect(await sameDocument()).toBe(true);
    await noSeriousAxe('the activity with live pushes');
    await h.shot('activity-live');
    await fits375('activity-live');

    // Loaded afresh, the feed marks the merge from the push's activity detail.
    await page.reload();
    await heading('Activity in acme').waitFor();
    await expect.poll(() => feedItems().count()).toBe(5);
    expect(await feedItems().first().locator('.badge').allTextContents()).toEqual(['pushed', 'merged']);
    expect(await feedItems().nth(1).locator('.badge').allTextContents()).toEqual(['pushed']);
    expect(first.new_head).not.toBe(merged.new_head);
  });

  it("a page's history marks the commit that merged it", async () => {
    const commits = (await api<{ commits: { sha: string; message: string }[] }>(`/v1/repos/acme/history/${LOG}`, alice.session)).commits;
    expect(commits.map((c) => c.message)).toEqual(['Risks', 'SQLite', 'Decision log']);
    await go(`#/repo/acme/page/${LOG}`);
    const history = page.getByRole('heading', { name: 'History' }).locator('xpath=..').getByRole('listitem');
    await history.nth(2).waitFor();
    await history.first().locator('.badge.merged').waitFor();
    expect(await history.locator('.badge.merged').count()).toBe(1);
    expect(await history.first().locator('code').getAttribute('title')).toBe(commits[0]!.sha);
    await page.getByText('Merged: the change was saved on top of changes made meanwhile').waitFor();
    await noSeriousAxe('a page with a merged commit');
  });

  it('an open page says when it changed on the server, by whom, with a link to the diff from the version shown', async () => {
    const opened = streamOpen();
    await go(`#/repo/acme/page/${LOG}`);
    await page.locator('article.markdown').getByText('Everybody reads it.').waitFor();
    await opened;
    const shown = await serverPage(LOG);
    await markDocument();

    const next = await push(bob, [{ path: LOG, content: shown.text.replace('Why we decide the way we do.', 'Why and how we decide.') }], 'Why and how');
    const notice = page.locator('.note.changed');
    await notice.getByText('This page changed on the server (by Bob).').waitFor();
    expect(await notice.getAttribute('role')).toBe('status');
    // The page shown stays as it was until the reader asks.
    expect(await page.locator('article.markdown').textContent()).toContain('Why we decide the way we do.');
    const diff = notice.getByRole('link', { name: 'See what changed' });
    expect(await diff.getAttribute('href')).toBe(`#/repo/acme/diff/${LOG}?from=${shown.sha}&to=${next.new_head}`);
    expect(await sameDocument()).toBe(true);
    await noSeriousAxe('a page changed on the server');
    await h.shot('page-changed-on-server');
    await fits375('page-changed-on-server');

    // A second change: both authors named, the link reaching the newest.
    const last = await push(carol, [{ path: LOG, content: (await serverPage(LOG)).text.replace('Everybody reads it.', 'Everybody reads it, often.') }], 'Often');
    await notice.getByText('This page changed on the server (by Bob and Carol).').waitFor();
    expect(await diff.getAttribute('href')).toBe(`#/repo/acme/diff/${LOG}?from=${shown.sha}&to=${last.new_head}`);

    await diff.click();
    await heading('Changes to decision-log').waitFor();
    const summary = page.locator('.diff > p[role=status]');
    await summary.waitFor();
    expect(await summary.textContent()).toMatch(new RegExp(`^From ${shown.sha.slice(0, 7)} to ${last.new_head.slice(0, 7)}: `));
    const added = (await page.locator('.line.add').allTextContents()).join('\n');
    expect(added).toContain('Why and how we decide.');
    expect(added).toContain('Everybody reads it, often.');

    // Back on the page: "Show the new version" reads it afresh, and the notice goes.
    await go(`#/repo/acme/page/${LOG}`);
    await page.locator('article.markdown').getByText('Everybody reads it, often.').waitFor();
    expect(await notice.count()).toBe(0);
  });

  it('an open page offers the new version once it changed; a push that does not name it says nothing', async () => {
    const opened = streamOpen();
    await go(`#/repo/acme/page/${LOG}`);
    await page.locator('article.markdown').getByText('Everybody reads it, often.').waitFor();
    await opened;
    // Carol's push names another page: the notice that follows names Bob alone.
    await push(carol, [{ path: 'notes/other.md', content: 'Other.\n' }], 'Other page');
    const current = await serverPage(LOG);
    await push(bob, [{ path: LOG, content: current.text.replace('Use git and SQLite.', 'Use git, SQLite and nothing else.') }], 'Nothing else');
    const notice = page.locator('.note.changed');
    await notice.getByText('This page changed on the server (by Bob).').waitFor();
    await notice.getByRole('button', { name: 'Show the new version' }).click();
    await page.locator('article.markdown').getByText('Use git, SQLite and nothing else.').waitFor();
    await expect.poll(() => notice.count()).toBe(0);
  });

  it('the editor with unsaved changes says that saving will merge; the save says it merged', async () => {
    const opened = streamOpen();
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    await opened;
    const start = await serverPage(LOG);
    await page.locator('.cm-line').filter({ hasText: /^Everybody reads it, often\.$/ }).click();
    await page.keyboard.press('End');
    await page.keyboard.type(' Really.');
    await page.getByText('Unsaved changes are kept in this browser').waitFor();

    const theirs = await push(carol, [{ path: LOG, content: start.text.replace('Why and how we decide.', 'Why we decide.') }], 'Shorter');
    const notice = page.locator('.note.changed');
    await notice.getByText('This page changed on the server (by Carol) since you started editing.').waitFor();
    expect(await notice.textContent()).toContain('Saving will merge your changes with it, section by section');
    expect(await notice.getByRole('link', { name: 'See what changed' }).getAttribute('href')).toBe(`#/repo/acme/diff/${LOG}?from=${start.sha}&to=${theirs.new_head}`);
    await noSeriousAxe('the editor told of a change on the server');
    await h.shot('edit-changed-on-server');
    await fits375('edit-changed-on-server');

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'were merged with yours' }).waitFor();
    const now = (await serverPage(LOG)).text;
    expect(now).toBe(start.text.replace('Why and how we decide.', 'Why we decide.').replace('Everybody reads it, often.', 'Everybody reads it, often. Really.'));
    // The save was alice's own: the page view it leads to has no notice.
    await heading('decision-log').waitFor();
    expect(await page.locator('.note.changed').count()).toBe(0);
  });

  it('the editor without unsaved changes starts again from the new version', async () => {
    const opened = streamOpen();
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    await opened;
    const start = await serverPage(LOG);
    await push(bob, [{ path: LOG, content: start.text.replace('Why we decide.', 'Why we decide, briefly.') }], 'Briefly');
    const notice = page.locator('.note.changed');
    await notice.getByText('This page changed on the server (by Bob) since you started editing.').waitFor();
    await notice.getByRole('button', { name: 'Edit the new version' }).click();
    await page.locator('.cm-line').filter({ hasText: /^Why we decide, briefly\.$/ }).waitFor();
    await expect.poll(() => notice.count()).toBe(0);
  });

  it('a member removed while the view is open is told why the live updates stopped', async () => {
    await h.signInWithToken(carol.pat);
    const opened = streamOpen();
    // The chart's and the feed's loads must be answered before the removal: one the server reads after it
    // is refused (403), rightly, and the browser logs that refusal.
    const loaded = (limit: number) =>
      page.waitForResponse((r) => r.url().includes(`/v1/repos/acme/activity?limit=${limit}&offset=0`) && r.status() === 200);
    const feedLoaded = loaded(20); // the feed's page (FEED_PAGE in dashboard/src/activity.tsx)
    const chartLoaded = loaded(500); // the chart's events (CHART_EVENTS)
    await go('#/repo/acme/activity');
    await heading('Activity in acme').waitFor();
    await Promise.all([opened, feedLoaded, chartLoaded]);
    await page.getByText('Live: new pushes appear at the top as they happen.').waitFor();
    await api(`/v1/repos/acme/members/${carol.id}`, alice.session, { method: 'DELETE' });
    await page.getByRole('status').filter({ hasText: 'Live updates stopped. Removed from this repo.' }).waitFor();
    await noSeriousAxe('live updates stopped');
    await h.signInWithToken(alice.pat);
  });

  it('logged no console error', () => {
    expect(consoleErrors).toEqual([]);
  });
});
