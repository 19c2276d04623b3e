/**
 * Page paths that break git or cannot exist on a client's disk (docs/concepts.md "Pages and paths"), Unicode NFC, and
 * paths that differ only in letter case. The table below is git's own path rules (read-cache.c
 * `verify_path`/`verify_dotfile`, path.c `is_ntfs_dotgit`/`is_ntfs_dot_generic`, utf8.c
 * `is_hfs_dot_generic`, compat/mingw.c `is_valid_win32_path`) plus ours; where the git on this machine
 * can judge a row, the real `git` command is asked too. End to end against the real server: every refused
 * row → 400 and nothing written; every accepted row pushed together → `git fsck --strict` passes and
 * `git clone` checks every file out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { foldPathCase, pagePathProblem } from '../../lib/core/page/path.ts';
import { fsck, gitIn, tempDir } from '../helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer } from '../helpers/idp.ts';
import { krUser, show } from '../helpers/cli.ts';

/**
 * How the real git can confirm a refused row: `path` — `git update-index` (verify_path, with
 * core.protectHFS and core.protectNTFS on) refuses it; `modules`/`attributes` — `git fsck --strict` treats
 * a file of that name as .gitmodules/.gitattributes (and so fails on a bad one); `windows` — only Windows
 * refuses it (compat/mingw.c, not built into this git); `ours` — our rule alone.
 */
type Oracle = 'path' | 'modules' | 'attributes' | 'windows' | 'ours';
type Refused = [path: string, reason: string, oracle: Oracle];

const REFUSED: Refused[] = [
  // Ours (docs/concepts.md "Pages and paths"): empty, too long, control characters, broken UTF-16, backslash.
  ['', 'empty', 'ours'],
  ['x'.repeat(513), 'longer than 512 bytes', 'ours'],
  [`${'é'.repeat(120)}/${'é'.repeat(120)}/${'é'.repeat(17)}`, 'longer than 512 bytes', 'ours'],
  ['a\u0000b.md', 'control character', 'ours'], // C0 (git: NUL ends the name)
  ['a\nb.md', 'control character', 'ours'], // C0 (Windows: 1–31 illegal)
  ['a\u001fb.md', 'control character', 'ours'],
  ['a\u007fb.md', 'control character', 'ours'], // DEL
  ['a\u0085b.md', 'control character', 'ours'], // C1
  ['a\ud800b.md', 'invalid unicode', 'ours'], // a lone surrogate has no UTF-8 form
  ['b\udc00.md', 'invalid unicode', 'ours'],
  // Ours: Unicode NFC only (macOS would show both forms as one file).
  ['cafe\u0301.md', 'not Unicode NFC', 'ours'], // NFD é
  ['wiki/\u212bngstr\u00f6m.md', 'not Unicode NFC', 'ours'], // ANGSTROM SIGN, NFC is U+00C5
  ['a\\b.md', 'backslash', 'ours'], // a separator on Windows (verify_path refuses it there)
  // verify_path: absolute, empty, `.` and `..` segments.
  ['/a.md', 'leading slash', 'path'],
  ['a//b.md', 'empty, . or .. segment', 'path'],
  ['a/', 'empty, . or .. segment', 'path'],
  ['./a.md', 'empty, . or .. segment', 'path'],
  ['a/../b.md', 'empty, . or .. segment', 'path'],
  ['..', 'empty, . or .. segment', 'path'],
  // Ours: a segment git and other tools would read as an option.
  ['-rf.md', 'segment starts with -', 'ours'],
  ['a/-x.md', 'segment starts with -', 'ours'],
  // Ours: what ext4, APFS and NTFS cannot hold as one name (checkout would fail).
  ['y'.repeat(256), 'segment longer than 255 bytes', 'ours'],
  [`a/${'é'.repeat(128)}`, 'segment longer than 255 bytes', 'ours'],
  // verify_dotfile: `.git` in any case.
  ['.git', '.git segment', 'path'],
  ['.GIT/config', '.git segment', 'path'],
  ['a/.Git/b.md', '.git segment', 'path'],
  // is_ntfs_dotgit: trailing spaces and periods, the short name git~1, NTFS streams.
  ['.git./x.md', '.git segment (NTFS spelling)', 'path'],
  ['.git /x.md', '.git segment (NTFS spelling)', 'path'],
  ['.GIT . . ./x.md', '.git segment (NTFS spelling)', 'path'],
  ['git~1/config', '.git segment (NTFS spelling)', 'path'],
  ['a/GIT~1', '.git segment (NTFS spelling)', 'path'],
  ['git~1 ./x.md', '.git segment (NTFS spelling)', 'path'],
  ['.git::$INDEX_ALLOCATION/x.md', '.git segment (NTFS spelling)', 'path'],
  ['.git:stream', '.git segment (NTFS spelling)', 'path'],
  ['git~1::$INDEX_ALLOCATION/x.md', '.git segment (NTFS spelling)', 'path'],
  // is_hfs_dotgit: `.git` with code points HFS+ ignores, anywhere in the name.
  ['.g\u200cit/x.md', '.git segment (HFS spelling)', 'path'], // ZERO WIDTH NON-JOINER
  ['\u200f.git/x.md', '.git segment (HFS spelling)', 'path'], // RIGHT-TO-LEFT MARK
  ['.gi\u202at/x.md', '.git segment (HFS spelling)', 'path'], // LEFT-TO-RIGHT EMBEDDING
  ['.G\u202eIT/x.md', '.git segment (HFS spelling)', 'path'], // RIGHT-TO-LEFT OVERRIDE
  ['.git\u206a/x.md', '.git segment (HFS spelling)', 'path'], // INHIBIT SYMMETRIC SWAPPING
  ['.g\u206fit', '.git segment (HFS spelling)', 'path'], // NOMINAL DIGIT SHAPES
  ['a/.git\ufeff', '.git segment (HFS spelling)', 'path'], // ZERO WIDTH NO-BREAK SPACE
  // is_hfs_dotgitmodules / is_ntfs_dotgitmodules: fsck checks such a file as .gitmodules.
  ['.gitmodules', '.gitmodules segment', 'modules'],
  ['a/.GitModules', '.gitmodules segment', 'modules'],
  ['.gitmodules . .', '.gitmodules segment', 'modules'], // NTFS: trailing spaces and periods
  ['.gitmodules::$DATA', '.gitmodules segment', 'modules'], // NTFS stream
  ['.gitmodu\u200cles', '.gitmodules segment', 'modules'], // HFS ignorable
  ['gitmod~1', '.gitmodules segment', 'modules'], // NTFS short name, ~1…~4
  ['GITMOD~4', '.gitmodules segment', 'modules'],
  ['gi7eba~1', '.gitmodules segment', 'modules'], // NTFS fall-back short name
  ['gi7eb~12', '.gitmodules segment', 'modules'],
  ['gi~98765', '.gitmodules segment', 'modules'],
  // is_hfs_dotgitattributes / is_ntfs_dotgitattributes: fsck checks such a file as .gitattributes.
  ['.gitattributes', '.gitattributes segment', 'attributes'],
  ['docs/.GITATTRIBUTES', '.gitattributes segment', 'attributes'],
  ['.gitattributes. ', '.gitattributes segment', 'attributes'],
  ['.gitattr\ufeffibutes', '.gitattributes segment', 'attributes'],
  ['gitatt~2', '.gitattributes segment', 'attributes'],
  ['gi7d29~9', '.gitattributes segment', 'attributes'],
  // is_valid_win32_path: device names, any case, with or without an extension, spaces or a stream.
  ['CON', 'Windows device name', 'windows'],
  ['con.md', 'Windows device name', 'windows'],
  ['Con .md', 'Windows device name', 'windows'],
  ['wiki/PRN.txt', 'Windows device name', 'windows'],
  ['aux', 'Windows device name', 'windows'],
  ['aux:x', 'Windows device name', 'windows'],
  ['NUL.md', 'Windows device name', 'windows'],
  ['nul.tar.gz', 'Windows device name', 'windows'],
  ['nul/x.md', 'Windows device name', 'windows'],
  ['COM1', 'Windows device name', 'windows'],
  ['com9.md', 'Windows device name', 'windows'],
  ['LPT1', 'Windows device name', 'windows'],
  ['lpt0.md', 'Windows device name', 'windows'],
  ['CONIN$', 'Windows device name', 'windows'],
  ['conout$.md', 'Windows device name', 'windows'],
  // Windows beyond git's list (Microsoft's "Naming Files, Paths, and Namespaces"): COM0, superscript digits.
  ['COM0.md', 'Windows device name', 'windows'],
  ['COM\u00b9.md', 'Windows device name', 'windows'],
  ['lpt\u00b3', 'Windows device name', 'windows'],
  // is_valid_win32_path: characters no Windows name may hold.
  ['a:b.md', 'character not allowed on Windows', 'windows'],
  ['C:/x.md', 'character not allowed on Windows', 'windows'],
  ['a<b.md', 'character not allowed on Windows', 'windows'],
  ['a>b.md', 'character not allowed on Windows', 'windows'],
  ['a"b.md', 'character not allowed on Windows', 'windows'],
  ['a|b.md', 'character not allowed on Windows', 'windows'],
  ['what?.md', 'character not allowed on Windows', 'windows'],
  ['a*.md', 'character not allowed on Windows', 'windows'],
  // is_valid_win32_path: Windows strips trailing spaces and periods.
  ['notes.', 'ends with a space or period', 'windows'],
  ['notes./x.md', 'ends with a space or period', 'windows'],
  ['a.md ', 'ends with a space or period', 'windows'],
  ['dir /x.md', 'ends with a space or period', 'windows'],
  ['...', 'ends with a space or period', 'windows'],
];

/** Near misses every rule must let through (and git accepts them too). */
const ACCEPTED: string[] = [
  'wiki/concepts/a.md',
  'a.b.md',
  'a..b.md',
  '..x.md',
  '.hidden.md',
  ' leading space.md',
  '.github/workflows/x.md',
  '.gitignore',
  '.gitkeep',
  '.gitx',
  '.git-notes.md',
  'x.git',
  'wiki/git/x.md',
  'git~1x.md',
  'git~1.md',
  'git~2',
  'gitmodules',
  '.gitmodules.md',
  'gitmod~5',
  'gi7eba~0',
  'gi7ebax~1',
  '.gitattributes.md',
  'gitatt~5',
  'gi7d29~0',
  'a\u200cb.md', // an HFS-ignorable code point outside .git
  'console.md',
  'nul-notes.md',
  'connect.md',
  'CONIN.md',
  'auxiliary.md',
  'prn_list.md',
  'com.md',
  'COM10.md',
  'lptx.md',
  'café.md', // NFC
  'naïve/Ünïcödé.md',
  '日本語.md',
  'emoji-😀.md',
  'a-b_c+d=e,f;g@h#i$j%k&l(m)n[o]p{q}r!s~t\'u`v.md',
  'y'.repeat(255), // 255 bytes
  `${'é'.repeat(126)}.md`, // 255 bytes
  `${'z'.repeat(250)}/${'w'.repeat(255)}/a.md`, // 511 bytes
];

let srv: IdpTestServer;
let scratch: { path: string; cleanup: () => Promise<void> };
const LEGACY_PUSH = (repo: string, files: unknown[]) => srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files } });
const gitdir = (repo: string) => join(srv.dataRoot, 'repos', `${repo}.git`);
const headOf = (repo: string) => gitIn(gitdir(repo), 'rev-parse', 'main').trim();
const body = async (r: Response) => ({ status: r.status, body: (await r.json()) as unknown });

/** A repository with a working tree, only to ask git's verify_path (through update-index) about names. */
let oracleRepo = '';
let oracleBlob = '';
function gitAcceptsPath(path: string): boolean {
  const r = spawnSync(
    'git',
    ['-c', 'core.protectHFS=true', '-c', 'core.protectNTFS=true', 'update-index', '--add', '--cacheinfo', `100644,${oracleBlob},${path}`],
    { cwd: oracleRepo, encoding: 'utf8' },
  );
  return r.status === 0;
}

/** Whether `git fsck --strict` accepts a one-file tree naming `name` with `content` (a fresh bare repository). */
let fsckSeq = 0;
function fsckAcceptsFile(name: string, content: string): boolean {
  const dir = join(scratch.path, `fsck-${++fsckSeq}.git`);
  execFileSync('git', ['init', '-q', '--bare', dir]);
  const git = (args: string[], input?: string) =>
    execFileSync('git', ['--git-dir', dir, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }).trim();
  const blob = git(['hash-object', '-w', '--stdin'], content);
  const tree = git(['mktree', '-z'], `100644 blob ${blob}\t${name}\0`);
  git(['update-ref', 'refs/heads/main', git(['commit-tree', '-m', 'x', tree])]);
  return spawnSync('git', ['--git-dir', dir, 'fsck', '--strict', '--no-dangling']).status === 0;
}
const BAD_GITMODULES = '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch${IFS}pwned\n';
const BAD_GITATTRIBUTES = `${'a'.repeat(3000)} filter=x\n`;

beforeAll(async () => {
  srv = await startIdpTestServer();
  scratch = await tempDir('kr-paths-');
  oracleRepo = join(scratch.path, 'oracle');
  execFileSync('git', ['init', '-q', oracleRepo]);
  oracleBlob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: oracleRepo, input: 'x\n', encoding: 'utf8' }).trim();
});

afterAll(async () => {
  await srv?.stop();
  await scratch?.cleanup();
});

describe('the path table', () => {
  it.each(REFUSED.map(([path, reason, oracle]) => [JSON.stringify(path), path, reason, oracle] as const))(
    'refuses %s',
    (_label, path, reason, oracle) => {
      expect(pagePathProblem(path)).toBe(reason);
      if (oracle === 'path') expect(gitAcceptsPath(path)).toBe(false);
      if (oracle === 'modules') expect(fsckAcceptsFile(path.split('/').at(-1)!, BAD_GITMODULES)).toBe(false);
      if (oracle === 'attributes') expect(fsckAcceptsFile(path.split('/').at(-1)!, BAD_GITATTRIBUTES)).toBe(false);
    },
  );

  it.each(ACCEPTED.map((path) => [JSON.stringify(path), path] as const))('accepts %s', (_label, path) => {
    expect(pagePathProblem(path)).toBeNull();
    expect(gitAcceptsPath(path)).toBe(true);
    // Not taken for .gitmodules / .gitattributes by fsck either.
    const name = path.split('/').at(-1)!;
    expect(fsckAcceptsFile(name, BAD_GITMODULES)).toBe(true);
    expect(fsckAcceptsFile(name, BAD_GITATTRIBUTES)).toBe(true);
  });

  it('folds letter case Unicode-aware, per code point, to NFC', () => {
    expect(foldPathCase('Notes/Plan.md')).toBe('notes/plan.md');
    expect(foldPathCase('CAFÉ.md')).toBe(foldPathCase('café.md'));
    expect(foldPathCase('cafe\u0301.md')).toBe(foldPathCase('café.md'));
    expect(foldPathCase('ΟΔΟΣ.md')).toBe(foldPathCase('οδος.md'));
    expect(foldPathCase('Straße.md')).toBe(foldPathCase('STRASSE.md'));
    expect(foldPathCase('ı.md')).toBe(foldPathCase('I.md'));
    expect(foldPathCase('a.md')).not.toBe(foldPathCase('b.md'));
    expect(foldPathCase('é.md')).not.toBe(foldPathCase('e.md'));
  });
});

describe('end to end: refused paths write nothing; accepted ones pass fsck and check out', () => {
  it('answers 400 `invalid page path: <path>` for every refused row, and the head stays', async () => {
    expect((await LEGACY_PUSH('paths', [{ path: 'start.md', content: 'start\n' }])).status).toBe(200);
    const head = headOf('paths');
    for (const [path] of REFUSED) {
      const r = await LEGACY_PUSH('paths', [
        { path: 'fine.md', content: 'fine\n' },
        { path, content: 'evil\n' },
      ]);
      expect(await body(r), JSON.stringify(path)).toEqual({ status: 400, body: { error: `invalid page path: ${path}`, code: 'invalid_page_path' } });
    }
    expect(headOf('paths')).toBe(head);
    expect(gitIn(gitdir('paths'), 'ls-tree', '-r', '--name-only', 'main')).toBe('start.md\n');
    fsck(gitdir('paths'));
  });

  it('commits every accepted row in one push; git fsck --strict passes and git clone checks each file out', async () => {
    const content = (path: string) => `# ${path}\n`;
    const r = await LEGACY_PUSH('paths', ACCEPTED.map((path) => ({ path, content: content(path) })));
    expect(r.status).toBe(200);
    fsck(gitdir('paths'));

    const checkout = join(scratch.path, 'clone');
    execFileSync('git', ['clone', '-q', '--branch', 'main', gitdir('paths'), checkout], { stdio: 'pipe' });
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const d of readdirSync(dir, { withFileTypes: true })) {
        if (dir === checkout && d.name === '.git') continue;
        if (d.isDirectory()) walk(join(dir, d.name));
        else files.push(relative(checkout, join(dir, d.name)));
      }
    };
    walk(checkout);
    expect(files.sort()).toEqual(['start.md', ...ACCEPTED].sort());
    for (const path of ACCEPTED) expect(readFileSync(join(checkout, ...path.split('/')), 'utf8'), path).toBe(content(path));
    // Nothing git considers modified or unknown after checkout.
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: checkout, encoding: 'utf8' })).toBe('');
  });

  it('refuses an NFD path (the same name in NFC is fine)', async () => {
    const nfd = 'wiki/re\u0301sume\u0301.md';
    const head = headOf('paths');
    expect(await body(await LEGACY_PUSH('paths', [{ path: nfd, content: 'x\n' }]))).toEqual({
      status: 400,
      body: { error: `invalid page path: ${nfd}`, code: 'invalid_page_path' },
    });
    expect(headOf('paths')).toBe(head);
    expect((await LEGACY_PUSH('paths', [{ path: nfd.normalize('NFC'), content: 'x\n' }])).status).toBe(200);
  });
});

describe('paths that differ only in letter case', () => {
  const collision = (path: string, existing: string) => ({
    status: 400,
    body: { error: `path "${path}" differs only in letter case from "${existing}"`, code: 'path_case' },
  });
  const pages = async (repo: string) =>
    ((await (await srv.api(`/v1/repos/${repo}/pages`)).json()) as { pages: Array<{ path: string }> }).pages.map((p) => p.path);

  it('refuses a new path equal, ignoring case, to one at head; updating the page itself works', async () => {
    expect((await LEGACY_PUSH('case', [{ path: 'Notes/Plan.md', content: 'v1\n' }])).status).toBe(200);
    const head = headOf('case');
    expect(await body(await LEGACY_PUSH('case', [{ path: 'notes/plan.md', content: 'other\n' }]))).toEqual(
      collision('notes/plan.md', 'Notes/Plan.md'),
    );
    // One bad file refuses the whole push.
    expect(
      await body(
        await LEGACY_PUSH('case', [
          { path: 'fine.md', content: 'fine\n' },
          { path: 'NOTES/PLAN.MD', content: 'other\n' },
        ]),
      ),
    ).toEqual(collision('NOTES/PLAN.MD', 'Notes/Plan.md'));
    expect(headOf('case')).toBe(head);

    const update = await body(await LEGACY_PUSH('case', [{ path: 'Notes/Plan.md', content: 'v2\n' }]));
    expect(update.status).toBe(200);
    expect(await pages('case')).toEqual(['Notes/Plan.md']);
    fsck(gitdir('case'));
  });

  it('refuses two new paths of one push that differ only in case, writing nothing', async () => {
    const head = headOf('case');
    expect(
      await body(
        await LEGACY_PUSH('case', [
          { path: 'A.md', content: 'a\n' },
          { path: 'b.md', content: 'b\n' },
          { path: 'a.md', content: 'a\n' },
        ]),
      ),
    ).toEqual(collision('a.md', 'A.md'));
    expect(headOf('case')).toBe(head);
    expect(await pages('case')).toEqual(['Notes/Plan.md']);
  });

  it('folds beyond ASCII', async () => {
    expect((await LEGACY_PUSH('case', [{ path: 'Café.md', content: 'x\n' }, { path: 'ΟΔΟΣ.md', content: 'x\n' }])).status).toBe(200);
    expect(await body(await LEGACY_PUSH('case', [{ path: 'CAFÉ.md', content: 'y\n' }]))).toEqual(collision('CAFÉ.md', 'Café.md'));
    expect(await body(await LEGACY_PUSH('case', [{ path: 'οδος.md', content: 'y\n' }]))).toEqual(collision('οδος.md', 'ΟΔΟΣ.md'));
  });

  it('deletions never collide: after a delete the other spelling is free, in a later push or the same one', async () => {
    expect((await LEGACY_PUSH('case', [{ path: 'Notes/Plan.md', delete: true }])).status).toBe(200);
    expect((await LEGACY_PUSH('case', [{ path: 'notes/plan.md', content: 'lower\n' }])).status).toBe(200);
    expect(await pages('case')).toContain('notes/plan.md');
    expect(await pages('case')).not.toContain('Notes/Plan.md');

    const renamed = await LEGACY_PUSH('case', [
      { path: 'notes/plan.md', delete: true },
      { path: 'NOTES/Plan.md', content: 'upper\n' },
    ]);
    expect(renamed.status).toBe(200);
    const now = await pages('case');
    expect(now.filter((p) => foldPathCase(p) === 'notes/plan.md')).toEqual(['NOTES/Plan.md']);
    fsck(gitdir('case'));
  });

  it('lets exactly one of two concurrent pushes of X.md and x.md land', async () => {
    const [a, b] = await Promise.all([
      LEGACY_PUSH('race', [{ path: 'X.md', content: 'upper\n' }]).then(body),
      LEGACY_PUSH('race', [{ path: 'x.md', content: 'lower\n' }]).then(body),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 400]);
    const landed = a.status === 200 ? 'X.md' : 'x.md';
    const refused = landed === 'X.md' ? b : a;
    expect(refused).toEqual(collision(landed === 'X.md' ? 'x.md' : 'X.md', landed));
    expect(await pages('race')).toEqual([landed]);
    fsck(gitdir('race'));
  });

  it('also sees pages indexed before the fold column existed (filled in when the index re-syncs)', async () => {
    expect((await LEGACY_PUSH('legacy', [{ path: 'Old/Page.md', content: 'x\n' }])).status).toBe(200);
    // As migration 0002 leaves rows recorded before it.
    await srv.deps.db.run('UPDATE git_head SET path_fold = NULL WHERE repo_id = ?', ['legacy']);
    srv.deps.repos.invalidate('legacy');
    expect(await body(await LEGACY_PUSH('legacy', [{ path: 'old/page.md', content: 'y\n' }]))).toEqual(
      collision('old/page.md', 'Old/Page.md'),
    );
    const row = await srv.deps.db.get<{ path_fold: string }>('SELECT path_fold FROM git_head WHERE repo_id = ?', ['legacy']);
    expect(row?.path_fold).toBe('old/page.md');
  });
});

describe('the CLI pushes a page whose local name is NFD under its NFC name', () => {
  it('pushes, records and no longer sees it as changed', async () => {
    const user = await signIn(srv, { sub: 'nfc-1', email: 'nfc@example.com' });
    const root = join(scratch.path, 'cli');
    const alice = await krUser(root, 'alice');
    for (const args of [['login', '--server', srv.url, '--token', user.token], ['repos', 'create', 'nfc'], ['init']]) {
      const r = await alice.kr(...args);
      expect(r.code, show(r)).toBe(0);
    }
    const nfd = 'wiki/concepts/cafe\u0301.md';
    await alice.write(nfd, '# Café\n');
    // The disk keeps the NFD name (as a file copied from an old Mac would be).
    expect(readdirSync(join(alice.project, '.kr', 'wiki', 'concepts'))).toEqual(['cafe\u0301.md']);

    const push = await alice.kr('push');
    expect(push.code, show(push)).toBe(0);
    const pages = (await (await srv.api('/v1/repos/nfc/pages', { token: user.token })).json()) as { pages: Array<{ path: string }> };
    expect(pages.pages.map((p) => p.path)).toEqual(['wiki/concepts/café.md']);
    const again = await alice.kr('push');
    expect(again.stdout, show(again)).toContain('Nothing to push');
    const status = await alice.kr('status');
    expect(status.stdout, show(status)).toContain('Up to date');
  });
});

describe('pages stored before the write rules existed stay readable and deletable', () => {
  it('reads and deletes CON.md, an NFD name and a:b.md made by plain git; new content for them is refused', async () => {
    // A repository made outside the service, as an older version would have left it.
    const dir = gitdir('legacy-names');
    execFileSync('git', ['init', '-q', '--bare', '--initial-branch=main', dir]);
    const git = (args: string[], input?: string) =>
      execFileSync('git', ['--git-dir', dir, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }).trim();
    const names = ['CON.md', 'cafe\u0301.md', 'a:b.md', 'ok.md'];
    const entries = names.map((n) => `100644 blob ${git(['hash-object', '-w', '--stdin'], `${n}\n`)}\t${n}\0`).join('');
    const commit = git(['commit-tree', '-m', 'old', git(['mktree', '-z'], entries)]);
    git(['update-ref', 'refs/heads/main', commit]);

    const list = (await (await srv.api('/v1/repos/legacy-names/pages')).json()) as { pages: Array<{ path: string }> };
    expect(list.pages.map((p) => p.path).sort()).toEqual([...names].sort());
    for (const n of names) {
      const r = await srv.api(`/v1/repos/legacy-names/pages/${encodeURIComponent(n)}`);
      expect({ status: r.status, text: await r.text() }, n).toEqual({ status: 200, text: `${n}\n` });
    }
    // New content under those names is refused; deleting them is not.
    for (const n of ['CON.md', 'cafe\u0301.md', 'a:b.md']) {
      expect(await body(await LEGACY_PUSH('legacy-names', [{ path: n, content: 'new\n' }])), n).toEqual({
        status: 400,
        body: { error: `invalid page path: ${n}`, code: 'invalid_page_path' },
      });
    }
    const del = await LEGACY_PUSH('legacy-names', names.slice(0, 3).map((path) => ({ path, delete: true })));
    expect(del.status).toBe(200);
    expect(gitIn(dir, 'ls-tree', '--name-only', 'main')).toBe('ok.md\n');
    fsck(dir);
  });
});
