/**
 * The project on disk: a `.kr/` folder at the project root (found by walking up from the working
 * directory) holding the page layout (`wiki/concepts/`, `wiki/entities/`, `wiki/analyses/`,
 * `raw/sessions/`) and `.kr/state.json`.
 *
 * state.json, per page path: the sha of the last commit we know the page at (the `parent_sha` of the next
 * push) and the SHA-256 of the content we last pulled or pushed (so "modified" needs no request); plus
 * `head`, the repository head of the last pull (the next pull's `since`), and `repo`, the repository the
 * project is linked to.
 *
 * Server paths map to `.kr/<path>`. Before anything is written or deleted, {@link Project.safeTarget}
 * refuses a path that would land outside `.kr/` — lexically (`..`, absolute, backslash) or through a
 * symbolic link — or on `.kr/state.json` itself.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, realpath, rename, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { PAGE_TYPES, isPageType, isValidSlug, pagePathFor, pageRefOfPath, type PageType } from '../lib/page/parse.ts';
import { storedPathProblem } from '../lib/page/path.ts';
import { refused, usageError } from './errors.ts';
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

export class Project {
  readonly krDir: string;
  readonly statePath: string;
  private realKr: string | null = null;
  /**
   * Page files whose names on disk are not Unicode NFC (a Linux disk keeps the bytes it was given, e.g. a
   * file copied from an old Mac): server path (NFC, as the server requires) → the path as found on disk.
   */
  private readonly diskNames = new Map<string, string>();

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
          ` (run "kr remote set-repo ${this.state.repo}", or use another folder)`,
      );
    }
  }

  /** Reads `.kr/<path>`; null when missing. Non-UTF-8 files are refused (pages are text). */
  async read(pagePath: string): Promise<LocalPage | null> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.fileOf(pagePath));
    } catch (e) {
      if (errnoOf(e) === 'ENOENT' || errnoOf(e) === 'ENOTDIR') return null;
      if (errnoOf(e) === 'EISDIR') return null;
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
   * Every page file of the layout on disk: `*.md` directly in the three wiki folders, any file directly in
   * raw/sessions (dotfiles skipped), as server paths: in Unicode NFC, whatever the form of the name on
   * disk (remembered for fileOf). A file whose NFC twin also exists is left to the twin.
   */
  async layoutPages(types: readonly PageType[] = PAGE_TYPES): Promise<string[]> {
    const found: string[] = [];
    for (const type of types) {
      const dir = join(this.krDir, ...LAYOUT_DIRS[type].split('/'));
      let names: import('node:fs').Dirent[];
      try {
        names = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (errnoOf(e) === 'ENOENT' || errnoOf(e) === 'ENOTDIR') continue;
        throw e;
      }
      const listed = new Set(names.map((d) => d.name));
      for (const d of names) {
        if (!d.isFile() || d.name.startsWith('.')) continue;
        const name = d.name.normalize('NFC');
        if (name !== d.name && listed.has(name)) continue;
        const path = `${LAYOUT_DIRS[type]}/${name}`;
        if (pageRefOfPath(path)?.type !== type) continue;
        if (name !== d.name) this.diskNames.set(path, `${LAYOUT_DIRS[type]}/${d.name}`);
        found.push(path);
      }
    }
    return found.sort();
  }

  /**
   * Where a server path may be written: inside `.kr/`, never `.kr/state.json`, never through a symbolic
   * link that leads out of `.kr/`. Throws a refusal naming the path otherwise.
   */
  async safeTarget(pagePath: string): Promise<string> {
    const problem = storedPathProblem(pagePath);
    if (problem !== null) throw refused(`refusing server path ${JSON.stringify(pagePath)}: it would escape ${KR_DIR}/ (${problem})`);
    const first = pagePath.split('/')[0]!.toLowerCase();
    if (first === STATE_FILE) {
      throw refused(`refusing server path ${JSON.stringify(pagePath)}: it would overwrite ${KR_DIR}/${first}`);
    }
    const target = resolve(this.fileOf(pagePath));
    const rel = relative(this.krDir, target);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw refused(`refusing server path ${JSON.stringify(pagePath)}: it would escape ${KR_DIR}/`);
    }
    this.realKr ??= await realpath(this.krDir);
    // Every existing component below .kr/: a symbolic link must resolve inside .kr/ (the final file too,
    // which also keeps deletions and reads inside).
    let cur = this.krDir;
    for (const part of rel.split(sep)) {
      cur = join(cur, part);
      let st;
      try {
        st = await lstat(cur);
      } catch (e) {
        if (errnoOf(e) === 'ENOENT') break;
        throw e;
      }
      if (st.isSymbolicLink()) {
        let real: string;
        try {
          real = await realpath(cur);
        } catch {
          throw refused(`refusing server path ${JSON.stringify(pagePath)}: ${cur} is a dangling symbolic link`);
        }
        const r = relative(this.realKr, real);
        if (r === '' || r.startsWith('..') || isAbsolute(r)) {
          throw refused(`refusing server path ${JSON.stringify(pagePath)}: ${cur} is a symbolic link leading out of ${KR_DIR}/`);
        }
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
  const root = await findProjectRoot();
  if (!root) throw refused(`not inside a kr project (no ${KR_DIR}/ folder here or above; run "kr init")`);
  const project = new Project(root, await loadState(root));
  // Learns the page files named in another Unicode form than their server path, so that every command
  // reads and writes them under their own name (four directory listings).
  await project.layoutPages();
  return project;
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
 * A slug → its page path, looked up only in the local page directories (SPEC.md diff rule 9). A slug
 * found under two types needs `--type`. A path to a page file (`.kr/wiki/concepts/x.md`) is accepted too.
 */
export async function resolveSlug(project: Project, arg: string, type?: PageType): Promise<string> {
  if (arg.includes('/') || arg.includes(sep)) {
    // A file path (relative to the working directory), else a server page path (`wiki/concepts/x.md`).
    let abs = resolve(arg);
    let rel = relative(project.krDir, abs);
    if (rel.startsWith('..') || isAbsolute(rel)) {
      abs = project.fileOf(arg);
      rel = relative(project.krDir, abs);
    }
    const asPath = rel.split(sep).join('/').normalize('NFC');
    const ref = !rel.startsWith('..') && !isAbsolute(rel) ? pageRefOfPath(asPath) : null;
    if (!ref) throw usageError(`${arg} is not a page file under ${project.display('')}/(wiki/concepts|wiki/entities|wiki/analyses|raw/sessions)`);
    if (type && ref.type !== type) throw usageError(`${arg} is a ${ref.type} page, not a ${type}`);
    if (!(await isFile(abs))) throw refused(`no such page file: ${arg}`);
    return asPath;
  }
  if (!isValidSlug(arg)) throw usageError(`invalid slug: ${JSON.stringify(arg)}`);
  arg = arg.normalize('NFC');
  const types = type ? [type] : PAGE_TYPES;
  const hits: Array<{ type: PageType; path: string }> = [];
  for (const t of types) {
    const path = pagePathFor(t, arg);
    if (await isFile(project.fileOf(path))) hits.push({ type: t, path });
  }
  if (hits.length === 0) {
    const where = types.map((t) => `${KR_DIR}/${LAYOUT_DIRS[t]}`).join(', ');
    throw refused(`no local page "${arg}" in ${where} (run "kr pull" first, or check the slug)`);
  }
  if (hits.length > 1) {
    throw usageError(
      `slug "${arg}" is ambiguous: it exists as ${hits.map((h) => `${h.type} (${h.path})`).join(' and ')}; pass --type ${hits.map((h) => h.type).join('|')}`,
    );
  }
  return hits[0]!.path;
}
