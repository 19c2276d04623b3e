/**
 * `POST /v1/repos/:id/import` over HTTP, once for both builds: test/import.test.ts runs these cases against the
 * Node server, test/import-workers.test.ts against the hosted build in workerd. Bundles are made by git itself
 * (v2 and v3, with deltas: a page edited many times), by `git pack-objects` without offsets (REF_DELTA), by the
 * export of either build, and by hand (objects a git command will not make: a `.git` entry, a submodule, an
 * object whose content does not match its id). Every refusal is checked for its exact answer and for leaving
 * nothing behind: no repository, no member row, no spool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { fsck, gitIn, tempDir } from './helpers/env.ts';
import { PACK_TYPE, packRecord, serializeCommit, serializeTree, toHex, wrapObject, type TreeItem } from '../lib/git/objects.ts';
import { buildPack, type PackEntry } from '../lib/git/pack.ts';
import { createHash } from 'node:crypto';

type Init = RequestInit & { token?: string | null; json?: unknown };
interface User {
  token: string;
  id: string;
  email: string;
}

/** Per-file cap (SERVICE_MAX_BODY_BYTES) and import cap low enough to pass in a test. */
export const MAX_FILE = 262_144;
export const MAX_IMPORT = 2_097_152;
export const IMPORT_ENV: Record<string, string> = {
  SERVICE_HOSTED: '1',
  SERVICE_PLAN_FREE_REPOS: '3',
  SERVICE_DASHBOARD_URL: 'https://app.example.test',
  SERVICE_MAX_BODY_BYTES: String(MAX_FILE),
  SERVICE_MAX_IMPORT_BYTES: String(MAX_IMPORT),
};

const T0 = 1_767_000_000;

/** git in `cwd` with a fixed identity and no user configuration. */
export function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Ada Author',
      GIT_AUTHOR_EMAIL: 'ada@example.test',
      GIT_COMMITTER_NAME: 'Ada Author',
      GIT_COMMITTER_EMAIL: 'ada@example.test',
      ...env,
    },
  });
}

/** A page of `n` numbered lines, the `edit`-th one changed: versions of it deltify against one another. */
const longPage = (title: string, edit: number, n = 200) =>
  `---\ntitle: ${title}\n---\n## Body\n${Array.from({ length: n }, (_, i) => `line ${i} of the ${title} page${i === edit ? ` (edit ${edit})` : ''}`).join('\n')}\n`;

/**
 * A repository at `dir` whose history is `steps` (each a commit at T0 + 60 × its index, by `who` when given);
 * returns its head.
 */
export function makeHistory(dir: string, steps: Step[]): string {
  mkdirSync(dir, { recursive: true });
  git(dir, ['init', '-q', '-b', 'main']);
  steps.forEach((s, i) => {
    for (const [path, content] of Object.entries(s.files)) {
      if (content === null) rmSync(join(dir, path));
      else {
        mkdirSync(join(dir, path, '..'), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
    }
    git(dir, ['add', '-A']);
    const date = `${T0 + 60 * i} +0000`;
    const who = s.who ?? 'Ada Author';
    const email = `${who.split(' ')[0]!.toLowerCase()}@example.test`;
    git(dir, ['commit', '-q', '-m', s.message], {
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
      GIT_AUTHOR_NAME: who,
      GIT_AUTHOR_EMAIL: email,
    });
  });
  return git(dir, ['rev-parse', 'HEAD']).trim();
}

/** The wiki history every build imports: edits of a long page (deltas), links, a deletion, two authors. */
export type Step = { files: Record<string, string | null>; message: string; who?: string };
export const WIKI_STEPS: Step[] = [
  { files: { 'wiki/concepts/cache.md': longPage('Cache', 0), 'README.md': '# Docs\n' }, message: 'first pages' },
  { files: { 'wiki/concepts/cache.md': longPage('Cache', 10), 'wiki/entities/redis.md': '---\ntitle: Redis\n---\nUses [[cache]] a lot.\n' }, message: 'redis', who: 'Bea Builder' },
  { files: { 'wiki/concepts/cache.md': longPage('Cache', 20), 'wiki/old.md': 'old\n' }, message: 'more cache' },
  { files: { 'wiki/concepts/cache.md': longPage('Cache', 30), 'wiki/old.md': null }, message: 'drop old\n\nwith a body' },
  { files: { 'wiki/concepts/cache.md': `${longPage('Cache', 40)}zanzibarword\n` }, message: 'cache: the word' },
];

/** git's SHA-1 of an object. */
const oidOf = (type: 'blob' | 'tree' | 'commit', content: Uint8Array) => createHash('sha1').update(wrapObject(type, content)).digest('hex');

/** Objects put together by hand, and a bundle of them (one pack, whole objects). */
export class HandPack {
  readonly entries: PackEntry[] = [];
  private time = T0;
  add(type: 'blob' | 'tree' | 'commit', content: Uint8Array, as?: string): string {
    const oid = as ?? oidOf(type, content);
    this.entries.push({ oid, record: packRecord(PACK_TYPE[type], content.byteLength, deflateSync(content)) });
    return oid;
  }
  blob(text: string): string {
    return this.add('blob', new TextEncoder().encode(text));
  }
  tree(items: TreeItem[]): string {
    return this.add('tree', serializeTree(items));
  }
  /** A commit of `files` (path → blob id, or a TreeItem for a special mode), nested into trees. */
  commit(files: Record<string, string | TreeItem>, parents: string[], message: string): string {
    const root: Map<string, unknown> = new Map();
    for (const [path, v] of Object.entries(files)) {
      const parts = path.split('/');
      let dir = root;
      for (const p of parts.slice(0, -1)) {
        if (!dir.has(p)) dir.set(p, new Map());
        dir = dir.get(p) as Map<string, unknown>;
      }
      dir.set(parts[parts.length - 1]!, v);
    }
    const write = (dir: Map<string, unknown>): string =>
      this.tree(
        [...dir].map(([name, v]) =>
          v instanceof Map
            ? { mode: '40000', name, oid: write(v), type: 'tree' as const }
            : typeof v === 'string'
              ? { mode: '100644', name, oid: v, type: 'blob' as const }
              : { ...(v as TreeItem), name },
        ),
      );
    this.time += 60;
    return this.add('commit', serializeCommit({ tree: write(root), parents, author: { name: 'Hand', email: 'hand@example.test' }, time: this.time, message: `${message}\n` }));
  }
  async bundle(head: string, opts: { prerequisite?: string } = {}): Promise<Uint8Array> {
    const pack = (await buildPack({ hashAndDeflate: () => ({ oid: '', deflated: new Uint8Array() }), sha1: (d) => createHash('sha1').update(d).digest() }, this.entries)).pack;
    const head1 = `# v2 git bundle\n${opts.prerequisite ? `-${opts.prerequisite} x\n` : ''}${head} refs/heads/main\n\n`;
    return concat(new TextEncoder().encode(head1), pack);
  }
}

const concat = (a: Uint8Array, b: Uint8Array) => {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
};

export function importCases(kind: TargetKind): void {
  describe(`${kind}: import a git bundle`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let work: { path: string; cleanup: () => Promise<void> };
    const users: Record<string, User> = {};
    let wikiHead = '';
    let wikiBundle: Uint8Array;

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: any = text === '' ? null : text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: r.status, body };
    };
    const importAs = (repo: string, bundle: Uint8Array, as?: User, query = '') =>
      call(`/v1/repos/${repo}/import${query}`, {
        method: 'POST',
        body: bundle as Uint8Array<ArrayBuffer>,
        headers: { 'content-type': 'application/x-git-bundle' },
        token: as?.token,
      });
    const file = (name: string) => new Uint8Array(readFileSync(join(work.path, name)));
    /** Nothing of `repo` is left: no repository for the legacy key, not in `who`'s list, no spool on disk. */
    const nothingLeft = async (repo: string, who: User) => {
      expect(await call(`/v1/repos/${repo}/pages`)).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
      expect(((await call('/v1/repos', { token: who.token })).body.repos as Array<{ id: string }>).map((r) => r.id)).not.toContain(repo);
      if (t.dataRoot) {
        const names = readdirSync(join(t.dataRoot, 'repos'));
        expect(names.filter((n) => n.startsWith('.import-') || n.startsWith(`${repo}.git`))).toEqual([]);
      }
      // No member row either: the id made now by the legacy key (which owns nothing) has no member at all.
      expect((await call(`/v1/repos/${repo}`, { method: 'POST' })).status).toBe(201);
      expect(await call(`/v1/repos/${repo}/members`)).toEqual({ status: 200, body: { members: [] } });
    };
    const timeline = async (repo: string) =>
      ((await call(`/v1/repos/${repo}/timeline?limit=1000`)).body.commits as Array<Record<string, unknown>>).map((c) => ({
        sha: c.sha,
        author: c.author,
        email: c.email,
        time: c.time,
        message: c.message,
        paths: c.paths,
      }));

    beforeAll(async () => {
      work = await tempDir('kr-import-');
      idp = await startIdp();
      t = await startTarget(kind, { ...IMPORT_ENV, IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      for (const name of ['alice', 'bob', 'carol']) {
        const idToken = await idp.signIdToken({ sub: `${name}-1`, email: `${name}@example.test`, name });
        const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
        expect(r.status).toBe(200);
        users[name] = { token: r.body.access_token, id: r.body.user.id, email: r.body.user.email };
      }
      const src = join(work.path, 'src');
      wikiHead = makeHistory(src, WIKI_STEPS);
      git(src, ['bundle', 'create', '-q', join(work.path, 'wiki.bundle'), 'HEAD', 'main']);
      git(src, ['bundle', 'create', '-q', '--version=3', join(work.path, 'wiki3.bundle'), 'main']);
      wikiBundle = file('wiki.bundle');
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
      await work?.cleanup();
    });

    it('a git-made bundle (v2, with deltas) becomes the repository, commit for commit; the importer owns it', async () => {
      const r = await importAs('wiki', wikiBundle, users.alice);
      expect(r).toEqual({ status: 201, body: { id: 'wiki', head: wikiHead, commits: 5, pages: 3 } });
      const src = join(work.path, 'src');
      const log = git(src, ['log', '--format=%H%x00%an%x00%ae%x00%at%x00%s', 'main'])
        .trim()
        .split('\n')
        .map((l) => l.split('\0'));
      const got = await timeline('wiki');
      expect(got.map((c) => [c.sha, c.author, c.email, c.time, c.message])).toEqual(
        log.map(([sha, an, ae, at, s]) => [sha, an, ae, new Date(Number(at) * 1000).toISOString().replace('.000Z', 'Z'), s]),
      );
      expect(got[3]!.paths).toEqual(['wiki/entities/redis.md', 'wiki/concepts/cache.md'].sort());
      expect((await call('/v1/repos', { token: users.alice.token })).body.repos).toContainEqual(
        expect.objectContaining({ id: 'wiki', page_count: 3, role: 'owner' }),
      );
      // Pages, history, pull, search, links and blame cover the history at once.
      const page = await call('/v1/repos/wiki/pages/wiki/concepts/cache.md', { token: users.alice.token });
      expect(page).toEqual({ status: 200, body: `${longPage('Cache', 40)}zanzibarword\n` });
      expect(((await call('/v1/repos/wiki/history/wiki/concepts/cache.md')).body.commits as Array<{ sha: string }>).map((c) => c.sha)).toEqual(
        log.map((l) => l[0]),
      );
      const pull = await call('/v1/repos/wiki/sync/pull');
      expect(pull.body.new_head).toBe(wikiHead);
      expect((pull.body.files as Array<{ path: string }>).map((f) => f.path)).toEqual(['README.md', 'wiki/concepts/cache.md', 'wiki/entities/redis.md']);
      const since = await call(`/v1/repos/wiki/sync/pull?since=${log[2]![0]}`);
      expect({ files: (since.body.files as Array<{ path: string }>).map((f) => f.path), deleted: since.body.deleted }).toEqual({
        files: ['wiki/concepts/cache.md'],
        deleted: ['wiki/old.md'],
      });
      const search = await call('/v1/repos/wiki/search?q=zanzibarword');
      expect((search.body.results as Array<{ path: string }>).map((x) => x.path)).toEqual(['wiki/concepts/cache.md']);
      const links = await call('/v1/repos/wiki/links/wiki/concepts/cache.md');
      expect(links.body.incoming).toEqual([{ path: 'wiki/entities/redis.md', title: 'Redis' }]);
      const evo = await call('/v1/repos/wiki/evolution/wiki/concepts/cache.md?blame=true');
      expect(evo.status).toBe(200);
      const activity = await call('/v1/repos/wiki/activity', { token: users.alice.token });
      expect(activity.body.events[0]).toEqual(
        expect.objectContaining({ user_id: users.alice.id, action: 'import', detail: { commits: 5, pages: 3, head: wikiHead } }),
      );
      if (t.dataRoot) {
        const gitdir = join(t.dataRoot, 'repos', 'wiki.git');
        fsck(gitdir);
        expect(gitIn(gitdir, 'rev-parse', 'main').trim()).toBe(wikiHead);
        // git's own pack, deltas and all (a chain of the edited page's versions).
        const pack = readdirSync(join(gitdir, 'objects', 'pack')).find((n) => n.endsWith('.pack'))!;
        expect(gitIn(gitdir, 'verify-pack', '-v', join(gitdir, 'objects', 'pack', pack))).toMatch(/chain length = [1-9]/);
      }
      // A push goes on from the imported head.
      const pushed = await call('/v1/repos/wiki/sync/push', { method: 'POST', token: users.alice.token, json: { files: [{ path: 'wiki/new.md', content: 'new\n' }] } });
      expect(pushed.status).toBe(200);
      expect((await timeline('wiki'))[1]!.sha).toBe(wikiHead);
    });

    it('a v3 bundle (git bundle create --version=3) imports with the same shas', async () => {
      expect(readFileSync(join(work.path, 'wiki3.bundle'), 'latin1').startsWith('# v3 git bundle\n@object-format=sha1\n')).toBe(true);
      const r = await importAs('wiki3', file('wiki3.bundle'), users.alice);
      expect(r).toEqual({ status: 201, body: { id: 'wiki3', head: wikiHead, commits: 5, pages: 3 } });
      expect((await timeline('wiki3')).map((c) => c.sha)).toEqual(git(join(work.path, 'src'), ['rev-list', 'main']).trim().split('\n'));
    });

    it('a pack of REF_DELTA records (git pack-objects without offsets) and the legacy key', async () => {
      const src = join(work.path, 'src');
      const pack = execFileSync('git', ['pack-objects', '--stdout', '-q', '--revs'], { cwd: src, input: 'main\n' });
      const bundle = concat(new TextEncoder().encode(`# v2 git bundle\n${wikiHead} refs/heads/main\n\n`), new Uint8Array(pack));
      const r = await importAs('wikiref', bundle);
      expect(r).toEqual({ status: 201, body: { id: 'wikiref', head: wikiHead, commits: 5, pages: 3 } });
      if (t.dataRoot) fsck(join(t.dataRoot, 'repos', 'wikiref.git'));
    });

    it('?branch= picks a branch; without it a bundle without HEAD and of several branches takes main', async () => {
      const src = join(work.path, 'src');
      git(src, ['branch', '-f', 'side', 'HEAD~2']);
      git(src, ['bundle', 'create', '-q', join(work.path, 'two.bundle'), 'main', 'side']);
      const side = git(src, ['rev-parse', 'side']).trim();
      expect(await importAs('side', file('two.bundle'), undefined, '?branch=side')).toEqual({ status: 201, body: { id: 'side', head: side, commits: 3, pages: 4 } });
      expect(await importAs('twomain', file('two.bundle'))).toEqual({ status: 201, body: { id: 'twomain', head: wikiHead, commits: 5, pages: 3 } });
      expect(await importAs('nobranch', file('two.bundle'), undefined, '?branch=nope')).toEqual({ status: 400, body: { error: 'bundle has no branch nope', code: 'bundle_no_branch' } });
    });

    it('an export imports into a new id with the same head and timeline', async () => {
      const exported = await t.api('/v1/repos/wiki/export');
      expect(exported.status).toBe(200);
      const bytes = new Uint8Array(await exported.arrayBuffer());
      const r = await importAs('wiki-copy', bytes, users.bob);
      const head = (await call('/v1/repos/wiki/timeline?limit=1')).body.commits[0].sha;
      expect(r).toEqual({ status: 201, body: { id: 'wiki-copy', head, commits: 6, pages: 4 } });
      expect(await timeline('wiki-copy')).toEqual(await timeline('wiki'));
      expect((await call('/v1/repos/wiki-copy/search?q=zanzibarword')).body.total).toBe(1);
    });

    it('a history with a merge imports whole, and its export carries both sides', async () => {
      const dir = join(work.path, 'merge');
      makeHistory(dir, [{ files: { 'a.md': 'a\n' }, message: 'base' }]);
      git(dir, ['checkout', '-q', '-b', 'feature']);
      writeFileSync(join(dir, 'f.md'), 'feature\n');
      git(dir, ['add', '-A']);
      git(dir, ['commit', '-q', '-m', 'feature'], { GIT_AUTHOR_DATE: `${T0 + 100} +0000`, GIT_COMMITTER_DATE: `${T0 + 100} +0000` });
      git(dir, ['checkout', '-q', 'main']);
      writeFileSync(join(dir, 'm.md'), 'main\n');
      git(dir, ['add', '-A']);
      git(dir, ['commit', '-q', '-m', 'main side'], { GIT_AUTHOR_DATE: `${T0 + 200} +0000`, GIT_COMMITTER_DATE: `${T0 + 200} +0000` });
      git(dir, ['merge', '-q', '--no-ff', '-m', 'merge feature', 'feature'], { GIT_AUTHOR_DATE: `${T0 + 300} +0000`, GIT_COMMITTER_DATE: `${T0 + 300} +0000` });
      const head = git(dir, ['rev-parse', 'HEAD']).trim();
      git(dir, ['bundle', 'create', '-q', join(work.path, 'merge.bundle'), 'main']);
      expect(await importAs('merged', file('merge.bundle'), users.bob)).toEqual({ status: 201, body: { id: 'merged', head, commits: 4, pages: 3 } });
      // The timeline is the first-parent line; the feature commit is kept all the same.
      expect((await timeline('merged')).map((c) => c.message)).toEqual(['merge feature', 'main side', 'base']);
      const exported = new Uint8Array(await (await t.api('/v1/repos/merged/export')).arrayBuffer());
      expect(await importAs('merged2', exported, users.bob)).toEqual({ status: 201, body: { id: 'merged2', head, commits: 4, pages: 3 } });
      git(work.path, ['clone', '-q', join(work.path, 'merge.bundle'), 'merge-clone']);
      writeFileSync(join(work.path, 'merged2.bundle'), exported);
      git(join(work.path, 'merge-clone'), ['bundle', 'verify', '-q', join(work.path, 'merged2.bundle')]);
      if (t.dataRoot) fsck(join(t.dataRoot, 'repos', 'merged2.git'));
    });

    describe('refusals leave nothing behind', () => {
      const cases: Array<{ name: string; make: () => Promise<Uint8Array> | Uint8Array; status: number; code: string; error: () => string }> = [];
      let ids: Record<string, string> = {};
      const add = (name: string, make: () => Promise<Uint8Array> | Uint8Array, status: number, code: string, error: () => string) =>
        cases.push({ name, make, status, code, error });

      add('garbage', () => new TextEncoder().encode('hello, not a bundle\n'), 400, 'invalid_bundle', () => 'invalid bundle: not a git bundle (v2 or v3)');
      add('a header and no pack', () => new TextEncoder().encode(`# v2 git bundle\n${'a'.repeat(40)} refs/heads/main\n\n`), 400, 'invalid_bundle', () => 'invalid bundle: no pack after the header');
      add('truncated: the checksum cut off', () => wikiBundle.subarray(0, wikiBundle.byteLength - 10), 400, 'invalid_bundle', () => 'invalid bundle: pack truncated');
      add('truncated in the middle of a record', () => wikiBundle.subarray(0, Math.floor(wikiBundle.byteLength / 2)), 400, 'invalid_bundle', () => ids.midCut!);
      add('a damaged pack checksum', () => {
        const b = wikiBundle.slice();
        b[b.byteLength - 1] ^= 0xff;
        return b;
      }, 400, 'invalid_bundle', () => 'invalid bundle: pack checksum does not match');
      add('an object that does not match its id (the pack checksum fixed)', async () => {
        const p = new HandPack();
        const good = new TextEncoder().encode('the real content\n');
        const blob = oidOf('blob', good);
        // The record holds other bytes than the tree names, under a pack checksum made to fit.
        p.add('blob', new TextEncoder().encode('the forged content\n'), blob);
        const c = p.commit({ 'a.md': blob }, [], 'forged');
        ids.forged = blob;
        return p.bundle(c);
      }, 400, 'invalid_bundle', () => `invalid bundle: object ${ids.forged} (a.md) is missing, or does not match its content`);
      for (const bad of ['.git', 'wiki/x.', 'CON.md']) {
        add(`a path ${bad} in a commit before the head`, async () => {
          const p = new HandPack();
          const ok = p.blob('fine\n');
          const first = p.commit({ 'ok.md': ok, [bad]: p.blob('bad\n') }, [], 'bad path');
          ids[bad] = first;
          return p.bundle(p.commit({ 'ok.md': ok }, [first], 'fixed'));
        }, 400, 'import_invalid_path', () => `invalid page path in ${ids[bad]}: ${bad}`);
      }
      add('a submodule', async () => {
        const p = new HandPack();
        const c = p.commit({ 'a.md': p.blob('a\n'), sub: { mode: '160000', name: 'sub', oid: 'c'.repeat(40), type: 'commit' } }, [], 'sub');
        ids.sub = c;
        return p.bundle(c);
      }, 400, 'import_submodule', () => `submodule in ${ids.sub}: sub`);
      add('a symlink', () => {
        const dir = join(work.path, 'link');
        makeHistory(dir, [{ files: { 'a.md': 'a\n' }, message: 'a' }]);
        symlinkSync('a.md', join(dir, 'b.md'));
        git(dir, ['add', '-A']);
        git(dir, ['commit', '-q', '-m', 'link'], { GIT_AUTHOR_DATE: `${T0} +0000`, GIT_COMMITTER_DATE: `${T0} +0000` });
        ids.link = git(dir, ['rev-parse', 'HEAD']).trim();
        git(dir, ['bundle', 'create', '-q', join(work.path, 'link.bundle'), 'main']);
        return file('link.bundle');
      }, 400, 'import_symlink', () => `symlink in ${ids.link}: b.md`);
      add('prerequisites', () => {
        git(join(work.path, 'src'), ['bundle', 'create', '-q', join(work.path, 'thin.bundle'), 'main~2..main']);
        return file('thin.bundle');
      }, 400, 'bundle_prerequisites', () => 'bundle has prerequisites');
      add('a file over the size a push allows', () => {
        const dir = join(work.path, 'big');
        const big = Array.from({ length: MAX_FILE / 32 + 1 }, (_, i) => `${String(i).padStart(31, '0')}\n`).join('');
        ids.big = makeHistory(dir, [{ files: { 'a.md': 'a\n', 'big.md': big }, message: 'big' }, { files: { 'big.md': null }, message: 'gone' }]);
        ids.bigCommit = git(dir, ['rev-parse', 'HEAD~1']).trim();
        ids.bigSize = String(big.length);
        git(dir, ['bundle', 'create', '-q', join(work.path, 'big.bundle'), 'main']);
        return file('big.bundle');
      }, 413, 'import_file_too_large', () => `file too large in ${ids.bigCommit}: big.md (${ids.bigSize} bytes, at most ${MAX_FILE})`);

      /** A cut in the middle of the pack falls inside one record, which then does not inflate: which record, and where it starts, as git's own index of the same pack says. */
      const midCut = () => {
        const text = new TextDecoder('latin1').decode(wikiBundle);
        const packAt = text.indexOf('\n\nPACK') + 2;
        writeFileSync(join(work.path, 'wiki.pack'), wikiBundle.subarray(packAt));
        git(work.path, ['index-pack', 'wiki.pack']);
        const offsets = git(work.path, ['verify-pack', '-v', 'wiki.idx'])
          .split('\n')
          .map((l) => /^[0-9a-f]{40} +\S+ +\d+ +\d+ +(\d+)/.exec(l)?.[1])
          .filter((o) => o !== undefined)
          .map(Number)
          .sort((a, b) => a - b);
        const cut = Math.floor(wikiBundle.byteLength / 2) - packAt;
        const record = offsets.filter((o) => o < cut).length - 1;
        return `invalid bundle: record ${record} at offset ${offsets[record]} does not inflate`;
      };

      // One test a refusal, each into an id of its own, by a user on the free plan: none of them may count.
      const refusals = cases;
      for (const [i, c] of refusals.entries()) {
        it(`${c.name}: ${c.status}, and nothing left behind`, async () => {
          if (c.name === 'truncated in the middle of a record') ids.midCut = midCut();
          const repo = `refused${i}`;
          const got = await importAs(repo, await c.make(), users.carol);
          expect(got).toEqual({ status: c.status, body: { error: c.error(), code: c.code } });
          await nothingLeft(repo, users.carol);
          expect((await call('/v1/repos', { token: users.carol.token })).body.repos).toEqual([]);
        });
      }
    });

    it('an existing repository: owners only, while it is empty; 409 once it has a commit', async () => {
      expect((await call('/v1/repos', { method: 'POST', token: users.alice.token, json: { id: 'team' } })).status).toBe(201);
      const key = await call('/v1/repos/team/invite-keys', { method: 'POST', json: {}, token: users.alice.token });
      expect((await call('/v1/repos/join', { method: 'POST', json: { key: key.body.token }, token: users.bob.token })).status).toBe(200);
      expect(await importAs('team', wikiBundle, users.bob)).toEqual({ status: 403, body: { error: 'only an owner can import', code: 'owner_only_import' } });
      expect(await importAs('team', wikiBundle, users.carol)).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await importAs('wiki', wikiBundle, users.alice)).toEqual({ status: 409, body: { error: 'repository is not empty', code: 'repo_not_empty' } });
      expect(await importAs('wiki', wikiBundle)).toEqual({ status: 409, body: { error: 'repository is not empty', code: 'repo_not_empty' } });
      // A refused bundle into an existing empty repository leaves it as it was: there, and empty.
      expect((await importAs('team', new TextEncoder().encode('nope'), users.alice)).status).toBe(400);
      expect(await call('/v1/repos/team/pages', { token: users.alice.token })).toEqual({ status: 200, body: { pages: [] } });
      expect(await importAs('team', wikiBundle, users.alice)).toEqual({ status: 201, body: { id: 'team', head: wikiHead, commits: 5, pages: 3 } });
      expect(((await call('/v1/repos/team/members', { token: users.alice.token })).body.members as Array<{ email: string; role: string }>).map((m) => [m.email, m.role]).sort()).toEqual([
        ['alice@example.test', 'owner'],
        ['bob@example.test', 'member'],
      ]);
    });

    it('the hosted cap: a user at their plan limit gets 402 and nothing is made', async () => {
      for (const id of ['c1', 'c2', 'c3']) expect((await call('/v1/repos', { method: 'POST', token: users.carol.token, json: { id } })).status).toBe(201);
      expect(await importAs('c4', wikiBundle, users.carol)).toEqual({
        status: 402,
        body: { error: 'repository limit reached for your plan (3)', code: 'quota_repos', limit: 3, upgrade_url: 'https://app.example.test/billing' },
      });
      await nothingLeft('c4', users.carol);
    });

    it('a body over SERVICE_MAX_IMPORT_BYTES: 413 on its declared length (10 GB) and on the bytes read', async () => {
      const tooLarge = { error: `request body too large (at most ${MAX_IMPORT} bytes)`, code: 'import_too_large' };
      // Declared: answered before a byte of the body is read.
      const declared = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const u = new URL(`${t.url}/v1/repos/huge/import`);
        const req = request(
          { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { authorization: `Bearer ${LEGACY_KEY}`, 'content-length': String(10 * 1024 ** 3) } },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          },
        );
        req.on('error', reject);
        req.write('# v2 git bundle\n');
      });
      expect({ status: declared.status, body: JSON.parse(declared.body) }).toEqual({ status: 413, body: tooLarge });
      await nothingLeft('huge', users.bob);
      // Undeclared (chunked): cut off once the bytes read pass the cap.
      const chunk = new Uint8Array(256 * 1024).fill(7);
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= MAX_IMPORT + 4 * chunk.byteLength) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const r = await call('/v1/repos/huge2/import', { method: 'POST', body: stream, duplex: 'half' } as Init);
      expect(r).toEqual({ status: 413, body: tooLarge });
      await nothingLeft('huge2', users.bob);
    });
  });
}
