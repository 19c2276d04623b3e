/**
 * The dashboard's Team view (members, invite keys) and Access tokens view in a real browser:
 * an owner mints an invite key (shown once, copied), a second user joins with it through the API, the owner
 * removes them and revokes the key (each after a confirm step), an expired key is marked Expired, a member's
 * calm view, personal access tokens created with an expiry, copied once and revoked, server errors shown
 * readably, empty states, axe-core on every view, 375 px. Screenshots go to test-artifacts/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator } from 'playwright-core';
import type { Clock } from '../lib/util/clock.ts';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard-team.test.ts');

/** The system clock, moved by an offset: mints an invite key "8 days ago" so it is expired now. */
class OffsetClock implements Clock {
  offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
}

const DAY = 86_400;

/** Unix seconds as the dashboard shows them: "2026-11-23 02:46 UTC". */
const shown = (s: number) => `${new Date(s * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

describe.skipIf(!hasChromium)('the team and access token views in chromium', () => {
  let h: DashboardHarness;
  let alice: SignedUp;
  let bob: SignedUp;
  let carol: SignedUp;
  let inviteToken = '';
  const clock = new OffsetClock();

  const json = async <T,>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    expect(res.status, text).toBe(status);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  /**
   * Goes to a view by its hash and waits for its heading. The document is reloaded at the new address: a hash
   * set just after a sign-in can land before the app listens for hashchange (its listener is an effect).
   */
  const go = async (hash: string, heading: string) => {
    await h.page.evaluate((to) => {
      location.hash = to;
    }, hash);
    await h.page.reload();
    await h.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  };
  const reload = async (heading: string) => {
    await h.page.reload();
    await h.page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  };
  const row = (table: Locator, text: string) => table.getByRole('row').filter({ hasText: text });
  const members = () => h.page.getByRole('table', { name: /^Members of / });
  const keys = () => h.page.getByRole('table', { name: 'Invite keys of acme' });
  const memberEmails = async (repo: string) =>
    (await json<{ members: { email: string }[] }>(await h.srv.api(`/v1/repos/${repo}/members`, { token: alice.session }), 200)).members.map(
      (m) => m.email,
    );
  const expectAxeClean = async () => expect(await h.axe()).toEqual([]);

  beforeAll(async () => {
    h = await startDashboard({ clock });
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    carol = await h.signUp('carol', 'Carol');
    await json(await h.srv.api('/v1/repos', { method: 'POST', token: alice.session, json: { id: 'acme' } }), 201);
    // An invite key minted eight days ago has expired a day ago (keys live 7 days).
    clock.offsetMs = -8 * DAY * 1000;
    try {
      await json(await h.srv.api('/v1/repos/acme/invite-keys', { method: 'POST', token: alice.session, json: { label: 'old key' } }), 201);
    } finally {
      clock.offsetMs = 0;
    }
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('shows the owner the members; mints an invite key shown once, copies it; after a reload it is listed, not shown', async () => {
    const { page } = h;
    await h.signInWithToken(alice.pat);
    await go('#/repo/acme/team', 'Team of acme');
    await row(members(), 'alice@example.com').waitFor();
    expect(await row(members(), 'alice@example.com').textContent()).toContain('owner');
    // The expired key minted in beforeAll is listed, marked Expired.
    await row(keys(), 'old key').waitFor();
    expect(await row(keys(), 'old key').textContent()).toContain('Expired');
    expect(await page.getByRole('alert').count()).toBe(0);

    await page.getByLabel('Label (optional)').fill('for Bob');
    await page.getByRole('button', { name: 'Mint invite key' }).click();
    const field = page.getByLabel('New invite key', { exact: true });
    await field.waitFor();
    inviteToken = await field.inputValue();
    expect(inviteToken).toMatch(/^kri_[A-Za-z0-9_-]{32}$/);
    expect(await field.getAttribute('readonly')).not.toBeNull();
    await page.getByText('it will not be shown again').waitFor();
    await page.getByText(`kr join ${inviteToken}`).waitFor();

    await page.getByRole('button', { name: 'Copy the new invite key' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(inviteToken);

    await row(keys(), 'for Bob').waitFor();
    expect(await row(keys(), 'for Bob').textContent()).toContain('Active');
    const listed = await json<{ keys: { label: string; created_at: number; expires_at: number }[] }>(
      await h.srv.api('/v1/repos/acme/invite-keys', { token: alice.session }),
      200,
    );
    const key = listed.keys.find((k) => k.label === 'for Bob')!;
    expect(key.expires_at - key.created_at).toBe(7 * DAY);
    expect(await row(keys(), 'for Bob').textContent()).toContain(shown(key.expires_at));
    await expectAxeClean();
    await h.shot('team');

    await reload('Team of acme');
    await row(keys(), 'for Bob').waitFor();
    expect(await row(keys(), 'for Bob').textContent()).toContain('Active');
    expect(await page.getByLabel('New invite key', { exact: true }).count()).toBe(0);
    expect(await page.content()).not.toContain(inviteToken);
  });

  it('lists a teammate who joined with the key; the owner removes them after a confirm step', async () => {
    const { page } = h;
    expect(await json(await h.srv.api('/v1/repos/join', { method: 'POST', token: bob.session, json: { key: inviteToken } }), 200)).toEqual({
      repo_id: 'acme',
      role: 'member',
    });
    await reload('Team of acme');
    await row(members(), 'bob@example.com').waitFor();
    expect(await row(members(), 'bob@example.com').textContent()).toContain('member');

    await page.getByRole('button', { name: 'Remove member bob@example.com', exact: true }).click();
    const confirm = page.getByRole('button', { name: 'Yes, remove member bob@example.com', exact: true });
    await confirm.waitFor();
    // The first press only asks; the confirm button has the focus.
    expect(await confirm.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.getByText('Remove bob@example.com? They lose access at once').waitFor();
    expect(await memberEmails('acme')).toContain('bob@example.com');
    await expectAxeClean();

    await confirm.click();
    await page.getByRole('status').filter({ hasText: 'Removed bob@example.com from acme.' }).waitFor();
    await row(members(), 'bob@example.com').waitFor({ state: 'detached' });
    expect(await memberEmails('acme')).toEqual(['alice@example.com']);
  });

  it('shows the last owner why they cannot leave (409), readably', async () => {
    const { page } = h;
    const leave = page.getByRole('button', { name: 'Leave acme (remove yourself)', exact: true });
    await leave.click();
    await page.getByRole('button', { name: 'Yes, leave acme (remove yourself)', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: "Can't remove the last owner (HTTP 409)." });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('repo owner');
    // The refusal hands the focus back to the button that asked.
    await leave.waitFor();
    await expect.poll(() => leave.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await memberEmails('acme')).toEqual(['alice@example.com']);
  });

  it('shows the server refusing a label over 200 characters', async () => {
    const { page } = h;
    await page.getByLabel('Label (optional)').fill('x'.repeat(201));
    await page.getByRole('button', { name: 'Mint invite key' }).click();
    await page.getByRole('alert').filter({ hasText: 'Label too long (max 200) (HTTP 400).' }).waitFor();
    const listed = await json<{ keys: unknown[] }>(await h.srv.api('/v1/repos/acme/invite-keys', { token: alice.session }), 200);
    expect(listed.keys).toHaveLength(2);
  });

  it('revokes an invite key after a confirm step (Escape cancels); it can no longer be redeemed', async () => {
    const { page } = h;
    const revoke = page.getByRole('button', { name: 'Revoke invite key for Bob', exact: true });
    await revoke.click();
    const asked = page.getByRole('button', { name: 'Yes, revoke invite key for Bob', exact: true });
    await asked.waitFor();
    // The question and the focus arrive together: Escape pressed at once reaches the confirm step.
    expect(await asked.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Escape');
    await asked.waitFor({ state: 'detached' });
    await revoke.waitFor();
    expect(await revoke.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await json<{ keys: unknown[] }>(await h.srv.api('/v1/repos/acme/invite-keys', { token: alice.session }), 200)).toMatchObject({
      keys: expect.arrayContaining([expect.objectContaining({ label: 'for Bob' })]),
    });

    // Keyboard only: Enter on the focused Revoke button, then on the focused confirm button.
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('button', { name: 'Yes, revoke invite key for Bob', exact: true });
    await confirm.waitFor();
    expect(await confirm.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Revoked the invite key for Bob.' }).waitFor();
    await row(keys(), 'for Bob').waitFor({ state: 'detached' });
    expect(await row(keys(), 'old key').count()).toBe(1);

    expect(await json(await h.srv.api('/v1/repos/join', { method: 'POST', token: carol.session, json: { key: inviteToken } }), 404)).toEqual({
      error: 'invite key not recognized',
      code: 'invite_key_not_recognized',
    });
  });

  it('shows an empty state for a repository without invite keys; a token minted in another is not carried over', async () => {
    const { page } = h;
    await json(await h.srv.api('/v1/repos', { method: 'POST', token: alice.session, json: { id: 'solo' } }), 201);
    await page.getByLabel('Label (optional)').fill('left on screen');
    await page.getByRole('button', { name: 'Mint invite key' }).click();
    await page.getByLabel('New invite key', { exact: true }).waitFor();
    // Within the app (no reload): the other repository's team starts afresh.
    await page.evaluate(() => {
      location.hash = '#/repo/solo/team';
    });
    await page.getByRole('heading', { name: 'Team of solo', level: 1 }).waitFor();
    await page.getByText('No invite keys. Mint one above to invite a teammate.').waitFor();
    expect(await page.getByLabel('New invite key', { exact: true }).count()).toBe(0);
    expect(await page.getByRole('row').filter({ hasText: 'left on screen' }).count()).toBe(0);
    await row(h.page.getByRole('table', { name: 'Members of solo' }), 'alice@example.com').waitFor();
  });

  it("shows a member the team calmly: no remove buttons, no invite keys, no error", async () => {
    const { page } = h;
    await json(await h.srv.api('/v1/repos', { method: 'POST', token: alice.session, json: { id: 'beta' } }), 201);
    const minted = await json<{ token: string }>(
      await h.srv.api('/v1/repos/beta/invite-keys', { method: 'POST', token: alice.session, json: {} }),
      201,
    );
    await json(await h.srv.api('/v1/repos/join', { method: 'POST', token: carol.session, json: { key: minted.token } }), 200);
    // What the view would have asked: a member gets 403 for the keys.
    expect(await json(await h.srv.api('/v1/repos/beta/invite-keys', { token: carol.session }), 403)).toEqual({
      error: 'only an owner can manage invite keys',
      code: 'owner_only_invites',
    });

    await h.signInWithToken(carol.pat);
    await go('#/repo/beta/team', 'Team of beta');
    await row(members(), 'carol@example.com').waitFor();
    await row(members(), 'alice@example.com').waitFor();
    await page.getByText('Only an owner can remove members or invite new ones.').waitFor();
    await page.getByText('Only an owner of beta mints and revokes invite keys.').waitFor();
    expect(await page.getByRole('button', { name: /Remove member/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Mint invite key' }).count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(0);
    await expectAxeClean();
    await h.shot('team-member');
  });

  it('creates a token with an expiry, shown once and copied; the listed expiry matches; revoking stops it at once', async () => {
    const { page } = h;
    await h.signInWithToken(alice.pat);
    await go('#/tokens', 'Personal access tokens');
    const table = page.getByRole('table', { name: 'Your personal access tokens' });
    await row(table, 'alice in the browser').waitFor();
    expect(await row(table, 'alice in the browser').textContent()).toContain('never');

    await page.getByLabel('Label (optional)').fill('x'.repeat(201));
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('alert').filter({ hasText: 'Label too long (max 200) (HTTP 400).' }).waitFor();

    await page.getByLabel('Label (optional)').fill('ci bot');
    await page.getByLabel('Expires after').selectOption('7');
    await page.getByRole('button', { name: 'Create token' }).click();
    const field = page.getByLabel('New access token', { exact: true });
    await field.waitFor();
    const token = await field.inputValue();
    expect(token).toMatch(/^krp_[A-Za-z0-9_-]{32}$/);
    await page.getByText(`kr login --server ${h.srv.url}`).first().waitFor();
    await page.getByRole('button', { name: 'Copy the new access token' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
    expect(await json(await h.srv.api('/v1/me', { token }), 200)).toMatchObject({ email: 'alice@example.com' });

    const pats = await json<{ pats: { label: string; created_at: number; expires_at?: number }[] }>(
      await h.srv.api('/v1/pats', { token: alice.session }),
      200,
    );
    const pat = pats.pats.find((p) => p.label === 'ci bot')!;
    expect(pat.expires_at! - pat.created_at).toBe(7 * DAY);
    await row(table, 'ci bot').waitFor();
    expect(await row(table, 'ci bot').textContent()).toContain(shown(pat.expires_at!));
    await expectAxeClean();
    await h.shot('tokens');

    await reload('Personal access tokens');
    await row(table, 'ci bot').waitFor();
    expect(await page.getByLabel('New access token', { exact: true }).count()).toBe(0);
    expect(await page.content()).not.toContain(token);

    await page.getByRole('button', { name: 'Revoke token ci bot', exact: true }).click();
    await page.getByText('stops working at once').waitFor();
    await expectAxeClean();
    expect((await h.srv.api('/v1/me', { token })).status).toBe(200);
    await page.getByRole('button', { name: 'Yes, revoke token ci bot', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked the token ci bot.' }).waitFor();
    await row(table, 'ci bot').waitFor({ state: 'detached' });
    expect(await json(await h.srv.api('/v1/me', { token }), 401)).toEqual({ error: 'invalid token', code: 'invalid_token' });
  });

  it('has an empty state, and says so when the revoked token is the one the tab signed in with', async () => {
    const { page } = h;
    const dave = await h.signUp('dave', 'Dave');
    const own = await json<{ pats: { id: string }[] }>(await h.srv.api('/v1/pats', { token: dave.session }), 200);
    for (const p of own.pats) await json(await h.srv.api(`/v1/pats/${p.id}`, { method: 'DELETE', token: dave.session }), 204);
    await h.signInWithToken(dave.session);
    await go('#/tokens', 'Personal access tokens');
    await page.getByText('You have no personal access tokens. Create one above.').waitFor();

    // Signed in with a PAT that is then revoked here: the tab learns it lost its sign-in.
    const minted = await json<{ token: string }>(
      await h.srv.api('/v1/pats', { method: 'POST', token: dave.session, json: { label: 'this tab' } }),
      201,
    );
    await h.signInWithToken(minted.token);
    await go('#/tokens', 'Personal access tokens');
    // The token the tab signed in with is marked, and revoking it says what it does to this tab.
    const table = page.getByRole('table', { name: 'Your personal access tokens' });
    expect(await row(table, 'in use by this tab').textContent()).toContain('this tab');
    await page.getByRole('button', { name: 'Revoke token this tab', exact: true }).click();
    await page.getByText('It is the token this tab signed in with: this tab is signed out at once').waitFor();
    await page.getByRole('button', { name: 'Yes, revoke token this tab', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'That was the token this tab signed in with' }).waitFor();
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
  });

  /**
   * Every Leave, Remove and Revoke button of the view: each lies inside the 375 px viewport (its box, not a
   * sideways-scrolled table's), is the element found at its own centre once scrolled to vertically (nothing
   * clips or covers it), and is reached from the heading with Tab alone.
   */
  const expectActionsInView = async (names: RegExp, expected: number) => {
    const { page } = h;
    const buttons = page.getByRole('button', { name: names });
    expect(await buttons.count()).toBe(expected);
    for (const b of await buttons.all()) {
      const label = (await b.getAttribute('aria-label')) ?? (await b.textContent()) ?? '';
      const seen = await b.evaluate((el) => {
        const r0 = el.getBoundingClientRect();
        window.scrollBy(0, r0.top - window.innerHeight / 2);
        const r = el.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return { left: r.left, right: r.right, width: r.width, atCentre: hit !== null && el.contains(hit) };
      });
      expect(seen.width, label).toBeGreaterThan(0);
      expect(seen.left, label).toBeGreaterThanOrEqual(0);
      expect(seen.right, label).toBeLessThanOrEqual(375);
      expect(seen.atCentre, label).toBe(true);
    }
    // No box on the page scrolls sideways (a table in an overflow box would hide its last column).
    const sideways = await page.evaluate(() =>
      [...document.querySelectorAll('main *')]
        .filter((el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1)
        .map((el) => el.outerHTML.slice(0, 80)),
    );
    expect(sideways).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    // Keyboard: Tab from the heading reaches every one of them.
    await page.getByRole('heading', { level: 1 }).focus();
    const reached = new Set<string>();
    for (let i = 0; i < 80 && reached.size < expected; i++) {
      await page.keyboard.press('Tab');
      const name = await page.evaluate(() => {
        const el = document.activeElement;
        return el instanceof HTMLButtonElement ? el.textContent ?? '' : '';
      });
      if (names.test(name)) reached.add(name);
    }
    expect(reached.size).toBe(expected);
  };

  it('fits 375 px: the tables become cards, every Leave/Remove/Revoke button in view and reachable by keyboard; emails break at @ and dots', async () => {
    const { page } = h;
    const long = 'erin.with.a.rather.long.name@engineering.example-corporation.com';
    const erin = await h.signUp('erin', 'Erin', long);
    const frank = await h.signUp('frank', 'Frank');
    const minted = await json<{ token: string }>(
      await h.srv.api('/v1/repos/acme/invite-keys', { method: 'POST', token: alice.session, json: { label: 'for the people who join from the phone' } }),
      201,
    );
    for (const who of [erin, frank]) await json(await h.srv.api('/v1/repos/join', { method: 'POST', token: who.session, json: { key: minted.token } }), 200);
    await page.setViewportSize({ width: 375, height: 800 });
    try {
      await h.signInWithToken(alice.pat);
      await go('#/repo/acme/team', 'Team of acme');
      await row(keys(), 'old key').waitFor();
      await row(members(), 'frank@example.com').waitFor();
      // Leave (alice) and Remove (each other member); Revoke (each key, the expired one too).
      const listed = await json<{ keys: unknown[] }>(await h.srv.api('/v1/repos/acme/invite-keys', { token: alice.session }), 200);
      const team = await memberEmails('acme');
      expect(team).toEqual(expect.arrayContaining(['alice@example.com', long, 'frank@example.com']));
      await expectActionsInView(/^(Leave|Remove|Revoke)\b/, team.length + listed.keys.length);
      // Each row is a card: one column of labelled cells, the table still a table with its header row.
      const card = row(members(), long);
      expect(await card.evaluate((tr) => getComputedStyle(tr).display)).toBe('block');
      expect(await card.getByRole('cell').first().evaluate((td) => getComputedStyle(td, '::before').content)).toBe('"Email: "');
      expect(await members().getByRole('columnheader').allTextContents()).toEqual(['Email', 'Role', 'Added', 'Actions']);
      // The long email breaks after its @ and dots, and stays inside the card.
      const email = card.locator('.email');
      expect(await email.evaluate((el) => el.innerHTML)).toBe(
        'erin.<wbr>with.<wbr>a.<wbr>rather.<wbr>long.<wbr>name@<wbr>engineering.<wbr>example-corporation.<wbr>com',
      );
      const emailBox = (await email.boundingBox())!;
      expect(emailBox.x + emailBox.width).toBeLessThanOrEqual(375);
      expect(emailBox.height).toBeGreaterThan(30); // more than one line
      await expectAxeClean();
      await h.shot('team-375px');

      await go('#/tokens', 'Personal access tokens');
      await row(page.getByRole('table', { name: 'Your personal access tokens' }), 'alice in the browser').waitFor();
      await page.getByLabel('Label (optional)').fill('phone');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.getByLabel('New access token', { exact: true }).waitFor();
      await row(page.getByRole('table', { name: 'Your personal access tokens' }), 'phone').waitFor();
      await expectActionsInView(/^Revoke\b/, await page.getByRole('table', { name: 'Your personal access tokens' }).getByRole('row').count() - 1);
      await expectAxeClean();
      await h.shot('tokens-375px');
    } finally {
      await page.setViewportSize({ width: 1100, height: 800 });
    }
  });
});
