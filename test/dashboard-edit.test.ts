/**
 * Writing in the dashboard, in real Chromium against the real server
 * (test/helpers/dashboard.ts): the editor (frontmatter fields, CodeMirror body, preview), save as a push with
 * `parent_sha` and `merge: "sections"`, a local draft that survives a reload and is merged (never forced) when
 * the page moved meanwhile, a conflict shown side by side and resolved part by part, a new page whose path
 * follows the client layout and which never overwrites a page created meanwhile, deleting a page after a
 * confirm step. Every view: axe-core, 375 px, a screenshot; the console stays free of errors but the 409s the
 * conflicts are made of.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';

warnIfNoChromium('test/dashboard-edit.test.ts');

const LOG = 'wiki/concepts/decision-log.md';
const LOG_V1 = `---
type: concept
title: Decision log
tags: [process]
summary: Why we decide the way we do.
---
Intro.

## Decision
Use git.

## Risks
Nobody reads it.
`;

describe.skipIf(!hasChromium)('writing pages in the dashboard', () => {
  let h: DashboardHarness;
  let page: Page;
  let alice: SignedUp;
  let bob: SignedUp;
  const consoleErrors: { text: string; url: string }[] = [];

  const api = async <T,>(path: string, token: string, init: { method?: string; json?: unknown } = {}) => {
    const res = await h.srv.api(path, { ...init, token });
    const text = await res.text();
    expect(res.status, `${init.method ?? 'GET'} ${path}: ${text}`).toBeLessThan(300);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const push = async (who: SignedUp, files: { path: string; content?: string; delete?: true }[], message: string) =>
    (await api<{ new_head: string }>('/v1/repos/acme/sync/push', who.session, { method: 'POST', json: { message, files } })).new_head;
  const serverText = async (path: string) => {
    const res = await h.srv.api(`/v1/repos/acme/pages/${path}`, { token: alice.session });
    return res.status === 200 ? { text: await res.text(), sha: res.headers.get('x-page-sha') } : null;
  };
  const go = async (hash: string) => {
    await page.goto(`${h.dash.url}/${hash}`);
  };
  const heading = (name: string) => page.getByRole('heading', { name, level: 1, exact: true });
  const editorText = async () => (await page.locator('.cm-line').allTextContents()).join('\n');
  /** Puts the cursor at the end of the line reading `line` and types `text` (`\n` is Enter). */
  const typeAfter = async (line: string, text: string) => {
    await page.locator('.cm-line').filter({ hasText: new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).click();
    await page.keyboard.press('End');
    await page.keyboard.type(text);
  };
  /** Replaces the whole line reading `line` with `text`. */
  const replaceLine = async (line: string, text: string) => {
    await page.locator('.cm-line').filter({ hasText: new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).click();
    await page.keyboard.press('End');
    await page.keyboard.press('Shift+Home');
    await page.keyboard.type(text);
  };
  const draftKey = (path: string, who: SignedUp = alice) => `kr.draft:${JSON.stringify([h.srv.url, who.id, 'acme', path])}`;
  const storedDraft = (path: string, who: SignedUp = alice) => page.evaluate((k) => localStorage.getItem(k), draftKey(path, who));
  const draftKeys = () => page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('kr.draft:')).sort());
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
  /** The pushes the tab makes while `act` runs. */
  const pushesDuring = async (act: () => Promise<void>) => {
    const seen: Record<string, unknown>[] = [];
    const on = (r: Request) => {
      if (r.method() === 'POST' && r.url().endsWith('/v1/repos/acme/sync/push')) seen.push(JSON.parse(r.postData() ?? '{}') as Record<string, unknown>);
    };
    page.on('request', on);
    try {
      await act();
    } finally {
      page.off('request', on);
    }
    return seen;
  };

  beforeAll(async () => {
    h = await startDashboard();
    page = h.page;
    alice = await h.signUp('alice', 'Alice');
    bob = await h.signUp('bob', 'Bob');
    await api('/v1/repos', alice.session, { method: 'POST', json: { id: 'acme' } });
    const invite = await api<{ token: string }>('/v1/repos/acme/invite-keys', alice.session, { method: 'POST', json: {} });
    await api('/v1/repos/join', bob.session, { method: 'POST', json: { key: invite.token } });
    await push(alice, [{ path: LOG, content: LOG_V1 }], 'Decision log');
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push({ text: m.text(), url: m.location().url });
    });
    page.on('pageerror', (e) => consoleErrors.push({ text: String(e), url: '' }));
    await h.signInWithToken(alice.pat);
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  it('edits a page: frontmatter as fields, the body in the editor, a preview; save is a push with parent_sha and merge "sections"', async () => {
    const before = (await serverText(LOG))!;
    await go(`#/repo/acme/page/${LOG}`);
    await heading('Decision log').waitFor();
    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await heading('Edit Decision log').waitFor();
    expect(await page.getByLabel('Title').inputValue()).toBe('Decision log');
    expect(await page.getByLabel('Type').inputValue()).toBe('concept');
    expect(await page.getByLabel('Tags').inputValue()).toBe('process');
    expect(await page.getByLabel('Summary').inputValue()).toBe('Why we decide the way we do.');
    await page.locator('.cm-content').waitFor();
    expect(await page.getByRole('textbox', { name: 'Page text (Markdown)' }).count()).toBe(1);
    expect(await editorText()).toBe('Intro.\n\n## Decision\nUse git.\n\n## Risks\nNobody reads it.\n');
    await noSeriousAxe('the editor');
    await h.shot('edit');

    await page.getByLabel('Title').fill('Decision record');
    await page.getByLabel('Tags').fill('process, storage');
    await typeAfter('Nobody reads it.', '\n\n## Consequences\nHistory for free, see [[decision-log]].');
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('article', { name: 'Preview' });
    await preview.getByRole('heading', { name: 'Consequences', level: 2 }).waitFor();
    expect(await page.locator('.preview-title').textContent()).toBe('Decision record');
    expect(await preview.getByRole('link', { name: 'decision-log' }).getAttribute('href')).toBe(`#/repo/acme/page/${LOG}`);
    await noSeriousAxe('the preview');
    await page.getByRole('button', { name: 'Write' }).click();
    await page.getByLabel('Describe the change (optional)').fill('Consequences');

    const pushes = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await heading('Decision record').waitFor();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    });
    const expected = LOG_V1.replace('title: Decision log', 'title: Decision record')
      .replace('tags: [process]', 'tags: [process, storage]')
      .replace('Nobody reads it.\n', 'Nobody reads it.\n\n## Consequences\nHistory for free, see [[decision-log]].\n');
    expect(pushes).toEqual([{ message: 'Consequences', merge: 'sections', files: [{ path: LOG, content: expected, parent_sha: before.sha }] }]);
    const after = (await serverText(LOG))!;
    expect(after.text).toBe(expected);
    expect(page.url()).toBe(`${h.dash.url}/#/repo/acme/page/${LOG}`);
    // The summary under the title, the new section rendered, the commit in the history linking to its diff.
    expect(await page.locator('.summary.lead').textContent()).toBe('Why we decide the way we do.');
    await page.locator('article.markdown').getByRole('heading', { name: 'Consequences' }).waitFor();
    const history = page.getByRole('heading', { name: 'History' }).locator('xpath=..').getByRole('listitem');
    await history.nth(1).waitFor();
    expect(await history.first().getByRole('link').first().textContent()).toBe('Consequences');
    expect(await history.first().getByRole('link').first().getAttribute('href')).toBe(`#/repo/acme/diff/${LOG}?from=${before.sha}&to=${after.sha}`);
    expect(await storedDraft(LOG)).toBeNull();
  });

  it('keeps unsaved changes across a reload and offers them back; leaving with them asks first', async () => {
    await go(`#/repo/acme/edit/${LOG}`);
    await heading('Edit Decision record').waitFor();
    await page.locator('.cm-content').waitFor();
    await typeAfter('Intro.', ' Unsaved words.');
    await expect.poll(() => storedDraft(LOG)).not.toBeNull();
    const draft = JSON.parse((await storedDraft(LOG))!) as { text: string; parentSha: string };
    expect(draft.parentSha).toBe((await serverText(LOG))!.sha);
    expect(draft.text).toContain('Intro. Unsaved words.');

    // Reloading with unsaved changes asks first (beforeunload); the draft is there after it.
    const dialogs: string[] = [];
    page.once('dialog', (d) => {
      dialogs.push(d.type());
      void d.accept();
    });
    await page.reload();
    expect(dialogs).toEqual(['beforeunload']);
    await page.getByRole('heading', { name: /^Unsaved changes from / }).waitFor();
    expect(await page.locator('.cm-content').count()).toBe(0);
    await noSeriousAxe('the draft question');
    await h.shot('edit-draft');
    await page.getByRole('button', { name: 'Restore draft' }).click();
    await page.locator('.cm-content').waitFor();
    expect(await editorText()).toContain('Intro. Unsaved words.');

    // The page view says the draft is there too; discarding it from the editor leaves the page as it was.
    await go(`#/repo/acme/page/${LOG}`);
    await page.getByText('You have unsaved changes to this page in this browser').waitFor();
    await page.getByRole('link', { name: 'Continue editing' }).click();
    await page.getByRole('button', { name: 'Discard draft' }).click();
    await page.getByRole('button', { name: 'Yes, discard' }).click();
    await page.locator('.cm-content').waitFor();
    expect(await editorText()).not.toContain('Unsaved words.');
    expect(await storedDraft(LOG)).toBeNull();
    expect((await serverText(LOG))!.text).not.toContain('Unsaved words.');
  });

  it('saves a draft made before someone else changed the page by merging it section by section, never by overwriting', async () => {
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    await replaceLine('Nobody reads it.', 'Everybody reads it.');
    await expect.poll(async () => (await storedDraft(LOG)) ?? '').toContain('Everybody reads it.');
    const start = (await serverText(LOG))!;

    // Bob changes another section meanwhile.
    const bobs = await push(bob, [{ path: LOG, content: start.text.replace('Use git.', 'Use git and SQLite.') }], 'SQLite');
    page.once('dialog', (d) => void d.accept());
    await page.reload();
    await page.getByText('The page has changed since').waitFor();
    await page.getByRole('button', { name: 'Restore draft' }).click();
    await page.locator('.cm-content').waitFor();
    const pushes = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'were merged with yours' }).waitFor();
    });
    // The draft still names the commit it started from: the server merged it instead of overwriting Bob's change.
    expect((pushes[0]!.files as { parent_sha: string }[])[0]!.parent_sha).toBe(start.sha);
    const now = (await serverText(LOG))!.text;
    expect(now).toBe(start.text.replace('Use git.', 'Use git and SQLite.').replace('Nobody reads it.', 'Everybody reads it.'));
    expect(await page.getByRole('status').filter({ hasText: 'were merged with yours' }).textContent()).toContain(bobs.slice(0, 7));
  });

  it('shows a conflict side by side; take theirs, keep mine or edit each part, then saves the resolved page', async () => {
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    const start = (await serverText(LOG))!;
    await page.getByLabel('Title').fill('My record');
    await replaceLine('Use git and SQLite.', 'Use git and Postgres.');
    await replaceLine('Intro.', 'Intro, mine.');
    // Bob changes the same two parts, and one more, meanwhile.
    const theirs = start.text
      .replace('title: Decision record', 'title: Their record')
      .replace('Use git and SQLite.', 'Use git and DuckDB.')
      .replace('Everybody reads it.', 'Everybody reads it, twice.');
    const bobs = await push(bob, [{ path: LOG, content: theirs }], 'DuckDB');

    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'This page changed while you were editing it' }).waitFor();
    const items = page.locator('fieldset.conflict-item');
    expect(await items.locator('legend').allTextContents()).toEqual(['Field “title”', 'Section “Decision”']);
    const decision = items.filter({ hasText: 'Section “Decision”' });
    expect(await decision.locator('.side h4').allTextContents()).toEqual(['Before (where you started)', 'Theirs (on the server now)', 'Yours']);
    expect(await decision.locator('.side pre').allTextContents()).toEqual(['Use git and SQLite.', 'Use git and DuckDB.', 'Use git and Postgres.']);
    expect(await items.filter({ hasText: 'Field “title”' }).locator('.side pre').allTextContents()).toEqual(['Decision record', 'Their record', 'My record']);
    await noSeriousAxe('the conflict');
    await h.shot('conflict');
    await fits375('conflict');

    // Nothing chosen yet: the save says what is missing.
    await page.getByRole('button', { name: 'Save the resolved page' }).click();
    await page.getByRole('alert').filter({ hasText: 'Choose what to keep for Field “title”.' }).waitFor();
    await items.filter({ hasText: 'Field “title”' }).getByLabel('Take theirs').check();
    await decision.getByLabel('Edit', { exact: true }).check();
    const box = decision.getByLabel('Your text for Section “Decision”');
    expect(await box.inputValue()).toBe('Use git and Postgres.');
    await box.fill('Use git, with DuckDB and Postgres.');
    const pushes = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Save the resolved page' }).click();
      await heading('Their record').waitFor();
    });
    const resolved = theirs.replace('Use git and DuckDB.', 'Use git, with DuckDB and Postgres.').replace('Intro.', 'Intro, mine.');
    expect(pushes).toEqual([{ message: 'Edit Their record', merge: 'sections', files: [{ path: LOG, content: resolved, parent_sha: bobs }] }]);
    expect((await serverText(LOG))!.text).toBe(resolved);
    expect(await storedDraft(LOG)).toBeNull();
  });

  it('keeps mine for a whole page the server could not merge part by part (no frontmatter)', async () => {
    await push(alice, [{ path: 'notes/plain.md', content: 'one\ntwo\n' }], 'plain');
    await go('#/repo/acme/edit/notes/plain.md');
    await page.locator('.cm-content').waitFor();
    await replaceLine('two', 'two, mine');
    await push(bob, [{ path: 'notes/plain.md', content: 'one\ntwo, theirs\n' }], 'theirs');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const item = page.locator('fieldset.conflict-item');
    await item.waitFor();
    expect(await item.locator('legend').textContent()).toBe('The whole page');
    await item.getByLabel('Keep mine').check();
    await page.getByRole('button', { name: 'Save the resolved page' }).click();
    await heading('plain').waitFor();
    expect((await serverText('notes/plain.md'))!.text).toBe('one\ntwo, mine\n');
  });

  it('creates a page in one step: type, slug, title and text; its path from the client layout; an existing path is refused', async () => {
    await go('#/repo/acme');
    await heading('acme').waitFor();
    await page.getByRole('link', { name: 'New page' }).click();
    await heading('New page in acme').waitFor();
    await page.locator('.cm-content').waitFor();
    expect(await page.getByLabel('Type').inputValue()).toBe('concept');
    await page.getByLabel('Type').selectOption('entity');
    await page.getByLabel('Title').fill('Postgres Database');
    // The slug follows the title until it is typed.
    expect(await page.getByLabel('Slug').inputValue()).toBe('postgres-database');
    await page.getByLabel('Slug').fill('postgres');
    await page.getByText('The page will be wiki/entities/postgres.md.').waitFor();
    await noSeriousAxe('the new page');
    await h.shot('new-page');
    await fits375('new-page');
    // An existing page's path is refused, with a way to it; so is a slug that is no file name.
    await page.getByLabel('Type').selectOption('concept');
    await page.getByLabel('Slug').fill('decision-log');
    await page.getByText('which already exists').waitFor();
    await page.getByRole('button', { name: 'Create page' }).click();
    await page.getByRole('alert').filter({ hasText: `A page already lives at ${LOG}: pick another slug, or edit that page.` }).waitFor();
    await page.getByLabel('Slug').fill('a/b');
    await page.getByRole('button', { name: 'Create page' }).click();
    await page.getByRole('alert').filter({ hasText: '“a/b” cannot be a slug' }).waitFor();
    expect(await serverText(LOG)).not.toBeNull();

    await page.getByLabel('Type').selectOption('entity');
    await page.getByLabel('Slug').fill('postgres');
    await page.getByRole('textbox', { name: 'Page text (Markdown)' }).fill('A relational database.');
    const pushes = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Create page' }).click();
      await heading('Postgres Database').waitFor();
    });
    const content = '---\ntype: entity\ntitle: Postgres Database\n---\nA relational database.';
    // A new page's parent names no commit: a page that appeared at the path meanwhile would be a conflict.
    expect(pushes).toEqual([{ message: 'Create Postgres Database', merge: 'sections', files: [{ path: 'wiki/entities/postgres.md', content, parent_sha: '0'.repeat(40) }] }]);
    expect((await serverText('wiki/entities/postgres.md'))!.text).toBe(content);
    await page.getByRole('status').filter({ hasText: 'Page created.' }).waitFor();
    expect(await storedDraft('/new')).toBeNull();
  });

  it('keeps a new page that was never created as a draft, offered back with its slug', async () => {
    await go('#/repo/acme/new');
    await heading('New page in acme').waitFor();
    await page.locator('.cm-content').waitFor();
    await page.getByLabel('Title').fill('Half written');
    await page.locator('.cm-content').click();
    await page.keyboard.type('Not yet.');
    await expect.poll(async () => (await storedDraft('/new')) ?? '').toContain('Not yet.');
    page.once('dialog', (d) => void d.accept());
    await page.reload();
    await page.getByText('This browser kept a new page that was never created.').waitFor();
    await page.getByRole('button', { name: 'Restore draft' }).click();
    await page.locator('.cm-content').waitFor();
    expect(await page.getByLabel('Slug').inputValue()).toBe('half-written');
    expect(await page.getByLabel('Title').inputValue()).toBe('Half written');
    expect(await editorText()).toBe('Not yet.');
    await page.getByRole('button', { name: 'Discard changes to wiki/concepts/half-written.md' }).click();
    await page.getByRole('button', { name: 'Yes, discard' }).click();
    await heading('acme').waitFor();
    expect(await storedDraft('/new')).toBeNull();
    expect(await serverText('wiki/concepts/half-written.md')).toBeNull();
  });

  it('never overwrites a page created at the same path meanwhile', async () => {
    await go('#/repo/acme/new?type=analysis&slug=race');
    await heading('New page in acme').waitFor();
    await page.locator('.cm-content').waitFor();
    expect(await page.getByLabel('Type').inputValue()).toBe('analysis');
    await page.getByLabel('Title').fill('Race');
    expect(await page.getByLabel('Slug').inputValue()).toBe('race');
    await page.locator('.cm-content').click();
    await page.keyboard.type('Mine.');
    await push(bob, [{ path: 'wiki/analyses/race.md', content: '---\ntype: analysis\ntitle: Race\n---\nTheirs.\n' }], 'race');
    await page.getByRole('button', { name: 'Create page' }).click();
    await page.getByRole('heading', { name: 'This page changed while you were editing it' }).waitFor();
    const item = page.locator('fieldset.conflict-item');
    expect(await item.locator('legend').textContent()).toBe('The whole page');
    // No base: only theirs and mine are shown.
    expect(await item.locator('.side h4').allTextContents()).toEqual(['Theirs (on the server now)', 'Yours']);
    expect(await item.locator('.side pre').allTextContents()).toEqual(['---\ntype: analysis\ntitle: Race\n---\nTheirs.\n', '---\ntype: analysis\ntitle: Race\n---\nMine.']);
    expect((await serverText('wiki/analyses/race.md'))!.text).toContain('Theirs.');
    await item.getByLabel('Take theirs').check();
    await page.getByRole('button', { name: 'Save the resolved page' }).click();
    await heading('Race').waitFor();
    await page.getByRole('status').filter({ hasText: 'Nothing to save' }).waitFor();
    expect((await serverText('wiki/analyses/race.md'))!.text).toBe('---\ntype: analysis\ntitle: Race\n---\nTheirs.\n');
  });

  it('deletes a page after a confirm step; a page that changed since it was opened is not deleted', async () => {
    await push(alice, [{ path: 'notes/old.md', content: 'Old.\n' }], 'old');
    await go('#/repo/acme/page/notes/old.md');
    await heading('old').waitFor();
    await page.getByRole('button', { name: 'Delete page notes/old.md' }).click();
    await page.getByText('Delete notes/old.md? It disappears').waitFor();
    expect(await serverText('notes/old.md')).not.toBeNull();
    await noSeriousAxe('the delete question');
    await page.getByRole('button', { name: 'Yes, delete notes/old.md' }).click();
    await heading('acme').waitFor();
    await page.getByRole('status').filter({ hasText: 'Deleted notes/old.md.' }).waitFor();
    expect(await serverText('notes/old.md')).toBeNull();
    expect(await page.getByRole('link', { name: 'old', exact: true }).count()).toBe(0);

    await push(alice, [{ path: 'notes/stale.md', content: 'One.\n' }], 'stale');
    await go('#/repo/acme/page/notes/stale.md');
    await page.locator('article.markdown').waitFor();
    await push(bob, [{ path: 'notes/stale.md', content: 'Two.\n' }], 'stale again');
    await page.getByRole('button', { name: 'Delete page notes/stale.md' }).click();
    await page.getByRole('button', { name: 'Yes, delete notes/stale.md' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not deleted: the page changed since you opened it' }).waitFor();
    expect((await serverText('notes/stale.md'))!.text).toBe('Two.\n');
  });

  it('never saves a page deleted meanwhile back silently: says who deleted it, and creates it again only on "Re-create page"', async () => {
    const DOOMED = 'wiki/concepts/doomed.md';
    const created = await push(alice, [{ path: DOOMED, content: '---\ntitle: Doomed\n---\nDoomed text.\n' }], 'doomed');
    await go(`#/repo/acme/edit/${DOOMED}`);
    await heading('Edit Doomed').waitFor();
    await page.locator('.cm-content').waitFor();
    await typeAfter('Doomed text.', ' Still wanted.');
    // Bob deletes the page meanwhile.
    const deletion = await push(bob, [{ path: DOOMED, delete: true }], 'retire doomed');

    const saves = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('heading', { name: 'This page was deleted while you were editing it' }).waitFor();
      await page.getByText(`It was deleted on the server by Bob in ${deletion.slice(0, 7)}`).waitFor();
    });
    expect(saves).toEqual([{ message: 'Edit Doomed', merge: 'sections', files: [{ path: DOOMED, content: '---\ntitle: Doomed\n---\nDoomed text. Still wanted.\n', parent_sha: created }] }]);
    expect(await serverText(DOOMED)).toBeNull();
    await noSeriousAxe('a page deleted while edited');
    await h.shot('edit-deleted');

    // Back to editing: the edit is still there; saving again asks again, the page still deleted.
    await page.getByRole('button', { name: 'Back to editing' }).click();
    await page.locator('.cm-content').waitFor();
    expect(await editorText()).toBe('Doomed text. Still wanted.\n');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'This page was deleted while you were editing it' }).waitFor();
    expect(await serverText(DOOMED)).toBeNull();

    // Asked for: the edit is pushed on top of the deletion, and the page exists again.
    const again = await pushesDuring(async () => {
      await page.getByRole('button', { name: 'Re-create page' }).click();
      await heading('Doomed').waitFor();
      await page.getByRole('status').filter({ hasText: 'Page created again.' }).waitFor();
    });
    expect(again).toEqual([{ message: 'Edit Doomed', merge: 'sections', files: [{ path: DOOMED, content: '---\ntitle: Doomed\n---\nDoomed text. Still wanted.\n', parent_sha: deletion }] }]);
    expect((await serverText(DOOMED))!.text).toBe('---\ntitle: Doomed\n---\nDoomed text. Still wanted.\n');
    expect(await storedDraft(DOOMED)).toBeNull();
  });

  it('keeps drafts per user: the next member signing in on the same browser is never offered another one\'s unsaved text', async () => {
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    await page.locator('.cm-line').first().click();
    await page.keyboard.press('End');
    await page.keyboard.type(' Alice private words.');
    const kept = () => page.evaluate(() => Object.entries(localStorage).filter(([k]) => k.startsWith('kr.draft:')).map(([, v]) => v).join('\n'));
    await expect.poll(kept).toContain('Alice private words.');
    // A draft kept before drafts were keyed by user: nobody can say whose it is.
    const unowned = `kr.draft:${JSON.stringify([h.srv.url, 'acme', LOG])}`;
    await page.evaluate((k) => localStorage.setItem(k, JSON.stringify({ text: 'Unowned words.', parentSha: null, savedAt: Date.now() })), unowned);

    // Alice signs out; Bob signs in on the same browser (and the tab is loaded again).
    await go('#/');
    await page.getByRole('heading', { name: 'Repositories', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await h.signInWithToken(bob.pat);
    await page.reload();
    await page.getByRole('heading', { name: 'Repositories', level: 1 }).waitFor();
    await go(`#/repo/acme/page/${LOG}`);
    await page.locator('article.markdown').waitFor();
    expect(await page.getByText('You have unsaved changes to this page in this browser').count()).toBe(0);
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    expect(await page.getByRole('heading', { name: /^Unsaved changes from / }).count()).toBe(0);
    const server = (await serverText(LOG))!.text;
    expect(server).not.toContain('Alice private words.');
    expect(await editorText()).toBe(server.slice(server.indexOf('---\n', 4) + 4));
    // The unowned draft is gone; Alice's is still kept for her, under her own key; Bob has none.
    expect(await draftKeys()).toEqual([draftKey(LOG)]);
    expect(await storedDraft(LOG, bob)).toBeNull();

    // Alice back: her draft is offered to her, and she discards it.
    await go('#/');
    await h.signInWithToken(alice.pat);
    await go(`#/repo/acme/edit/${LOG}`);
    await page.getByRole('heading', { name: /^Unsaved changes from / }).waitFor();
    await page.getByRole('button', { name: 'Restore draft' }).click();
    await page.locator('.cm-content').waitFor();
    expect(await editorText()).toContain(' Alice private words.');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await page.getByRole('button', { name: 'Yes, discard' }).click();
    await heading('Decision record').or(page.getByRole('heading', { level: 1 })).first().waitFor();
    await expect.poll(() => draftKeys()).toEqual([]);
  });

  it('fits 375 px while editing', async () => {
    await go(`#/repo/acme/edit/${LOG}`);
    await page.locator('.cm-content').waitFor();
    await fits375('edit');
  });

  it('logged no console error but the 409s of the conflicts', () => {
    const unexpected = consoleErrors.filter((e) => !(e.url.endsWith('/v1/repos/acme/sync/push') && e.text.includes('409')));
    expect(unexpected).toEqual([]);
  });
});
