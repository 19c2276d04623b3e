/**
 * What a team's trial found, in real Chromium against the hosted build (test/helpers/dashboard.ts):
 *  - joining with an invite key from the Repositories view; at the repository's member cap the joiner is told
 *    to ask an owner (named), never shown the upgrade link, while an owner's Team view shows the cap with the
 *    upgrade link;
 *  - search snippets render their links as the page view does (`[[slug]]`, `[[type/slug|text]]`, relative
 *    `.md` links; unresolved and ambiguous ones marked), in a repository's search and across repositories, and
 *    the page's text stays text.
 * Every view: axe-core and a screenshot (test-artifacts/dashboard/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard-join.test.ts');

/** At most 16 words (the server's snippet length), so that the snippet is the whole text. */
const STORAGE = `---
type: concept
title: Storage
---
Rows: [[postgres]], [[entities/postgres|db]], [[missing-page]], [[cache]], [notes](../../notes/readme.md), <b>x</b>.
`;

describe.skipIf(!hasChromium)('joining at the member cap, and links in search snippets, in chromium', () => {
  let h: DashboardHarness;
  let page: Page;
  let alice: SignedUp;
  let bob: SignedUp;
  let carol: SignedUp;
  let fullKey = '';

  const api = async <T,>(path: string, token: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await h.srv.api(path, { ...init, token });
    const text = await res.text();
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${text}`).toBeLessThan(300);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const members = async (repo: string) =>
    (await api<{ members: { email: string }[] }>(`/v1/repos/${repo}/members`, alice.session)).members.map((m) => m.email);
  const heading = (name: string) => page.getByRole('heading', { name, level: 1, exact: true });
  /** Goes to a view by its address (a full load: the app reads the hash as it starts). */
  const go = async (hash: string, name: string) => {
    await page.goto(`${h.dash.url}/${hash}`);
    await heading(name).waitFor();
  };
  const noSeriousAxe = async (what: string) => expect(await h.axe(), `axe-core on ${what}`).toEqual([]);

  beforeAll(async () => {
    // Two members per repository at most (owners included), so that one join fills it.
    h = await startDashboard({ env: { SERVICE_HOSTED: '1', SERVICE_PLAN_FREE_MEMBERS: '2' } });
    page = h.page;
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    carol = await h.signUp('carol', 'Carol');
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'full' } });
    fullKey = (await api<{ token: string }>('/v1/repos/full/invite-keys', alice.session, { method: 'POST', json: {} })).token;
    await api('/v1/repos/join', bob.session, { method: 'POST', json: { key: fullKey } });
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  it("tells a joiner refused at the member cap to ask the owner, by email, with no upgrade link", async () => {
    // What the server says (the contract's four keys and the owners).
    const res = await h.srv.api('/v1/repos/join', { method: 'POST', token: carol.session, json: { key: fullKey } });
    expect([res.status, await res.json()]).toEqual([
      402,
      {
        error: "member limit reached for this repository's plan (2)",
        code: 'quota_members',
        limit: 2,
        upgrade_url: `${h.dash.url}/billing`,
        owners: ['alice@example.com'],
      },
    ]);

    await h.signInWithToken(carol.pat);
    await page.getByLabel('Invite key').fill('not-a-key');
    await page.getByRole('button', { name: 'Join repository' }).click();
    await page.getByRole('alert').filter({ hasText: 'That is not an invite key: invite keys start with kri_.' }).waitFor();

    await page.getByLabel('Invite key').fill(fullKey);
    await page.getByRole('button', { name: 'Join repository' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'member limit' }).waitFor();
    expect(await alert.textContent()).toBe("This repository is at its plan's member limit (2); ask an owner (alice@example.com) to upgrade.");
    expect(await alert.getByRole('link').count()).toBe(0);
    expect(await page.getByRole('link', { name: /upgrade/i }).count()).toBe(0);
    expect(await members('full')).toEqual(['alice@example.com', 'bob@example.com']);
    await noSeriousAxe('a join refused at the member cap');
    await h.shot('join-402');
  });

  it('shows the owner the cap on the Team view with the upgrade link; not below the cap, not to a member', async () => {
    await h.signInWithToken(alice.pat);
    await go('#/repo/full/team', 'Team of full');
    const note = page.locator('#member-cap');
    await note.waitFor();
    expect(await note.textContent()).toBe(
      "This repository is at its plan's member limit (2, owners included): an invite key lets nobody new join. Upgrade your plan to lift the limit.",
    );
    const link = note.getByRole('link', { name: 'Upgrade your plan' });
    expect(await link.getAttribute('href')).toBe('#/billing');
    await noSeriousAxe('the Team view at the member cap');
    await h.shot('team-at-member-cap');
    await link.click();
    await heading('Plan and billing').waitFor();
    await page.getByRole('button', { name: 'Upgrade' }).waitFor();

    // Below the cap: no note.
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'roomy' } });
    await go('#/repo/roomy/team', 'Team of roomy');
    await page.getByRole('table', { name: 'Members of roomy' }).getByRole('row').filter({ hasText: 'alice@example.com' }).waitFor();
    expect(await page.locator('#member-cap').count()).toBe(0);

    // A member of the full repository is not the one to upgrade: no note, no link.
    await h.signInWithToken(bob.pat);
    await go('#/repo/full/team', 'Team of full');
    await page.getByText('Only an owner can remove members or invite new ones.').waitFor();
    expect(await page.locator('#member-cap').count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Upgrade your plan' }).count()).toBe(0);
  });

  it('joins a repository with room from the Repositories view', async () => {
    const key = (await api<{ token: string }>('/v1/repos/roomy/invite-keys', alice.session, { method: 'POST', json: {} })).token;
    await h.signInWithToken(carol.pat);
    await page.getByLabel('Invite key').fill(`  ${key} `);
    await page.getByRole('button', { name: 'Join repository' }).click();
    const status = page.getByRole('status').filter({ hasText: 'Joined roomy as member.' });
    await status.waitFor();
    expect(await status.getByRole('link', { name: 'roomy' }).getAttribute('href')).toBe('#/repo/roomy');
    await page.getByRole('list', { name: 'Repositories' }).getByRole('link', { name: 'roomy' }).waitFor();
    expect(await page.getByLabel('Invite key').inputValue()).toBe('');
    expect(await members('roomy')).toEqual(['alice@example.com', 'carol@example.com']);
    await noSeriousAxe('the Repositories view after a join');
  });

  it("renders a search snippet's links as the page view does, in a repository's search and across repositories", async () => {
    await api('/v1/repos/roomy/sync/push', alice.session, {
      method: 'POST',
      json: {
        message: 'Pages with links',
        files: [
          { path: 'wiki/concepts/storage.md', content: STORAGE },
          { path: 'wiki/entities/postgres.md', content: '---\ntype: entity\ntitle: PostgreSQL\n---\nThe database.\n' },
          { path: 'wiki/concepts/cache.md', content: '---\ntitle: Caching\n---\nIdea.\n' },
          { path: 'wiki/analyses/cache.md', content: '---\ntitle: Cache hit rates\n---\nNumbers.\n' },
          { path: 'notes/readme.md', content: 'Loose notes.\n' },
        ],
      },
    });
    await h.signInWithToken(carol.pat);
    for (const [hash, name] of [
      ['#/repo/roomy?q=rows', 'roomy'],
      ['#/search?q=rows', 'Search: rows'],
    ] as const) {
      await go(hash, name);
      const snippet = page.getByRole('list', { name: 'Search results' }).getByRole('listitem').filter({ hasText: 'Storage' }).locator('.snippet');
      const link = (text: string) => snippet.getByRole('link', { name: text, exact: true });
      await link('postgres').waitFor();
      expect(await link('postgres').getAttribute('href')).toBe('#/repo/roomy/page/wiki/entities/postgres.md');
      expect(await link('db').getAttribute('href')).toBe('#/repo/roomy/page/wiki/entities/postgres.md');
      expect(await link('notes').getAttribute('href')).toBe('#/repo/roomy/page/notes/readme.md');
      // Unresolved and ambiguous, marked as on the page.
      const missing = snippet.getByRole('link', { name: 'missing-page (no such page yet: create it)' });
      expect(await missing.getAttribute('href')).toBe('#/repo/roomy/new?slug=missing-page');
      expect(await missing.getAttribute('class')).toBe('wikilink unresolved');
      const cache = snippet.locator('.wikilink.ambiguous');
      expect(await cache.textContent()).toBe('cache (ambiguous: wiki/concepts/cache.md or wiki/analyses/cache.md)');
      expect(await cache.evaluate((el) => el.tagName)).toBe('SPAN');
      // No raw [[…]] left; the page's own tag is text; the matches are marked.
      const text = (await snippet.textContent()) ?? '';
      expect(text).not.toContain('[[');
      expect(text).toContain('<b>x</b>');
      expect(await snippet.locator('b').count()).toBe(0);
      expect(await snippet.locator('mark').allTextContents()).toEqual(['Rows']);
      await noSeriousAxe(`search snippets (${hash})`);
    }
    await h.shot('search-snippet-links');
    await page
      .getByRole('list', { name: 'Search results' })
      .getByRole('listitem')
      .filter({ hasText: 'Storage' })
      .locator('.snippet')
      .getByRole('link', { name: 'db', exact: true })
      .click();
    await heading('PostgreSQL').waitFor();

    // A match inside a link: the link stays one link, marked as a whole.
    await go('#/repo/roomy?q=postgres', 'roomy');
    const storage = page.getByRole('list', { name: 'Search results' }).getByRole('listitem').filter({ hasText: 'Storage' }).locator('.snippet');
    await storage.getByRole('link', { name: 'postgres', exact: true }).waitFor();
    expect(await storage.locator('mark > a.wikilink').first().textContent()).toBe('postgres');
    expect((await storage.textContent()) ?? '').not.toContain('[[');
  });
});
