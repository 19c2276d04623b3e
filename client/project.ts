/**
 * The project on disk: a `.kr/` folder at the project root (found by walking up from the working
 * directory) holding the page layout (`wiki/concepts/`, `wiki/entities/`, `wiki/analyses/`,
 * `raw/sessions/`) and `.kr/state.json`.
 *
 * state.json, per page path: the sha of the last commit we know the page at (the `parent_sha` of the next
 * push) and the SHA-256 of the content we last pulled or pushed (so "modified" needs no request); plus
 * `head`, the repository head of the last pull (the next pull's `since`) and `pulled_at`, when that pull
 * was (Unix seconds); `pushed`, the commit and time of the last push that made one (a push does not move
 * `head`: other people's commits before it were not pulled); and `repo`, the repository the project is
 * linked to: the folder's current repository.
 *
 * Which files are pages (one path rule everywhere): every regular file under `.kr/` whose path
 * the server accepts for a write (lib/core/page/path.ts pagePathProblem, the server's own rule), plus every page
 * already tracked in state.json. Not pages: `.kr/state.json`, names starting with `.` (hidden files, editor
 * and kr's own temporary files) unless tracked. Files the server would refuse — a Windows device name, a
 * character Windows forbids, a name that differs only in letter case from another page, an NFD twin of an
 * NFC name, a symbolic link — are listed in {@link Project.skipped} with the reason, and never sent.
 *
 * Server paths map to `.kr/<path>`. Before anything is written or deleted, {@link Project.safeTarget}
 * refuses a path that would land outside `.kr/` — lexically (`..`, absolute, backslash) or through a
 * symbolic link — or on `.kr/state.json` itself. Reads ({@link Project.read}) get the same containment
 * check, and read only regular files: a page file that is a symbolic link (wherever it points), a FIFO or a
 * device is refused, so nothing outside `.kr/` is ever read as a page (and shown, diffed or sent).
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile, readdir, realpath, rename, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import * as z from 'zod';
import { PAGE_TYPES, isPageType, isValidSlug, pagePathFor, typeOfPath, type PageType } from '../lib/core/page/parse.ts';
import { foldPathCase, pagePathProblem, storedPathProblem } from '../lib/core/page/path.ts';
import { CliError, refused, usageError } from './errors.ts';
import { writeJsonAtomic } from './config.ts';

export const KR_DIR = '.kr';
export const STATE_FILE = 'state.json';
/** The layout directories, in PAGE_TYPES order. */
export const LAYOUT_DIRS: Record<PageType, string> = {
  concept: 'wiki/concepts',
  entity: 'wiki/entities',
  analysis: 'wiki/analyses',
  source: 'raw/sessions',
};

const PageState = z.object({ sha: z.string(), hash: z.string() });
export type PageState = z.infer<typeof PageState>;
const StateFile = z.object({
  version: z.literal(1),
  repo: z.string().optional(),
  head: z.string(),
  pulled_at: z.number().optional(),
  pushed: z.object({ head: z.string(), at: z.number() }).optional(),
  pages: z.record(z.string(), PageState),
});
export type StateFile = z.infer<typeof StateFile>;

const emptyState = (): StateFile => ({ version: 1, head: '', pages: {} });

export const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

const errnoOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | null)?.code;

export interface LocalPage {
  path: string;
  text: string;
  hash: string;
}

/** A file under `.kr/` that is not treated as a page, and why. */
export interface SkippedFile {
  /** The file, relative to `.kr/`, as named on disk. */
  file: string;
  reason: string;
}

/** Deepest folder nesting under `.kr/` that is scanned for pages. */
const MAX_SCAN_DEPTH = 32;

export class Project {
  readonly krDir: string;
  readonly statePath: string;
  private realKr: string | null = null;
  /**
   * Page files whose names on disk are not Unicode NFC (a Linux disk keeps the bytes it was given, e.g. a
   * file copied from an old Mac): server path (NFC, as the server requires) → the path as found on disk.
   */
  private readonly diskNames = new Map<string, string>();
  /** The page files found by the last {@link Project.scan} (server paths, sorted). */
  private found: string[] = [];
  /** Files under `.kr/` that the last scan did not take as pages, with the reason. */
  skipped: SkippedFile[] = [];

  constructor(
    readonly root: string,
    public state: StateFile,
  ) {
    this.krDir = join(root, KR_DIR);
    this.statePath = join(this.krDir, STATE_FILE);
  }

  /** `.kr/<path>`, under the file's own name when it is not NFC on disk (lexical; see safeTarget before writing). */
  fileOf(pagePath: string): string {
    return join(this.krDir, ...(this.diskNames.get(pagePath) ?? pagePath).split('/'));
  }

  async save(): Promise<void> {
    const pages = Object.fromEntries(Object.entries(this.state.pages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    await writeJsonAtomic(this.statePath, { ...this.state, pages }, 0o644);
  }

  /**
   * Links the project to a repository on first use; afterwards a different repository is refused, so
   * one repository's shas never end up as another's parents.
   */
  checkRepo(repo: string): void {
    if (this.state.repo === undefined) {
      this.state.repo = repo;
      return;
    }
    if (this.state.repo !== repo) {
      throw refused(
        `this project (${this.krDir}) is linked to repository "${this.state.repo}", not "${repo}"` +
          ` (each folder has its own repository: for ${repo}, use another folder: mkdir ${repo} && cd ${repo} && kr init --repo ${repo})`,
        'repo_mismatch',
      );
    }
  }

  /** Whether the folder has synced anything yet (a pull or a push): then its repository is fixed. */
  get synced(): boolean {
    return this.state.head !== '' || this.state.pushed !== undefined || Object.keys(this.state.pages).length > 0;
  }

  /**
   * Reads `.kr/<path>`; null when missing. Refused: a path that leads out of `.kr/` (the check writes get,
   * {@link Project.contained}), a file that is a symbolic link or not a regular file, and non-UTF-8 files
   * (pages are text).
   */
  async read(pagePath: string): Promise<LocalPage | null> {
    const file = await this.contained(pagePath, `refusing to read ${this.display(pagePath)}`, 'reads');
    let bytes: Buffer;
    try {
      // O_NOFOLLOW: a link swapped in after the check above is refused too; O_NONBLOCK: a FIFO does not hang.
      const handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
      try {
        const st = await handle.stat();
        if (st.isDirectory()) return null;
        if (!st.isFile()) throw refused(`refusing to read ${this.display(pagePath)}: not a regular file (kr reads only regular files under ${KR_DIR}/)`);
        bytes = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (e) {
      if (e instanceof CliError) throw e;
      if (errnoOf(e) === 'ENOENT' || errnoOf(e) === 'ENOTDIR') return null;
      if (errnoOf(e) === 'EISDIR') return null;
      if (errnoOf(e) === 'ELOOP') throw refused(`refusing to read ${this.display(pagePath)}: it is a symbolic link (kr reads only regular files under ${KR_DIR}/)`);
      throw refused(`cannot read ${this.display(pagePath)}: ${(e as Error).message}`);
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw refused(`${this.display(pagePath)} is not UTF-8 text`);
    }
    return { path: pagePath, text, hash: sha256(bytes) };
  }

  /** A path relative to the working directory, for messages. */
  display(pagePath: string): string {
    const rel = relative(process.cwd(), this.fileOf(pagePath));
    return rel === '' ? '.' : rel;
  }

  /**
   * Finds the page files under `.kr/` (see the module comment), as server paths: in Unicode NFC, whatever
   * the form of the name on disk (remembered for fileOf). Fills {@link Project.skipped}.
   */
  async scan(): Promise<string[]> {
    const tracked = new Set(Object.keys(this.state.pages));
    const trackedDirs = new Set<string>();
    for (const t of tracked) for (let i = t.indexOf('/'); i >= 0; i = t.indexOf('/', i + 1)) trackedDirs.add(t.slice(0, i + 1));
    const onDisk: Array<{ path: string; disk: string }> = [];
    const skipped: SkippedFile[] = [];
    const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (errnoOf(e) === 'ENOENT' || errnoOf(e) === 'ENOTDIR') return;
        throw refused(`cannot list ${dir}: ${(e as Error).message}`);
      }
      for (const d of entries) {
        const disk = prefix + d.name;
        if (prefix === '' && d.name === STATE_FILE) continue;
        if (d.name.startsWith('.')) {
          const nfc = disk.normalize('NFC');
          if (!tracked.has(nfc) && !trackedDirs.has(nfc + '/')) continue;
        }
        if (d.isSymbolicLink()) {
          skipped.push({ file: disk, reason: 'a symbolic link (kr sends only regular files)' });
        } else if (d.isDirectory()) {
          if (depth >= MAX_SCAN_DEPTH) skipped.push({ file: disk + '/', reason: `folders nested deeper than ${MAX_SCAN_DEPTH}` });
          else await walk(join(dir, d.name), disk + '/', depth + 1);
        } else if (d.isFile()) {
          onDisk.push({ path: disk.normalize('NFC'), disk });
        }
      }
    };
    this.diskNames.clear();
    await walk(this.krDir, '', 0);
    const exact = new Set(onDisk.filter((f) => f.path === f.disk).map((f) => f.path));
    // Case twins: a path that folds to the key of a tracked page or of an earlier accepted one.
    const folds = new Map<string, string>();
    for (const t of tracked) folds.set(foldPathCase(t), t);
    const found = new Set<string>();
    for (const f of onDisk.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      if (f.path !== f.disk && exact.has(f.path)) {
        skipped.push({ file: f.disk, reason: `the same name as ${f.path} once in Unicode NFC (keep one of the two)` });
        continue;
      }
      if (!tracked.has(f.path)) {
        const problem = pagePathProblem(f.path);
        if (problem !== null) {
          skipped.push({ file: f.disk, reason: `${problem}: the server refuses this page path` });
          continue;
        }
        const key = foldPathCase(f.path);
        const twin = folds.get(key);
        if (twin !== undefined && twin !== f.path) {
          skipped.push({ file: f.disk, reason: `differs only in letter case from ${twin} (one file on macOS and Windows)` });
          continue;
        }
        folds.set(key, f.path);
      }
      if (f.path !== f.disk) this.diskNames.set(f.path, f.disk);
      found.add(f.path);
    }
    this.found = [...found].sort();
    this.skipped = skipped.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    return this.found;
  }

  /** The page files of the last scan, optionally of some page types only. */
  localPages(types?: readonly PageType[]): string[] {
    if (!types) return [...this.found];
    return this.found.filter((p) => {
      const t = typeOfPath(p);
      return t !== null && types.includes(t);
    });
  }

  /** Whether a server path has a file in the project (as found by the last scan). */
  hasFile(pagePath: string): boolean {
    return this.found.includes(pagePath);
  }

  /**
   * Where a server path may be written: inside `.kr/`, never `.kr/state.json`, never through a symbolic
   * link that leads out of `.kr/`. Throws a refusal naming the path otherwise.
   */
  async safeTarget(pagePath: string): Promise<string> {
    const first = pagePath.split('/')[0]!.toLowerCase();
    if (storedPathProblem(pagePath) === null && first === STATE_FILE) {
      throw refused(`refusing server path ${JSON.stringify(pagePath)}: it would overwrite ${KR_DIR}/${first}`);
    }
    return this.contained(pagePath, `refusing server path ${JSON.stringify(pagePath)}`, 'writes');
  }

  /**
   * `.kr/<path>` when it stays inside `.kr/`: lexically (no `..`, absolute path or backslash), and through
   * every existing component, each symbolic link resolving inside `.kr/`. For reads the final file may not
   * be a symbolic link at all. Throws a refusal starting with `refusing` otherwise.
   */
  private async contained(pagePath: string, refusing: string, use: 'reads' | 'writes'): Promise<string> {
    const problem = storedPathProblem(pagePath);
    if (problem !== null) throw refused(`${refusing}: it would escape ${KR_DIR}/ (${problem})`);
    const target = resolve(this.fileOf(pagePath));
    const rel = relative(this.krDir, target);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw refused(`${refusing}: it would escape ${KR_DIR}/`);
    }
    try {
      this.realKr ??= await realpath(this.krDir);
    } catch (e) {
      // No .kr/ at all: nothing to read there (a write fails on it as before).
      if (use === 'reads' && errnoOf(e) === 'ENOENT') return target;
      throw e;
    }
    // Every existing component below .kr/: a symbolic link must resolve inside .kr/ (the final file too,
    // which also keeps deletions inside).
    const parts = rel.split(sep);
    let cur = this.krDir;
    for (const [i, part] of parts.entries()) {
      cur = join(cur, part);
      let st;
      try {
        st = await lstat(cur);
      } catch (e) {
        if (errnoOf(e) === 'ENOENT' || (use === 'reads' && errnoOf(e) === 'ENOTDIR')) break;
        throw e;
      }
      if (!st.isSymbolicLink()) continue;
      if (use === 'reads' && i === parts.length - 1) {
        throw refused(`${refusing}: ${cur} is a symbolic link (kr reads only regular files under ${KR_DIR}/)`);
      }
      let real: string;
      try {
        real = await realpath(cur);
      } catch {
        throw refused(`${refusing}: ${cur} is a dangling symbolic link`);
      }
      const r = relative(this.realKr, real);
      if (r === '' || r.startsWith('..') || isAbsolute(r)) {
        throw refused(`${refusing}: ${cur} is a symbolic link leading out of ${KR_DIR}/`);
      }
    }
    return target;
  }

  /** Writes a page through a temporary file and a rename (the target must come from safeTarget). */
  async writePage(target: string, text: string): Promise<void> {
    await mkdir(dirname(target), { recursive: true });
    const tmp = join(dirname(target), `.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await writeFile(tmp, text, { flag: 'wx' });
      await rename(tmp, target);
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
  }

  /** Deletes a page file (target from safeTarget) and prunes now-empty folders outside the layout. */
  async deletePage(target: string): Promise<void> {
    try {
      await unlink(target);
    } catch (e) {
      if (errnoOf(e) !== 'ENOENT') throw e;
    }
    const keep = new Set([this.krDir, ...Object.values(LAYOUT_DIRS).flatMap((d) => [join(this.krDir, ...d.split('/')), join(this.krDir, d.split('/')[0]!)])]);
    let dir = dirname(target);
    while (!keep.has(dir) && dir.startsWith(this.krDir + sep)) {
      try {
        await rmdir(dir);
      } catch {
        break;
      }
      dir = dirname(dir);
    }
  }
}

/** Walks up from `cwd` to the first folder holding `.kr/`. */
export async function findProjectRoot(cwd = process.cwd()): Promise<string | null> {
  let dir = resolve(cwd);
  for (;;) {
    try {
      const st = await lstat(join(dir, KR_DIR));
      if (st.isDirectory() || st.isSymbolicLink()) return dir;
    } catch {
      // keep walking
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

export async function loadState(root: string): Promise<StateFile> {
  const path = join(root, KR_DIR, STATE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return emptyState();
    throw refused(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    const parsed = StateFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'unexpected content');
    return parsed.data;
  } catch (e) {
    throw refused(`cannot read ${path}: ${(e as Error).message} (delete it and run "kr pull --full" to rebuild it)`);
  }
}

/** The project around the working directory, or a refusal that says to run `kr init`. */
export async function openProject(): Promise<Project> {
  const project = await findProject();
  if (!project) throw refused(`not inside a kr project (no ${KR_DIR}/ folder here or above; run "kr init")`, 'no_project');
  return project;
}

/** The project around the working directory, or null outside any. */
export async function findProject(): Promise<Project | null> {
  const root = await findProjectRoot();
  if (!root) return null;
  const project = new Project(root, await loadState(root));
  // Finds the page files, and learns those named in another Unicode form than their server path, so that
  // every command reads and writes them under their own name.
  await project.scan();
  return project;
}

/** `.kr/.gitignore`, which `kr init` writes: what a project folder holds that is one person's, not the team's. */
export const GITIGNORE_FILE = '.gitignore';
export const GITIGNORE_TEXT = [
  '# Written by "kr init". Commit the pages (wiki/, raw/); what is listed here is per person and stays out of git.',
  '# What this folder last synced, and with which repository (each clone has its own):',
  STATE_FILE,
  `${STATE_FILE}.*`,
  '# Caches, locks and the temporary files of an interrupted write:',
  'cache/',
  '*.lock',
  '*.tmp',
  '',
].join('\n');

/** Writes `.kr/.gitignore` unless there is one (a project's own edits are kept); returns whether it wrote it. */
export async function writeGitignore(root: string): Promise<boolean> {
  try {
    await writeFile(join(root, KR_DIR, GITIGNORE_FILE), GITIGNORE_TEXT, { flag: 'wx' });
    return true;
  } catch (e) {
    if (errnoOf(e) === 'EEXIST') return false;
    throw e;
  }
}

/** `kr init`: the layout and an empty state file in `dir`; returns false when it was there already. */
export async function initProject(dir: string): Promise<{ root: string; created: boolean }> {
  const existing = await findProjectRoot(dir);
  const root = existing ?? resolve(dir);
  for (const d of Object.values(LAYOUT_DIRS)) await mkdir(join(root, KR_DIR, ...d.split('/')), { recursive: true });
  const statePath = join(root, KR_DIR, STATE_FILE);
  let created = false;
  try {
    await writeFile(statePath, JSON.stringify(emptyState(), null, 2) + '\n', { flag: 'wx' });
    created = true;
  } catch (e) {
    if (errnoOf(e) !== 'EEXIST') throw e;
  }
  await writeGitignore(root);
  return { root, created };
}

export function parseType(raw: string | undefined): PageType | undefined {
  if (raw === undefined) return undefined;
  if (!isPageType(raw)) throw usageError(`unknown page type: ${raw} (expected one of ${PAGE_TYPES.join(', ')})`);
  return raw;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * How a page argument is checked: `read` accepts any valid page path (the server says whether it has the
 * page); `local` wants a page of the project: a file under `.kr/` or a page tracked in state.json (one
 * deleted locally included, so that pushing it deletes it on the server).
 */
export type PageArgMode = 'read' | 'local';

/**
 * A page argument → its server path. A slug (`decision-log`) is looked up only in the local page folders
 * (docs/cli.md "A walk through the two-user loop"), tracked pages included; a slug found under two types needs `--type`. Anything with
 * a `/` is a path: a file under `.kr/` relative to the working directory (`.kr/wiki/concepts/x.md`), else
 * a server path (`wiki/concepts/x.md`, any folder). Without a project (null) only server paths are
 * accepted.
 */
export async function resolvePage(project: Project | null, arg: string, type: PageType | undefined, mode: PageArgMode): Promise<string> {
  if (arg.includes('/') || arg.includes(sep)) {
    let path: string | null = null;
    if (project) {
      const rel = relative(project.krDir, resolve(arg));
      if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) path = rel.split(sep).join('/');
    }
    path = (path ?? arg.replace(/^\.\/+/, '')).normalize('NFC');
    const problem = storedPathProblem(path);
    if (problem !== null) throw usageError(`not a page path: ${JSON.stringify(arg)} (${problem})`);
    if (type && typeOfPath(path) !== type) throw usageError(`${arg} is not a ${type} page (those are under ${LAYOUT_DIRS[type]}/)`);
    if (mode === 'local') {
      if (!project) throw refused(`not inside a kr project (no ${KR_DIR}/ folder here or above; run "kr init")`, 'no_project');
      if (!project.hasFile(path) && !project.state.pages[path] && !(await isFile(project.fileOf(path)))) {
        throw refused(`no such page in ${project.display('')}: ${arg} (neither a file there nor a page kr tracks)`, 'no_page');
      }
    }
    return path;
  }
  arg = arg.normalize('NFC');
  if (!isValidSlug(arg)) throw usageError(`invalid slug: ${JSON.stringify(arg)} (a slug names one page file, <slug>.md, under the server's page path rules)`);
  if (!project) {
    throw refused(
      `slugs are looked up in the local ${KR_DIR}/ folder, and there is none here: give the page path instead (e.g. wiki/concepts/${arg}.md; "kr pages" lists them)`,
      'no_project',
    );
  }
  const types = type ? [type] : PAGE_TYPES;
  const hits: Array<{ type: PageType; path: string }> = [];
  for (const t of types) {
    let path: string;
    try {
      path = pagePathFor(t, arg);
    } catch {
      continue; // a slug that this type's layout cannot hold (a source page name ending in a period)
    }
    if (project.hasFile(path) || project.state.pages[path] || (await isFile(project.fileOf(path)))) hits.push({ type: t, path });
  }
  if (hits.length === 0) {
    const where = types.map((t) => `${KR_DIR}/${LAYOUT_DIRS[t]}`).join(', ');
    throw refused(`no local page "${arg}" in ${where} (run "kr pull" first, or check the slug)`, 'no_page');
  }
  if (hits.length > 1) {
    throw usageError(
      `slug "${arg}" is ambiguous: it exists as ${hits.map((h) => `${h.type} (${h.path})`).join(' and ')}; pass --type ${hits.map((h) => h.type).join('|')}`,
    );
  }
  return hits[0]!.path;
}

/** {@link resolvePage} of a page of the project (a file or a tracked page). */
export const resolveSlug = (project: Project, arg: string, type?: PageType): Promise<string> => resolvePage(project, arg, type, 'local');
