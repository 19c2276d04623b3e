/**
 * Unsaved edits kept in the browser (localStorage), one per (server, signed-in user, repository, page), with
 * the commit the edit started from: a reload, a crash or a closed tab loses nothing, and saving a draft later
 * still names that commit, so the server merges it with whatever changed since instead of overwriting it.
 * The user is part of the key because localStorage outlives a sign-in: whoever signs in next on the same
 * browser is never offered another member's unsaved text. Without a signed-in user nothing is kept or offered.
 */
import { loadSession } from './session.ts';

export interface Draft {
  /** The whole page text as edited. */
  text: string;
  /** The page's last commit when the edit started; null for a page that did not exist. */
  parentSha: string | null;
  /** Unix milliseconds of the last change. */
  savedAt: number;
  /** A new page's slug (its type is in the text): the path it will have. */
  slug?: string;
}

const PREFIX = 'kr.draft:';

/** The draft's storage key, or null when nobody is signed in (no draft then). */
function keyOf(server: string, repo: string, path: string): string | null {
  dropUnowned();
  const user = loadSession()?.user.id;
  return typeof user === 'string' && user !== '' ? `${PREFIX}${JSON.stringify([server, user, repo, path])}` : null;
}

let swept = false;
/**
 * Removes, once per page load, the drafts kept before drafts were keyed by user (`[server, repo, page]`):
 * nobody can say whose they are, so nobody is offered them.
 */
function dropUnowned(): void {
  if (swept) return;
  swept = true;
  try {
    const stale: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      if (k === null || !k.startsWith(PREFIX)) continue;
      let parts: unknown;
      try {
        parts = JSON.parse(k.slice(PREFIX.length));
      } catch {
        parts = null;
      }
      if (!Array.isArray(parts) || parts.length !== 4) stale.push(k);
    }
    for (const k of stale) localStorage.removeItem(k);
  } catch {
    // storage off: nothing kept
  }
}

export function loadDraft(server: string, repo: string, path: string): Draft | null {
  const key = keyOf(server, repo, path);
  if (key === null) return null;
  try {
    const raw = localStorage.getItem(key);
    if (!raw) return null;
    const d = JSON.parse(raw) as Partial<Draft>;
    if (typeof d.text !== 'string' || typeof d.savedAt !== 'number') return null;
    const draft: Draft = { text: d.text, parentSha: typeof d.parentSha === 'string' ? d.parentSha : null, savedAt: d.savedAt };
    if (typeof d.slug === 'string') draft.slug = d.slug;
    return draft;
  } catch {
    return null;
  }
}

/** Keeps the draft; false when the browser refused (storage full or off), so the editor can say so. */
export function saveDraft(server: string, repo: string, path: string, draft: Draft): boolean {
  const key = keyOf(server, repo, path);
  if (key === null) return false;
  try {
    localStorage.setItem(key, JSON.stringify(draft));
    return true;
  } catch {
    return false;
  }
}

export function clearDraft(server: string, repo: string, path: string): void {
  const key = keyOf(server, repo, path);
  if (key === null) return;
  try {
    localStorage.removeItem(key);
  } catch {
    // nothing kept
  }
}
