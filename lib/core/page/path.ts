/**
 * Page path and repository id rules (docs/concepts.md "Pages and paths", "Repositories"). The git store applies
 * them itself, so nothing that could escape the data root ever reaches the filesystem.
 *
 * Beyond escaping, a page path must be one that git itself accepts and that every client can check out:
 * whatever is pushed, `git fsck --strict` passes and `git clone` checks it out on Linux, macOS and
 * Windows. The segment rules follow git's own checks (git/git, read-cache.c `verify_path` and
 * `verify_dotfile`, path.c `is_ntfs_dotgit` and `is_ntfs_dot_generic`, utf8.c `is_hfs_dot_generic`,
 * compat/mingw.c `is_valid_win32_path`): `git fsck` applies the `.git` ones to every tree on every
 * platform, `git checkout` applies them to every path, and Windows refuses the rest.
 */

/** The longest page path, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 512;
/** The longest file name that ext4, APFS and NTFS all hold, in UTF-8 bytes: git could not check out a longer one. */
const MAX_SEGMENT_BYTES = 255;
const encoder = new TextEncoder();

/**
 * Code points HFS+ ignores in file names (utf8.c `next_hfs_char`): `.g\u200Cit` is `.git` on a Mac.
 */
const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/** ASCII-only lowercase, as git's strncasecmp/tolower compare these names. */
const asciiLower = (s: string): string => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

/**
 * utf8.c `is_hfs_dot_generic`: the segment, once HFS-ignorable code points are dropped, is `.` and the
 * needle in any ASCII case.
 */
function isHfsDot(segment: string, needle: string): boolean {
  const s = segment.replace(HFS_IGNORABLE, '');
  // Only ASCII folds here, as in git (which gives up on a non-ASCII code point).
  return s.length === needle.length + 1 && s[0] === '.' && asciiLower(s.slice(1)) === needle;
}

/** path.c `only_spaces_and_periods`: from `i` on, spaces and periods up to the end or an NTFS stream (`:`). */
function onlySpacesAndPeriods(segment: string, i: number): boolean {
  for (; i < segment.length; i++) {
    const c = segment[i];
    if (c === ':') return true;
    if (c !== ' ' && c !== '.') return false;
  }
  return true;
}

/**
 * path.c `is_ntfs_dotgit`: `.git` or its short name `git~1`, any case, followed only by spaces and
 * periods (Windows strips them) up to the end or an alternate data stream (`.git::$INDEX_ALLOCATION`).
 */
function isNtfsDotGit(segment: string): boolean {
  const lower = asciiLower(segment.slice(0, 5));
  if (lower.startsWith('.git')) return onlySpacesAndPeriods(segment, 4);
  if (lower === 'git~1') return onlySpacesAndPeriods(segment, 5);
  return false;
}

/**
 * path.c `is_ntfs_dot_generic`: `.<name>` followed only by spaces and periods; the regular NTFS short name
 * (the first six characters of the name, `~1`…`~4`); or a fall-back short name made of the first
 * characters of `shortPrefix`, `~`, and digits, eight characters in all (`gi7eba~1`).
 */
function isNtfsDot(segment: string, name: string, shortPrefix: string): boolean {
  const at = (i: number): string => segment[i] ?? '';
  if (at(0) === '.' && asciiLower(segment.slice(1, 1 + name.length)) === name) {
    return onlySpacesAndPeriods(segment, 1 + name.length);
  }
  if (asciiLower(segment.slice(0, 6)) === name.slice(0, 6) && at(6) === '~' && at(7) >= '1' && at(7) <= '4') {
    return onlySpacesAndPeriods(segment, 8);
  }
  let sawTilde = false;
  for (let i = 0; i < 8; i++) {
    const c = at(i);
    if (c === '') return false;
    if (sawTilde) {
      if (c < '0' || c > '9') return false;
    } else if (c === '~') {
      i += 1;
      if (at(i) < '1' || at(i) > '9') return false;
      sawTilde = true;
    } else if (i >= 6) {
      return false;
    } else if (asciiLower(c) !== shortPrefix[i]) {
      return false;
    }
  }
  return onlySpacesAndPeriods(segment, 8);
}

/**
 * Windows device names (compat/mingw.c `is_valid_win32_path`), any case, followed by nothing, spaces,
 * an extension or a stream: `CON`, `nul.md`, `Com1 .txt`, `aux:x`. git checks AUX, CON, CONIN$, CONOUT$,
 * NUL, PRN, COM1–COM9 and LPT0–LPT9; Windows also reserves COM0 and COM/LPT with the superscript digits
 * ¹ ² ³ (Microsoft's "Naming Files, Paths, and Namespaces"), refused here too.
 */
const WINDOWS_DEVICE = /^(?:AUX|CON|CONIN\$|CONOUT\$|NUL|PRN|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3]) *(?:[.:]|$)/i;

/**
 * Why a page path may not be written (created or given new content), or null when it is acceptable: the
 * whole rule set, so that whatever is pushed passes `git fsck --strict` and checks out everywhere.
 */
export function pagePathProblem(path: unknown): string | null {
  const base = storedPathProblem(path);
  if (base !== null) return base;
  const p = path as string;
  // One spelling per name: macOS would otherwise show `café` (NFC) and `café` (NFD) as one file.
  if (p.normalize('NFC') !== p) return 'not Unicode NFC';
  for (const segment of p.split('/')) {
    const problem = segmentProblem(segment);
    if (problem !== null) return problem;
  }
  return null;
}

/**
 * Why a path cannot name a page at all, or null: the rules that keep a path inside its repository and
 * inside `.kr/` on a client (no traversal, no control characters, no `.git` segment). Reads and deletions
 * use these alone, so a page stored before the stricter write rules existed (a `CON.md`, an NFD name) can
 * still be read and deleted.
 */
export function storedPathProblem(path: unknown): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'empty';
  // A UTF-16 code unit is at most 3 UTF-8 bytes: only long paths need encoding to be measured.
  if (path.length * 3 > MAX_PATH_BYTES && encoder.encode(path).length > MAX_PATH_BYTES) return 'longer than 512 bytes';
  // C0 controls, DEL and C1 controls; lone surrogates cannot be stored as UTF-8 either.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(path)) return 'control character';
  if (/[\ud800-\udfff]/.test(path.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) return 'invalid unicode';
  if (path.includes('\\')) return 'backslash';
  if (path.startsWith('/')) return 'leading slash';
  for (const segment of path.split('/')) {
    // verify_path: no empty segment (`a//b`, trailing `/`), no `.` or `..`.
    if (segment === '' || segment === '.' || segment === '..') return 'empty, . or .. segment';
    // Would read as an option to git and other tools.
    if (segment.startsWith('-')) return 'segment starts with -';
    // verify_dotfile: `.git` in any case.
    if (segment.toLowerCase() === '.git') return '.git segment';
  }
  return null;
}

/** The write-only rules of one segment (the stored-path rules have passed). */
function segmentProblem(segment: string): string | null {
  if (segment.length * 3 > MAX_SEGMENT_BYTES && encoder.encode(segment).length > MAX_SEGMENT_BYTES) {
    return 'segment longer than 255 bytes';
  }
  if (isNtfsDotGit(segment)) return '.git segment (NTFS spelling)';
  if (isHfsDot(segment, 'git')) return '.git segment (HFS spelling)';
  if (isHfsDot(segment, 'gitmodules') || isNtfsDot(segment, 'gitmodules', 'gi7eba')) return '.gitmodules segment';
  if (isHfsDot(segment, 'gitattributes') || isNtfsDot(segment, 'gitattributes', 'gi7d29')) return '.gitattributes segment';
  // is_valid_win32_path: a device name, with or without an extension.
  if (WINDOWS_DEVICE.test(segment)) return 'Windows device name';
  // is_valid_win32_path: characters no Windows file name may hold (`:` also names an NTFS stream).
  if (/[:<>"|?*]/.test(segment)) return 'character not allowed on Windows';
  // is_valid_win32_path: Windows strips trailing spaces and periods, so `a.` would be `a`.
  if (/[. ]$/.test(segment)) return 'ends with a space or period';
  return null;
}

/**
 * The key under which two page paths name the same file on a case-insensitive disk (macOS, Windows): a
 * new path whose key equals a different existing path's is refused. Unicode-aware, not ASCII-only:
 * each code point is upper-cased then lower-cased on its own (no context such as the Greek final sigma),
 * which folds `ß`/`SS`, `ς`/`σ`, `ſ`/`s` together the way full case folding does, and also `ı`/`i` as
 * Windows' upper-case table does; the result is then NFC. Errs towards refusing: it may give one key to two
 * names that one of those systems keeps apart.
 */
export function foldPathCase(path: string): string {
  const nfc = path.normalize('NFC');
  if (/^[\x00-\x7f]*$/.test(nfc)) return nfc.toLowerCase();
  let out = '';
  for (const ch of nfc) out += ch.toUpperCase().toLowerCase();
  return out.normalize('NFC');
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
