/**
 * The dashboard's activity feed and chart, a page's evolution timeline, and the hosted build's plan and billing
 * and admin pages, in real Chromium (test/helpers/dashboard.ts): a hosted server with Alice as admin, Bob a
 * member of her repository, Carol with nothing. Every view gets an axe-core pass and a screenshot
 * (test-artifacts/dashboard/), and is checked at 375 px. The views shown come from GET /v1/me: a second,
 * self-hosted server shows no billing and is never asked for it, and a third one, whose SERVICE_CORS_ORIGINS
 * leaves the dashboard out, gets a sign-in message naming the origin and the variable.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DECISION_V1,
  DECISION_V2,
  DECISION_V3,
  hasChromium,
  startDashboard,
  warnIfNoChromium,
  type DashboardHarness,
  type SignedUp,
} from './helpers/dashboard.ts';
import { startTestServer, type TestServer } from './helpers/env.ts';

warnIfNoChromium('test/dashboard-views.test.ts');

const CHECKOUT = 'https://pay.example.test/checkout?plan=pro';

const DECISION = 'wiki/concepts/decision.md';
const NOTES = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].map((n) => `notes/${n}.md`);
/** Single-file pushes to acme after the first four, alternating Alice (even) and Bob (odd). */
const LOG_PUSHES = 19;
/** Commits of beta's log.md: more than the evolution view's first 50. */
const BETA_COMMITS = 52;

interface Event {
  email: string;
  action: string;
  created_at: number;
}

describe.skipIf(!hasChromium)('dashboard views: activity, evolution, billing, admin', () => {
  let h: DashboardHarness;
  let alice: SignedUp;
  let bob: SignedUp;
  let carol: SignedUp;
  const decisionShas: string[] = []; // oldest first

  const api = async <T,>(path: string, token: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await h.srv.api(path, { ...init, token });
    expect(res.status, `${init.method ?? 'GET'} ${path}`).toBeLessThan(300);
    return (res.status === 204 ? undefined : await res.json()) as T;
  };
  const push = async (who: SignedUp, repo: string, files: { path: string; content: string }[], message: string) =>
    (await api<{ new_head: string }>(`/v1/repos/${repo}/sync/push`, who.session, { method: 'POST', json: { message, files } })).new_head;

  const go = async (hash: string) => {
    await h.page.goto(`${h.dash.url}/${hash}`);
  };
  const noSeriousAxe = async () => expect(await h.axe()).toEqual([]);
  /** At 375 px the document does not scroll sideways; `ready` waits for the view's data first. */
  const fits375 = async (name: string, ready: () => Promise<unknown>) => {
    await h.page.setViewportSize({ width: 375, height: 800 });
    try {
      await ready();
      expect(await h.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await h.shot(`${name}-375`);
    } finally {
      await h.page.setViewportSize({ width: 1100, height: 800 });
    }
  };
  const texts = (selector: string) => h.page.locator(selector).allTextContents();

  beforeAll(async () => {
    h = await startDashboard({
      env: { SERVICE_HOSTED: '1', SERVICE_ADMIN_EMAILS: 'Alice@example.com', SERVICE_BILLING_CHECKOUT_URL: CHECKOUT },
    });
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    carol = await h.signUp('carol', 'Carol');

    // acme: Alice's, Bob joins with an invite key; a known 3-commit history of one page, then more pushes.
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'acme' } });
    const invite = await api<{ token: string }>('/v1/repos/acme/invite-keys', alice.session, { method: 'POST', json: {} });
    await api('/v1/repos/join', bob.session, { method: 'POST', json: { key: invite.token } });
    decisionShas.push(await push(alice, 'acme', [{ path: DECISION, content: DECISION_V1 }], 'Decision: first draft'));
    decisionShas.push(await push(bob, 'acme', [{ path: DECISION, content: DECISION_V2 }], 'Decision: SQLite, open questions'));
    decisionShas.push(await push(alice, 'acme', [{ path: DECISION, content: DECISION_V3 }], 'Consequences: blame'));
    await push(alice, 'acme', NOTES.map((p) => ({ path: p, content: `# ${p}\n` })), 'Six notes');
    for (let i = 0; i < LOG_PUSHES; i++) {
      await push(i % 2 === 0 ? alice : bob, 'acme', [{ path: 'wiki/log.md', content: `entry ${i}\n` }], `log ${i}`);
    }
    await api('/v1/repos/acme/sync/pull', bob.session, { headers: { 'X-Service-Client': 'kr-test' } });

    // quiet: Carol's, with nothing in it.
    await api('/v1/repos', carol.session, { method: 'POST', json: { id: 'quiet' } });

    // beta: Alice's second repository (created by her first push), one page with many commits.
    for (let i = 0; i < BETA_COMMITS; i++) {
      await push(alice, 'beta', [{ path: 'log.md', content: `line ${i}\n` }], `beta ${i}`);
    }
  });

  afterAll(async () => {
    await h?.close();
  });

  it('activity: the chart of pushes per day by person, its numbers, the feed with paging', async () => {
    const { events, total } = await api<{ events: Event[]; total: number }>('/v1/repos/acme/activity?limit=500', alice.session);
    expect(total).toBe(4 + LOG_PUSHES + 1);
    // Bob's join is the feed's one membership change, listed only when asked for.
    const joins = await api<{ events: Event[]; total: number }>('/v1/repos/acme/activity?actions=member', alice.session);
    expect([joins.total, joins.events.map((e) => [e.email, e.action])]).toEqual([1, [[bob.email, 'member']]]);
    // The expected table, from the server's own timestamps (UTC days).
    const perDay = new Map<string, { alice: number; bob: number }>();
    for (const e of events) {
      if (e.action !== 'push') continue;
      const day = new Date(e.created_at * 1000).toISOString().slice(0, 10);
      const row = perDay.get(day) ?? { alice: 0, bob: 0 };
      row[e.email === alice.email ? 'alice' : 'bob']++;
      perDay.set(day, row);
    }
    const aliceTotal = 3 + LOG_PUSHES / 2 + 0.5; // V1, V3, notes, and the even log pushes
    const bobTotal = 1 + (LOG_PUSHES - 1) / 2;
    expect([aliceTotal, bobTotal]).toEqual([13, 10]);

    await h.signInWithToken(alice.pat);
    // The feed's requests: which actions each asks for.
    const asked: string[] = [];
    const onRequest = (r: { url: () => string }) => {
      const u = new URL(r.url());
      if (u.pathname === '/v1/repos/acme/activity' && u.searchParams.get('limit') === '20') asked.push(u.searchParams.get('actions') ?? '(none)');
    };
    h.page.on('request', onRequest);
    await go('#/repo/acme/activity');
    const chart = h.page.getByRole('img', { name: /^Pushes per day by person/ });
    await chart.waitFor();
    expect(await chart.getAttribute('aria-label')).toBe('Pushes per day by person, last 30 days: 23 pushes by 2 people');
    expect(await chart.locator('rect').count()).toBe([...perDay.values()].reduce((n, r) => n + (r.alice > 0 ? 1 : 0) + (r.bob > 0 ? 1 : 0), 0));
    expect(await texts('.legend li')).toEqual(['alice@example.com (13 pushes)', 'bob@example.com (10 pushes)']);
    const table = h.page.locator('#pushes-table');
    expect(await table.locator('thead th').allTextContents()).toEqual(['Day (UTC)', 'alice@example.com', 'bob@example.com', 'Total']);
    const rows = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    expect(rows).toEqual([...perDay.entries()].sort().map(([d, r]) => [d, String(r.alice), String(r.bob), String(r.alice + r.bob)]));
    expect(await table.locator('tfoot tr').evaluate((tr) => [...tr.children].map((c) => c.textContent))).toEqual(['All days', '13', '10', '23']);
    expect(await h.page.getByText(/Counted from the newest/).count()).toBe(0);

    // The feed, newest first, without pulls unless asked for: the log pushes first (Bob's pull left out), and
    // Bob's join among them.
    const status = h.page.locator('.pager [role="status"]');
    const items = h.page.locator('ol.feed > li');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 24');
    expect(await items.nth(0).innerText()).toMatch(/^alice@example\.com\s+pushed .*\nlog 18\n1 page:\s*wiki\/log\.md$/);
    expect(await h.page.getByText('pulled').count()).toBe(0);
    // With pulls: Bob's pull, then the log pushes; page two ends with the first commit.
    const showPulls = h.page.getByRole('checkbox', { name: 'Show pulls' });
    expect(await showPulls.isChecked()).toBe(false);
    await showPulls.check();
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 25');
    expect(await items.count()).toBe(20);
    h.page.off('request', onRequest);
    expect(asked).toEqual(['push,member,import', 'push,pull,member,import']);
    expect(await items.nth(0).innerText()).toMatch(/^bob@example\.com\s+pulled\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+with kr-test$/);
    // A push shows its commit message (the event's detail.message) above its pages.
    expect(await items.nth(1).innerText()).toMatch(/^alice@example\.com\s+pushed .*\nlog 18\n1 page:\s*wiki\/log\.md$/);
    expect(await h.page.getByRole('button', { name: 'Newer' }).getAttribute('aria-disabled')).toBe('true');
    await noSeriousAxe();
    await h.shot('activity');

    await h.page.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => status.textContent()).toBe('Events 21–25 of 25');
    await expect.poll(() => items.count()).toBe(5);
    expect(await h.page.getByRole('button', { name: 'Older' }).getAttribute('aria-disabled')).toBe('true');
    const notes = items.nth(0);
    expect(await notes.locator('a').allTextContents()).toEqual(NOTES.slice(0, 3));
    expect(await notes.innerText()).toContain('6 pages:');
    expect(await notes.innerText()).toContain('+3 more');
    expect(await items.locator('.title').allTextContents()).toEqual([alice.email, alice.email, bob.email, alice.email, bob.email]);
    // The oldest event: Bob joining, before his first push.
    expect(await items.nth(4).innerText()).toMatch(/^bob@example\.com\s+joined\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    await h.page.getByRole('button', { name: 'Newer' }).click();
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 25');

    await fits375('activity', () => chart.waitFor());

    // A pushed path leads to its page.
    await h.page.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => status.textContent()).toBe('Events 21–25 of 25');
    await items.nth(3).getByRole('link', { name: DECISION }).click();
    await h.page.getByRole('heading', { name: 'decision', level: 1 }).waitFor();
  });

  it('activity: the chart counts only the last 30 UTC days, and says when the newest 500 events do not reach back that far', async () => {
    const DAY = 86_400;
    const today = Math.floor(Date.now() / 1000 / DAY);
    const at = (daysAgo: number) => (today - daysAgo) * DAY + 43_200;
    const ev = (email: string, daysAgo: number, action = 'push') => ({ user_id: email, email, action, created_at: at(daysAgo) });
    const inWindow = [
      ev('ann@example.com', 0),
      ev('ann@example.com', 0),
      ev('ben@example.com', 0),
      ev('cat@example.com', 1),
      ev('ann@example.com', 1, 'pull'),
      ev('ben@example.com', 29),
    ];
    const older = [ev('ann@example.com', 30), ev('ann@example.com', 31)];
    let events = [...inWindow, ...older];
    // The same function unroutes it (a predicate is matched by identity).
    const chartEvents = (u: URL) => u.pathname === '/v1/repos/acme/activity' && u.searchParams.get('limit') === '500';
    await h.page.route(chartEvents, (r) => r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ events, total: 900 }) }));
    try {
      const day = (daysAgo: number) => new Date(at(daysAgo) * 1000).toISOString().slice(0, 10);
      const expectChart = async () => {
        const chart = h.page.getByRole('img', { name: /^Pushes per day by person/ });
        await chart.waitFor();
        expect(await chart.getAttribute('aria-label')).toBe('Pushes per day by person, last 30 days: 5 pushes by 3 people');
        expect(await texts('.legend li')).toEqual(['ann@example.com (2 pushes)', 'ben@example.com (2 pushes)', 'cat@example.com (1 push)']);
        const rows = await h.page.locator('#pushes-table tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
        expect(rows).toEqual([
          [day(29), '0', '1', '0', '1'],
          [day(1), '0', '0', '1', '1'],
          [day(0), '2', '1', '0', '3'],
        ]);
        expect(await h.page.locator('#pushes-table tfoot td').allTextContents()).toEqual(['2', '2', '1', '5']);
      };
      // The fetched events reach past the window: everything in it is counted, no hint.
      await go('#/repo/acme/activity');
      await expectChart();
      expect(await h.page.getByText(/^Counted from the newest 500 events only/).count()).toBe(0);
      // They stop inside it: the hint says older pushes are left out.
      events = inWindow;
      await go('#/repo/acme');
      await h.page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
      await go('#/repo/acme/activity');
      await expectChart();
      await h.page.getByText(/^Counted from the newest 500 events only: older pushes in these 30 days are left out\.$/).waitFor();
      await noSeriousAxe();

      // Nine people: seven series, the last one grey for the three with the fewest pushes (ties by email).
      const nine = Array.from({ length: 9 }, (_, i) => `p${i + 1}@example.com`);
      events = [...nine.map((e) => ev(e, 0)), ev('p1@example.com', 1), ...older];
      await go('#/repo/acme');
      await h.page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
      await go('#/repo/acme/activity');
      const chart = h.page.getByRole('img', { name: /^Pushes per day by person/ });
      await chart.waitFor();
      expect(await chart.getAttribute('aria-label')).toBe('Pushes per day by person, last 30 days: 10 pushes by 9 people');
      expect(await texts('.legend li')).toEqual([
        'p1@example.com (2 pushes)',
        ...nine.slice(1, 6).map((e) => `${e} (1 push)`),
        '3 others (3 pushes)',
      ]);
      expect(await chart.locator('rect').count()).toBe(8); // today: seven series; yesterday: p1
      expect(await h.page.locator('#pushes-table thead th').allTextContents()).toEqual(['Day (UTC)', ...nine, 'Total']);
      expect(await h.page.locator('#pushes-table tfoot td').allTextContents()).toEqual(['2', ...nine.slice(1).map(() => '1'), '10']);
    } finally {
      await h.page.unroute(chartEvents);
    }
  });

  it('activity: the pager works from the keyboard', async () => {
    // A view opened anew leaves pulls out: the 23 pushes and Bob's join.
    await go('#/repo/acme/activity');
    const status = h.page.locator('.pager [role="status"]');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 24');
    await h.page.getByRole('button', { name: 'Newer' }).waitFor();
    await h.page.getByRole('button', { name: 'Older' }).focus();
    await h.page.keyboard.press('Enter');
    await expect.poll(() => status.textContent()).toBe('Events 21–24 of 24');
    expect(await h.page.evaluate(() => document.activeElement?.textContent)).toBe('Older');
    await h.page.keyboard.press('Shift+Tab');
    expect(await h.page.evaluate(() => document.activeElement?.textContent)).toBe('Newer');
    await h.page.keyboard.press('Space');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 24');

    // Another repository's feed starts at its newest events, not at the position left here.
    await h.page.getByRole('button', { name: 'Older' }).click();
    await expect.poll(() => status.textContent()).toBe('Events 21–24 of 24');
    await go('#/repo/beta/activity');
    await expect.poll(() => status.textContent()).toBe(`Events 1–20 of ${BETA_COMMITS}`);
    expect(await h.page.locator('ol.feed > li .paths a').first().textContent()).toBe('log.md');
  });

  it('activity: membership changes read as sentences, among the pushes; what their emails say is shown as text', async () => {
    // Bob made owner and back, Carol joining and removed: acme ends with the members it had.
    const role = (who: SignedUp, r: string) => api(`/v1/repos/acme/members/${who.id}/role`, alice.session, { method: 'POST', json: { role: r } });
    await role(bob, 'owner');
    await role(bob, 'member');
    const invite = await api<{ token: string }>('/v1/repos/acme/invite-keys', alice.session, { method: 'POST', json: {} });
    await api('/v1/repos/join', carol.session, { method: 'POST', json: { key: invite.token } });
    await api(`/v1/repos/acme/members/${carol.id}`, alice.session, { method: 'DELETE' });

    // From the repository's page: the view opens anew, at the newest events.
    await h.signInWithToken(alice.pat);
    await go('#/repo/acme');
    await h.page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    await go('#/repo/acme/activity');
    const status = h.page.locator('.pager [role="status"]');
    const items = h.page.locator('ol.feed > li');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 28');
    const time = '\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC$';
    const sentences = await items.evaluateAll((lis) => lis.slice(0, 4).map((li) => (li as HTMLElement).innerText));
    expect(sentences.map((t) => [t.replace(new RegExp(time), ''), new RegExp(time).test(t)])).toEqual([
      ['alice@example.com removed carol@example.com', true],
      ['carol@example.com joined', true],
      ['alice@example.com made bob@example.com a member', true],
      ['alice@example.com made bob@example.com owner', true],
    ]);
    expect(await items.nth(4).innerText()).toMatch(/^alice@example\.com\s+pushed .*\nlog 18\n/);
    expect(await items.locator('.badge.action-member').allTextContents()).toEqual(['removed', 'joined', 'made', 'made']);
    // The pulls switch adds Bob's pull and leaves the membership changes in.
    await h.page.getByRole('checkbox', { name: 'Show pulls' }).check();
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 29');
    expect(await items.locator('.badge.action-member').count()).toBe(4);
    // Live: a change the event stream announces shows without reloading the view.
    await role(bob, 'owner');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 30');
    expect(await items.nth(0).innerText()).toMatch(/^alice@example\.com\s+made\s+bob@example\.com\s+owner\s+\d{4}-/);
    await role(bob, 'member');
    await expect.poll(() => status.textContent()).toBe('Events 1–20 of 31');
    await noSeriousAxe();
    await h.shot('activity-members');

    // Emails and ids come from users: markup in them is text. An owner removing themselves left.
    const hostile = '<img src=x onerror="window.__pwned=1">@example.com';
    const at = Math.floor(Date.now() / 1000);
    const events = [
      { user_id: 'u1', email: 'eve@example.com', action: 'member', created_at: at, detail: { user_id: 'u1', email: 'eve@example.com', change: 'removed' } },
      { user_id: 'u1', email: 'eve@example.com', action: 'member', created_at: at, detail: { user_id: 'u2', email: hostile, change: 'role', role: 'owner' } },
      { user_id: 'u2', email: hostile, action: 'member', created_at: at, detail: { user_id: 'u2', email: hostile, change: 'joined', role: 'member' } },
    ];
    // The same function unroutes it (a predicate is matched by identity).
    const feedPage = (u: URL) => u.pathname === '/v1/repos/acme/activity' && u.searchParams.get('limit') === '20';
    await h.page.route(feedPage, (r) => r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ events, total: 3 }) }));
    try {
      await go('#/repo/acme');
      await h.page.getByRole('heading', { name: 'acme', level: 1 }).waitFor();
      await go('#/repo/acme/activity');
      await expect.poll(() => status.textContent()).toBe('Events 1–3 of 3');
      const shown = await items.evaluateAll((lis) => lis.map((li) => (li as HTMLElement).innerText));
      expect(shown.map((t) => t.replace(new RegExp(time), ''))).toEqual([
        'eve@example.com left',
        `eve@example.com made ${hostile} owner`,
        `${hostile} joined`,
      ]);
      expect(await h.page.locator('ol.feed img').count()).toBe(0);
      expect(await h.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    } finally {
      await h.page.unroute(feedPage);
    }
  });

  it('evolution: a vertical timeline of the three commits with what each changed', async () => {
    await go(`#/repo/acme/evolution/${DECISION}`);
    const entries = h.page.locator('ol.timeline > li');
    await expect.poll(() => entries.count()).toBe(3);
    expect(await h.page.locator('.count[role="status"]').textContent()).toBe('3 commits, newest first');
    expect(await entries.locator('.evo-head code').allTextContents()).toEqual([...decisionShas].reverse().map((s) => s.slice(0, 7)));
    expect(await entries.locator('.evo-head .title').allTextContents()).toEqual([
      'Consequences: blame',
      'Decision: SQLite, open questions',
      'Decision: first draft',
    ]);
    expect(await entries.locator('.meta').allInnerTexts()).toEqual([
      expect.stringMatching(/^by Alice · \d{4}-\d\d-\d\d \d\d:\d\d UTC$/),
      expect.stringMatching(/^by Bob · /),
      expect.stringMatching(/^by Alice · .*\s+created the page$/),
    ]);
    const chips = (i: number, list: string) => entries.nth(i).getByRole('list', { name: list }).locator('li').allTextContents();
    expect(await chips(0, 'Sections')).toEqual(['~ Consequences (modified)']);
    expect(await entries.nth(0).getByRole('list', { name: 'Frontmatter' }).count()).toBe(0);
    expect(await chips(1, 'Sections')).toEqual(['~ Decision (modified)', '+ Consequences (added)', 'Risks → Open questions (renamed)']);
    expect(await chips(1, 'Frontmatter')).toEqual(['+ tags: storage (added)']);
    expect(await chips(2, 'Sections')).toEqual(['+ Before the first section (added)', '+ Decision (added)', '+ Risks (added)']);
    expect(await chips(2, 'Frontmatter')).toEqual(['+ type: concept (added)', '+ tags: process (added)']);
    const [v1, v2, v3] = decisionShas as [string, string, string];
    expect(await entries.nth(0).locator('.evo-link a').getAttribute('href')).toBe(`#/repo/acme/diff/${DECISION}?from=${v2}&to=${v3}`);
    expect(await entries.nth(1).locator('.evo-link a').getAttribute('href')).toBe(`#/repo/acme/diff/${DECISION}?from=${v1}&to=${v2}`);
    expect(await entries.nth(2).locator('.evo-link a').getAttribute('href')).toBe(`#/repo/acme/page/${DECISION}`);
    expect(await h.page.getByRole('button', { name: 'Show more' }).count()).toBe(0);
    await noSeriousAxe();
    await h.shot('evolution');
    await fits375('evolution', () => entries.nth(2).waitFor());

    // The diff link leads to the section diff of that commit.
    await entries.nth(0).getByRole('link', { name: /Full diff/ }).click();
    await h.page.getByRole('heading', { name: 'Changes to decision', level: 1 }).waitFor();

    // The page view links here.
    await go(`#/repo/acme/page/${DECISION}`);
    await h.page.getByRole('link', { name: 'Evolution' }).click();
    await expect.poll(() => entries.count()).toBe(3);
  });

  it('evolution: the first 50 commits, then "Show more" loads the rest; an unknown page is a readable error', async () => {
    await go('#/repo/beta/evolution/log.md');
    const entries = h.page.locator('ol.timeline > li');
    await expect.poll(() => entries.count()).toBe(50);
    expect(await entries.nth(0).locator('.title').textContent()).toBe(`beta ${BETA_COMMITS - 1}`);
    await h.page.getByRole('button', { name: 'Show more' }).focus();
    await h.page.keyboard.press('Enter');
    await expect.poll(() => entries.count()).toBe(BETA_COMMITS);
    // The keyboard goes on from the first commit that arrived.
    await expect.poll(() => h.page.evaluate(() => document.activeElement?.querySelector('.title')?.textContent)).toBe(`beta ${BETA_COMMITS - 51}`);
    expect(await entries.nth(BETA_COMMITS - 1).locator('.title').textContent()).toBe('beta 0');
    expect(await h.page.getByRole('button', { name: 'Show more' }).count()).toBe(0);

    await go('#/repo/acme/evolution/no/such.md');
    const alert = h.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/\(HTTP 404\)\.$/);
  });


  it('billing: plan, usage against the limit; a failed checkout reads well; Upgrade opens the checkout with the user id', async () => {
    await go('#/billing');
    const usage = h.page.locator('#repos-usage');
    await usage.waitFor();
    expect(await usage.textContent()).toBe('2 of 3 repositories owned');
    const facts = await h.page.locator('.facts > div').evaluateAll((ds) => ds.map((d) => [d.querySelector('dt')?.textContent, d.querySelector('dd')?.textContent]));
    expect(facts).toEqual([
      ['Plan', 'Free'],
      ['Subscription', 'Not subscribed'],
      ['Members per repository', 'Up to 5, owners included (when no owner is subscribed)'],
    ]);
    const meter = h.page.getByRole('meter', { name: '2 of 3 repositories owned' });
    expect(await meter.evaluate((m: HTMLMeterElement) => [m.value, m.min, m.max])).toEqual([2, 0, 3]);
    await noSeriousAxe();
    await h.shot('billing');
    await fits375('billing', () => usage.waitFor());

    // The server refuses the checkout: the reader sees why, and stays.
    await h.page.route(`${h.srv.url}/v1/billing/checkout`, (r) =>
      r.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'billing not configured', code: 'billing_not_configured' }) }),
    );
    await h.page.getByRole('button', { name: 'Upgrade' }).click();
    const alert = h.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe('The payment page could not be opened. Billing not configured (HTTP 503).');
    await h.page.unroute(`${h.srv.url}/v1/billing/checkout`);

    // The real one: the payment provider's page (served here by the browser's router) with Alice's id.
    await h.context.route('https://pay.example.test/**', (r) =>
      r.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Pay</title><h1>Checkout</h1>' }),
    );
    await h.page.getByRole('button', { name: 'Upgrade' }).click();
    await h.page.waitForURL(/^https:\/\/pay\.example\.test\//);
    const url = new URL(h.page.url());
    expect(url.pathname).toBe('/checkout');
    expect(url.searchParams.get('plan')).toBe('pro');
    expect(url.searchParams.get('client_reference_id')).toBe(alice.id);

    // The hosted server's upgrade_url is <dashboard>/billing: that path opens the same view.
    await h.page.goto(`${h.dash.url}/billing`);
    await usage.waitFor();
    expect(h.page.url()).toBe(`${h.dash.url}/#/billing`);
    expect(await usage.textContent()).toBe('2 of 3 repositories owned');
  });

  it('admin: totals, users and repositories exact; a subscription toggled shows in that user\'s billing', async () => {
    await go('#/admin');
    const stats = h.page.getByRole('list', { name: 'Service totals' }).locator('li');
    await expect.poll(() => stats.count()).toBe(4);
    // Pages at head: acme has decision, six notes and the log; beta its log; quiet nothing.
    expect(await stats.allTextContents()).toEqual(['3 users', '0 subscribed', '3 repositories', '9 pages']);
    const users = await api<{ users: { id: string; created_at: number }[] }>('/v1/admin/users', alice.session);
    const created = users.users.map((u) => new Date(u.created_at * 1000).toISOString().slice(0, 10));
    const cells = (table: string) =>
      h.page.locator(`${table} tbody tr`).evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    expect(await cells('#users-table')).toEqual([
      ['alice@example.com', 'Alice', 'no', '2', created[0], 'Subscribe'],
      ['bob@example.com', 'Bob', 'no', '0', created[1], 'Subscribe'],
      ['carol@example.com', 'Carol', 'no', '1', created[2], 'Subscribe'],
    ]);
    expect(await cells('#repos-table')).toEqual([
      ['acme', 'alice@example.com', '2', '8'],
      ['beta', 'alice@example.com', '1', '1'],
      ['quiet', 'carol@example.com', '1', '0'],
    ]);
    await noSeriousAxe();
    await h.shot('admin');
    await fits375('admin', () => h.page.locator('#repos-table').waitFor());

    // From the keyboard: the button keeps the focus while it saves and after, with its new name.
    await h.page.getByRole('button', { name: 'Subscribe bob@example.com' }).focus();
    await h.page.keyboard.press('Enter');
    await h.page.getByRole('status').filter({ hasText: 'bob@example.com is now subscribed.' }).waitFor();
    await h.page.getByRole('button', { name: 'End subscription of bob@example.com' }).waitFor();
    expect(await h.page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('End subscription of bob@example.com');
    await expect.poll(() => stats.allTextContents()).toEqual(['3 users', '1 subscribed', '3 repositories', '9 pages']);
    expect((await cells('#users-table'))[1]).toEqual(['bob@example.com', 'Bob', 'yes', '0', created[1], 'End subscription']);
    expect(await api('/v1/billing', bob.session)).toEqual({ plan: 'pro', subscribed: true, limits: { repos: null, members: null }, usage: { repos_owned: 0 } });
    // The site nav offers both hosted pages to an admin.
    expect(await h.page.getByRole('navigation', { name: 'Site' }).getByRole('link').allTextContents()).toEqual([
      'Repositories',
      'Access tokens',
      'Plan and billing',
      'Admin',
    ]);
  });

  it('a subscribed member sees Pro with no limits and no Upgrade', async () => {
    await h.signInWithToken(bob.pat);
    await go('#/billing');
    const usage = h.page.locator('#repos-usage');
    await usage.waitFor();
    expect(await usage.textContent()).toBe('You own 0 repositories; your plan has no limit on repositories.');
    expect(await h.page.locator('.plan-name').textContent()).toBe('Pro');
    expect(await h.page.getByRole('button', { name: 'Upgrade' }).count()).toBe(0);
    await noSeriousAxe();
  });

  it('a non-admin gets a readable refusal and no Admin link; an empty repository has empty states', async () => {
    const asked: string[] = [];
    const onRequest = (r: { url(): string }) => void asked.push(new URL(r.url()).pathname);
    h.page.on('request', onRequest);
    await h.signInWithToken(carol.pat);
    const nav = h.page.getByRole('navigation', { name: 'Site' });
    await nav.getByRole('link', { name: 'Plan and billing' }).waitFor();
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Repositories', 'Access tokens', 'Plan and billing']);
    await go('#/admin');
    const refusal = h.page.getByText("This page is for the service's administrators, and your account is not one of them.");
    await refusal.waitFor();
    h.page.off('request', onRequest);
    // GET /v1/me said she is no admin: the admin routes were never asked (no 403 in the console).
    expect(asked.filter((p) => p.startsWith('/v1/admin'))).toEqual([]);
    expect(asked.filter((p) => p === '/v1/me').length).toBeGreaterThan(0);
    expect(await h.page.getByRole('table').count()).toBe(0);
    await noSeriousAxe();
    await h.shot('admin-refused');

    await go('#/billing');
    await h.page.locator('#repos-usage').waitFor();
    expect(await h.page.locator('#repos-usage').textContent()).toBe('1 of 3 repositories owned');

    await go('#/repo/quiet/activity');
    await h.page.getByText('No pushes in the last 30 days.').waitFor();
    await h.page.getByText(/^Nothing has happened here yet/).waitFor();
    expect(await h.page.getByRole('img').count()).toBe(0);
    await noSeriousAxe();
    await h.shot('activity-empty');

    // A repository Carol is not in: the server's refusal, readable.
    await go('#/repo/acme/activity');
    const alert = h.page.getByRole('alert').first();
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/^Not a member of this repo \(HTTP 403\)\. You do not have access to this\.$/);
  });

  it('a 402 shows its upgrade link, which leads to the plan', async () => {
    // Carol owns one repository of her plan's three: two more through the API, the fourth in the dashboard.
    for (const id of ['carol-2', 'carol-3']) await api('/v1/repos', carol.session, { method: 'POST', json: { id } });
    await h.signInWithToken(carol.pat);
    await h.page.getByLabel('New repository id').fill('carol-4');
    await h.page.getByRole('button', { name: 'Create repository' }).click();
    const alert = h.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe('Repository limit reached for your plan (3) (HTTP 402). Upgrade your plan');
    const link = alert.getByRole('link', { name: 'Upgrade your plan' });
    expect(await link.getAttribute('href')).toBe(`${h.dash.url}/billing`);
    await noSeriousAxe();
    await h.shot('repositories-402');
    await link.click();
    await h.page.getByRole('heading', { name: 'Plan and billing', level: 1 }).waitFor();
    await h.page.getByRole('button', { name: 'Upgrade' }).waitFor();
  });

  describe('on a self-hosted server', () => {
    let plain: TestServer;
    let dave: { session: string; pat: string };
    beforeAll(async () => {
      plain = await startTestServer({ env: { ...h.op.serverEnv(), SERVICE_CORS_ORIGINS: h.dash.url } });
      const idToken = await h.op.idp.signIdToken({ sub: 'dave', email: 'dave@example.com', name: 'Dave' });
      const signed = await plain.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      const session = ((await signed.json()) as { access_token: string }).access_token;
      const pat = ((await (await plain.api('/v1/pats', { method: 'POST', token: session, json: {} })).json()) as { token: string }).token;
      dave = { session, pat };
      for (const content of [DECISION_V1, DECISION_V2]) {
        const res = await plain.api('/v1/repos/notes/sync/push', { method: 'POST', token: session, json: { files: [{ path: DECISION, content }] } });
        expect(res.status).toBe(200);
      }
      h.dash.config = { ...h.dash.config, apiUrl: plain.url };
      await h.page.evaluate(() => sessionStorage.clear());
      await h.page.goto('about:blank');
    });
    afterAll(async () => {
      await plain?.stop();
    });

    it('every view, signed in: no request to /v1/billing or /v1/admin/*, no console error; no Billing or Admin link', async () => {
      const asked: string[] = [];
      const consoleErrors: string[] = [];
      const onRequest = (r: { url(): string }) => void asked.push(r.url());
      const onConsole = (m: { type(): string; text(): string }) => void (m.type() === 'error' && consoleErrors.push(m.text()));
      const onPageError = (e: Error) => void consoleErrors.push(String(e));
      h.page.on('request', onRequest);
      h.page.on('console', onConsole);
      h.page.on('pageerror', onPageError);
      try {
        await h.signInWithToken(dave.pat);
        const nav = h.page.getByRole('navigation', { name: 'Site' });
        const NO_ADMIN = 'This server has no admin page: it is self-hosted (use the server\u2019s admin command instead).';
        const NO_BILLING = 'This server has no plans or billing: it is self-hosted, and nothing here is capped by a plan.';
        const views: Array<[hash: string, heading: string, says?: string]> = [
          ['#/', 'Repositories'],
          ['#/repo/notes', 'notes'],
          [`#/repo/notes/page/${DECISION}`, 'decision'],
          [`#/repo/notes/diff/${DECISION}`, 'Changes to decision'],
          [`#/repo/notes/evolution/${DECISION}`, 'Evolution of decision'],
          ['#/repo/notes/team', 'Team of notes'],
          ['#/repo/notes/activity', 'Activity in notes'],
          ['#/tokens', 'Personal access tokens'],
          ['#/billing', 'Plan and billing', NO_BILLING],
          ['#/admin', 'Admin', NO_ADMIN],
          ['#/cli-login?port=4321&state=abcdefghijklmnop&hostname=laptop', 'Sign in the command line on laptop'],
        ];
        for (const [hash, heading, says] of views) {
          await go(hash);
          await h.page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
          await expect.poll(() => h.page.locator('.loading').count(), { message: hash }).toBe(0);
          if (says) await h.page.getByText(says, { exact: true }).waitFor();
        }
        // The hosted build's upgrade link, opened on this server: the same calm answer.
        await h.page.goto(`${h.dash.url}/billing`);
        await h.page.getByText(NO_BILLING, { exact: true }).waitFor();
        expect(await h.page.getByRole('alert').count()).toBe(0);
        expect(await nav.getByRole('link').allTextContents()).toEqual(['Repositories', 'Access tokens']);
        await noSeriousAxe();
        await h.shot('billing-self-hosted');
      } finally {
        h.page.off('request', onRequest);
        h.page.off('console', onConsole);
        h.page.off('pageerror', onPageError);
      }
      expect(asked.filter((u) => u.startsWith(plain.url)).length).toBeGreaterThan(10);
      expect(asked.filter((u) => /\/v1\/(billing|admin)(\/|$|\?)/.test(new URL(u).pathname))).toEqual([]);
      expect(consoleErrors).toEqual([]);
    });
  });

  describe('served from an origin the server does not allow', () => {
    let strict: TestServer;
    beforeAll(async () => {
      strict = await startTestServer({ env: { ...h.op.serverEnv(), SERVICE_CORS_ORIGINS: 'http://localhost:5173' } });
    });
    afterAll(async () => {
      await strict?.stop();
    });

    const signInShows = async (apiUrl: string) => {
      h.dash.config = { ...h.dash.config, apiUrl };
      await h.page.goto('about:blank');
      await h.page.goto(`${h.dash.url}/#/`);
      const signOut = h.page.getByRole('button', { name: 'Sign out' });
      await signOut.or(h.page.getByLabel('Access token')).first().waitFor();
      if (await signOut.isVisible()) await signOut.click();
      await h.page.getByLabel('Access token').fill(alice.pat);
      await h.page.getByRole('button', { name: 'Sign in with a token' }).click();
      const alert = h.page.getByRole('alert');
      await alert.waitFor();
      return alert.textContent();
    };

    it('says that this origin is not allowed and which variable to set; the server logs the origin once', async () => {
      const origin = new URL(h.dash.url).origin;
      const refused = () =>
        strict.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === 'cors_origin_refused');
      const message =
        `This dashboard's origin ${origin} is not allowed by the server at ${strict.url}: ` +
        "add it to SERVICE_CORS_ORIGINS in the server's settings (comma-separated) and restart the server.";
      expect(await signInShows(strict.url)).toBe(message);
      await noSeriousAxe();
      await h.shot('signin-origin-refused');
      // A second attempt: the same words, and still one log line for the origin.
      await h.page.getByRole('button', { name: 'Sign in with a token' }).click();
      await expect.poll(() => strict.logs.filter((l) => JSON.parse(l).path === '/health').length).toBeGreaterThanOrEqual(4);
      expect(await h.page.getByRole('alert').textContent()).toBe(message);
      expect(refused().map((l) => [l.level, l.origin])).toEqual([['warn', origin]]);
      expect(await h.page.evaluate(() => sessionStorage.getItem('kr.session'))).toBeNull();
    });

    it('a server that does not answer at all is still "could not be reached"', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const url = `http://127.0.0.1:${port}`;
      expect(await signInShows(url)).toBe(`The server at ${url} could not be reached.`);
    });
  });
});
