/**
 * Unsaved edits kept in the browser (localStorage), one per (server, repository, page), with the commit the
 * edit started from: a reload, a crash or a closed tab loses nothing, and saving a draft later still names
 * that commit, so the server merges it with whatever changed since instead of overwriting it.
 */

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

const keyOf = (server: string, repo: string, path: string) => `${PREFIX}${JSON.stringify([server, repo, path])}`;

export function loadDraft(server: string, repo: string, path: string): Draft | null {
  try {
    const raw = localStorage.getItem(keyOf(server, repo, path));
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
  try {
    localStorage.setItem(keyOf(server, repo, path), JSON.stringify(draft));
    return true;
  } catch {
    return false;
  }
}

export function clearDraft(server: string, repo: string, path: string): void {
  try {
    localStorage.removeItem(keyOf(server, repo, path));
  } catch {
    // nothing kept
  }
}
