/**
 * Page path and repository id rules (API.md "Pages and sync", "Repositories"). The git store applies
 * them itself, so nothing that could escape the data root ever reaches the filesystem.
 */

const MAX_PATH_BYTES = 512;
const encoder = new TextEncoder();

/** Why a page path is refused, or null when it is acceptable. */
export function pagePathProblem(path: unknown): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'empty';
  // A UTF-16 code unit is at most 3 UTF-8 bytes: only long paths need encoding to be measured.
  if (path.length * 3 > MAX_PATH_BYTES && encoder.encode(path).length > MAX_PATH_BYTES) return 'longer than 512 bytes';
  // C0 controls, DEL and C1 controls; lone surrogates cannot be stored as UTF-8 either.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(path)) return 'control character';
  if (/[\ud800-\udfff]/.test(path.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) return 'invalid unicode';
  if (path.includes('\\')) return 'backslash';
  if (path.startsWith('/')) return 'leading slash';
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') return 'empty, . or .. segment';
    if (segment.startsWith('-')) return 'segment starts with -';
    if (segment.toLowerCase() === '.git') return '.git segment';
  }
  return null;
}

export const isValidPagePath = (path: unknown): path is string => pagePathProblem(path) === null;

/** The create route's pattern. */
export const REPO_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Ids from every other route are stripped to `[A-Za-z0-9_-]`; null when nothing usable is left. */
export function stripRepoId(raw: string): string | null {
  const stripped = raw.replace(/[^A-Za-z0-9_-]/g, '');
  if (stripped.length === 0 || stripped.length > 64) return null;
  return stripped;
}

/** What the store accepts as a repository directory name. */
export const isSafeRepoId = (id: unknown): id is string =>
  typeof id === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(id);
