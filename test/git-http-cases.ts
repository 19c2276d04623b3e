/**
 * Clone and fetch with git's own client over the git routes, once for both builds (test/git-http.test.ts: the
 * Node server; test/git-http-workers.test.ts: the hosted build in workerd): git 2.39 clones with protocol v0 and
 * v2, full and `--depth 1`, fetches after API pushes, and `git fsck --strict` accepts every result; its log is the
 * server's timeline. Credentials as git gives them (URL userinfo, a credential helper, GIT_ASKPASS, a Bearer
 * header), the 401 that makes git ask, outsiders, missing repositories, the push refusal git shows, and the bounds
 * of a request, as raw HTTP. git runs as a child process, never blocking this one (the Node server lives here),
 * with no terminal prompt and a timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { chmodSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './helpers/env.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';

type Init = Parameters<Target['api']>[1];

/** A pkt-line of `text`. */
export const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, '0')}${text}`;

/** The packets of a response: lines (text), `flush`/`delim`, and side-band data by band. */
export function packets(body: Uint8Array): Array<{ kind: 'line'; text: string } | { kind: 'flush' | 'delim' | 'end' } | { kind: 'band'; band: number; data: Uint8Array }> {
  const out: ReturnType<typeof packets> = [];
  let at = 0;
  let inPack = false;
  while (at < body.byteLength) {
    const n = parseInt(Buffer.from(body.subarray(at, at + 4)).toString('latin1'), 16);
    if (n < 4) {
      out.push({ kind: n === 0 ? 'flush' : n === 1 ? 'delim' : 'end' });
      at += 4;
      continue;
    }
    const data = body.subarray(at + 4, at + n);
    const text = Buffer.from(data).toString('latin1');
    if (inPack && data[0]! >= 1 && data[0]! <= 3) out.push({ kind: 'band', band: data[0]!, data: data.subarray(1) });
    else out.push({ kind: 'line', text: text.replace(/\n$/, '') });
    if (text === 'packfile\n' || text.startsWith('ACK ') || text === 'NAK\n') inPack = true;
    at += n;
  }
  return out;
}

/** The pack a response carries in band 1: its object count, and the whole pack. */
export function packOf(body: Uint8Array): { count: number; pack: Buffer } {
  const pack = Buffer.concat(packets(body).flatMap((p) => (p.kind === 'band' && p.band === 1 ? [Buffer.from(p.data)] : [])));
  expect(pack.subarray(0, 4).toString('latin1')).toBe('PACK');
  return { count: pack.readUInt32BE(8), pack };
}

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function gitHttpCases(kind: TargetKind): void {
  describe(`git over HTTP (${kind})`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let scratch: { path: string; cleanup: () => Promise<void> };
    let alicePat = '';
    let aliceSession = '';
    let bobSession = '';
    /** `<scheme>://<user>:<token>@host` of the target. */
    const withCreds = (token: string, user = 'kr') => t.url.replace('://', `://${user}:${encodeURIComponent(token)}@`);

    /** git as a child process: no prompt, no user or system configuration, a timeout. */
    const git = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<GitResult> =>
      new Promise((resolve) => {
        execFile(
          'git',
          args,
          {
            cwd: opts.cwd ?? scratch.path,
            timeout: 120_000,
            maxBuffer: 64 * 1024 * 1024,
            env: {
              PATH: process.env.PATH,
              HOME: scratch.path,
              GIT_CONFIG_NOSYSTEM: '1',
              GIT_TERMINAL_PROMPT: '0',
              GIT_AUTHOR_NAME: 't',
              GIT_AUTHOR_EMAIL: 't@example.test',
              GIT_COMMITTER_NAME: 't',
              GIT_COMMITTER_EMAIL: 't@example.test',
              LC_ALL: 'C',
              ...opts.env,
            },
          },
          (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
        );
      });
    const ok = async (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<string> => {
      const r = await git(args, opts);
      expect(r.code, `git ${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      return { status: r.status, headers: r.headers, bytes: new Uint8Array(await r.arrayBuffer()) };
    };
    const json = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString('utf8'));
    const push = async (repo: string, files: Array<{ path: string; content: string; delete?: boolean }>, token = alicePat) => {
      const r = await t.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { files, message: `push ${files.length}` } });
      const body = await r.json();
      expect(r.status, JSON.stringify(body)).toBe(200);
      return body.new_head as string;
    };
    const signIn = async (sub: string, email: string) => {
      const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
      const r = await t.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(r.status).toBe(200);
      return ((await r.json()) as { access_token: string }).access_token;
    };
    const timeline = async (repo: string) =>
      ((await (await t.api(`/v1/repos/${repo}/timeline?limit=1000`, { token: alicePat })).json()) as { commits: Array<{ sha: string }> }).commits.map((c) => c.sha);
    /** What a checkout holds: path → text, `.git` left out. */
    const files = (dir: string, prefix = ''): Map<string, string> => {
      const out = new Map<string, string>();
      for (const e of readdirSync(join(dir, prefix), { withFileTypes: true })) {
        if (e.name === '.git') continue;
        const rel = prefix ? `${prefix}/${e.name}` : e.name;
        if (e.isDirectory()) for (const [k, v] of files(dir, rel)) out.set(k, v);
        else out.set(rel, readFileSync(join(dir, rel), 'utf8'));
      }
      return out;
    };
    /** A clone, checked: fsck --strict, its log equal to the timeline (or its first `depth` commits), its files. */
    const checkClone = async (dir: string, repo: string, expected: Map<string, string>, depth?: number) => {
      await ok(['-C', dir, 'fsck', '--strict', '--no-dangling']);
      const log = (await ok(['-C', dir, 'log', '--format=%H', 'origin/main'])).trim().split('\n');
      const server = await timeline(repo);
      expect(log).toEqual(depth ? server.slice(0, depth) : server);
      expect(Object.fromEntries(files(join(scratch.path, dir)))).toEqual(Object.fromEntries(expected));
    };

    /** The pages of `kb` as pushed (path → text). */
    const pages = new Map<string, string>();
    const pushKb = async (list: Array<[string, string | null]>) => {
      for (const [p, c] of list) {
        if (c === null) pages.delete(p);
        else pages.set(p, c);
      }
      return push('kb', list.map(([path, content]) => (content === null ? { path, content: '', delete: true } : { path, content })));
    };

    beforeAll(async () => {
      idp = await startIdp();
      scratch = await tempDir('kr-git-http-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      aliceSession = await signIn('alice', 'alice@example.test');
      bobSession = await signIn('bob', 'bob@example.test');
      const pat = await t.api('/v1/pats', { method: 'POST', token: aliceSession, json: { label: 'git', expires_in_days: 30 } });
      alicePat = ((await pat.json()) as { token: string }).token;
      expect((await t.api('/v1/repos', { method: 'POST', token: alicePat, json: { id: 'kb' } })).status).toBe(201);
      await pushKb([
        ['README.md', '# Knowledge\n'],
        ['wiki/a.md', '---\ntitle: A\n---\n## One\né ü\n'],
        ['wiki/deep/b.md', 'b\n'],
      ]);
      await pushKb([['wiki/a.md', 'a again\n'], ['notes/c.md', 'c\n']]);
      await pushKb([['wiki/deep/b.md', null], ['notes/d.md', 'd\n']]);
    }, 120_000);
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
      await scratch?.cleanup();
    });

    it('git clones with protocol v0 and v2, full and --depth 1; fsck --strict passes and the log is the timeline', async () => {
      for (const v of ['0', '2']) {
        await ok(['-c', `protocol.version=${v}`, 'clone', '-q', `${withCreds(alicePat)}/v1/repos/kb.git`, `full-v${v}`]);
        await checkClone(`full-v${v}`, 'kb', pages);
        await ok(['-c', `protocol.version=${v}`, 'clone', '-q', '--depth', '1', `${withCreds(alicePat)}/v1/repos/kb`, `shallow-v${v}`]);
        await checkClone(`shallow-v${v}`, 'kb', pages, 1);
        const head = (await timeline('kb'))[0];
        expect(readFileSync(join(scratch.path, `shallow-v${v}`, '.git', 'shallow'), 'utf8')).toBe(`${head}\n`);
      }
      // Each clone that sent objects is a pull of alice's, named as git's.
      const activity = await (await t.api('/v1/repos/kb/activity?limit=10', { token: alicePat })).json();
      const pulls = (activity as { events: Array<{ action: string; detail?: unknown; email: string }> }).events.filter((e) => e.action === 'pull');
      expect(pulls).toHaveLength(4);
      for (const p of pulls) expect([p.email, p.detail]).toEqual(['alice@example.test', { client: 'git' }]);
    });

    it('git fetches what API pushes added, into full and shallow clones of both protocols', async () => {
      await pushKb([['notes/c.md', 'c changed\n'], ['new/e.md', 'e\n']]);
      for (const dir of ['full-v0', 'full-v2', 'shallow-v0', 'shallow-v2']) {
        await ok(['-C', dir, '-c', `protocol.version=${dir.slice(-1)}`, 'fetch', '-q']);
        await ok(['-C', dir, 'merge', '-q', '--ff-only', 'origin/main']);
        // A shallow clone's fetch keeps its old boundary: it now holds two commits.
        await checkClone(dir, 'kb', pages, dir.startsWith('shallow') ? 2 : undefined);
      }
      // Deepening a shallow clone to the whole history (`deepen 2147483647`, git's "infinite").
      await ok(['-C', 'shallow-v2', '-c', 'protocol.version=2', 'fetch', '-q', '--unshallow']);
      await checkClone('shallow-v2', 'kb', pages);
      await ok(['-C', 'shallow-v0', '-c', 'protocol.version=0', 'fetch', '-q', '--deepen', '1']);
      await checkClone('shallow-v0', 'kb', pages, 3);
    });

    it('a fetch sends only what the client lacks (v2 and v0, counted in the pack)', async () => {
      const [before] = await timeline('kb');
      const after = await pushKb([['notes/d.md', 'd two\n']]);
      // The new commit, the root tree, notes/ and the blob: 4 objects.
      const v2 = await call('/v1/repos/kb.git/git-upload-pack', {
        method: 'POST',
        headers: { 'git-protocol': 'version=2', 'content-type': 'application/x-git-upload-pack-request' },
        body: `${pkt('command=fetch\n')}0001${pkt(`want ${after}\n`)}${pkt(`have ${before}\n`)}${pkt('done\n')}0000`,
      });
      expect(v2.status).toBe(200);
      expect(v2.headers.get('content-type')).toBe('application/x-git-upload-pack-result');
      expect(packOf(v2.bytes).count).toBe(4);
      // v0, in two rounds as git's stateless client makes them: the haves (one unknown), then done.
      const unknown = 'f'.repeat(40);
      const wants = pkt(`want ${after} multi_ack_detailed no-done side-band-64k ofs-delta agent=git/2.39\n`);
      const round = await call('/v1/repos/kb/git-upload-pack', {
        method: 'POST',
        body: `${wants}0000${pkt(`have ${unknown}\n`)}${pkt(`have ${before}\n`)}0000`,
      });
      expect(packets(round.bytes)).toEqual([{ kind: 'line', text: `ACK ${before} common` }, { kind: 'line', text: 'NAK' }]);
      const done = await call('/v1/repos/kb/git-upload-pack', {
        method: 'POST',
        body: `${wants}0000${pkt(`have ${before}\n`)}${pkt('done\n')}`,
      });
      const lines = packets(done.bytes).filter((p) => p.kind === 'line');
      expect(lines).toEqual([{ kind: 'line', text: `ACK ${before} common` }, { kind: 'line', text: `ACK ${before}` }]);
      expect(packOf(done.bytes).count).toBe(4);
      // With no-done, a round whose haves make the server ready gets the pack at once.
      const ready = await call('/v1/repos/kb/git-upload-pack', { method: 'POST', body: `${wants}0000${pkt(`have ${before}\n`)}0000` });
      expect(packets(ready.bytes).filter((p) => p.kind === 'line')).toEqual([
        { kind: 'line', text: `ACK ${before} common` },
        { kind: 'line', text: `ACK ${before} ready` },
        { kind: 'line', text: 'NAK' },
        { kind: 'line', text: `ACK ${before}` },
      ]);
      expect(packOf(ready.bytes).count).toBe(4);
    });

    it('credentials as git gives them: URL userinfo, a credential helper, GIT_ASKPASS, a Bearer header; session and legacy tokens', async () => {
      const url = `${t.url}/v1/repos/kb.git`;
      const helper = `!f() { echo username=anyone; echo password=${alicePat}; }; f`;
      await ok(['-c', `credential.helper=${helper}`, 'clone', '-q', url, 'cred-helper']);
      const askpass = join(scratch.path, 'askpass.sh');
      writeFileSync(askpass, `#!/bin/sh\ncase "$1" in Username*) echo kr;; *) echo '${aliceSession}';; esac\n`);
      chmodSync(askpass, 0o755);
      await ok(['clone', '-q', url, 'cred-askpass'], { env: { GIT_ASKPASS: askpass } });
      await ok(['-c', `http.extraHeader=Authorization: Bearer ${LEGACY_KEY}`, 'clone', '-q', url, 'cred-bearer']);
      for (const dir of ['cred-helper', 'cred-askpass', 'cred-bearer']) await checkClone(dir, 'kb', pages);

      // A wrong token: git reports the failed authentication; the server asked for Basic credentials.
      const wrong = await git(['clone', '-q', `${withCreds('krp_nottherighttokennottherighttoken')}/v1/repos/kb.git`, 'cred-wrong']);
      expect(wrong.code).not.toBe(0);
      expect(wrong.stderr).toContain('Authentication failed');
      const raw = await call('/v1/repos/kb.git/info/refs?service=git-upload-pack', {
        headers: { authorization: `Basic ${Buffer.from('kr:krp_nottherighttokennottherighttoken').toString('base64')}` },
      });
      expect([raw.status, raw.headers.get('www-authenticate'), json(raw.bytes)]).toEqual([401, 'Basic realm="kr"', { error: 'invalid token', code: 'invalid_token' }]);
      const none = await call('/v1/repos/kb.git/info/refs?service=git-upload-pack', { token: null });
      expect([none.status, none.headers.get('www-authenticate'), json(none.bytes)]).toEqual([401, 'Basic realm="kr"', { error: 'missing authorization header', code: 'missing_authorization' }]);
      const noPrompt = await git(['clone', '-q', url, 'cred-none']);
      expect(noPrompt.code).not.toBe(0);
      expect(noPrompt.stderr).toContain('could not read Username');
      const scheme = await call('/v1/repos/kb/info/refs?service=git-upload-pack', { headers: { authorization: 'Digest x' } });
      expect([scheme.status, json(scheme.bytes)]).toEqual([401, { error: 'invalid authorization format, expected Basic or Bearer credentials', code: 'invalid_git_authorization_format' }]);
      // Other routes keep their Bearer-only answers.
      const pagesBasic = await call('/v1/repos/kb/pages', { headers: { authorization: `Basic ${Buffer.from(`kr:${alicePat}`).toString('base64')}` } });
      expect([pagesBasic.status, pagesBasic.headers.get('www-authenticate'), json(pagesBasic.bytes)]).toEqual([
        401,
        null,
        { error: 'invalid authorization format, expected Bearer <token>', code: 'invalid_authorization_format' },
      ]);
    });

    it('an outsider gets 403, a missing repository 404, an empty one clones empty', async () => {
      const outsider = await git(['clone', '-q', `${withCreds(bobSession)}/v1/repos/kb.git`, 'bob-kb']);
      expect(outsider.code).not.toBe(0);
      expect(outsider.stderr).toContain('403');
      const raw = await call('/v1/repos/kb.git/info/refs?service=git-upload-pack', { token: bobSession });
      expect([raw.status, json(raw.bytes)]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
      const post = await call('/v1/repos/kb.git/git-upload-pack', { method: 'POST', token: bobSession, body: '0000' });
      expect([post.status, json(post.bytes)]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
      const missing = await call('/v1/repos/nope.git/info/refs?service=git-upload-pack');
      expect([missing.status, json(missing.bytes)]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
      const gitMissing = await git(['clone', '-q', `${withCreds(LEGACY_KEY)}/v1/repos/nope.git`, 'nope']);
      expect(gitMissing.code).not.toBe(0);
      expect(gitMissing.stderr).toContain("repository '" + t.url + "/v1/repos/nope.git/' not found");

      expect((await t.api('/v1/repos', { method: 'POST', token: alicePat, json: { id: 'empty' } })).status).toBe(201);
      for (const v of ['0', '2']) {
        const r = await git(['-c', `protocol.version=${v}`, 'clone', `${withCreds(alicePat)}/v1/repos/empty.git`, `empty-v${v}`]);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toContain('You appear to have cloned an empty repository.');
      }
    });

    it('git push is refused with a message git shows, naming kr push', async () => {
      await ok(['clone', '-q', `${withCreds(alicePat)}/v1/repos/kb.git`, 'pusher']);
      writeFileSync(join(scratch.path, 'pusher', 'x.md'), 'x\n');
      await ok(['-C', 'pusher', 'add', 'x.md']);
      await ok(['-C', 'pusher', 'commit', '-qm', 'x']);
      const r = await git(['-C', 'pusher', 'push', 'origin', 'HEAD:main']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('kr repositories are written with "kr push" or POST /v1/repos/kb/sync/push');
      const raw = await call('/v1/repos/kb.git/info/refs?service=git-receive-pack');
      expect([raw.status, raw.headers.get('content-type'), Buffer.from(raw.bytes).toString('utf8')]).toEqual([
        403,
        'text/plain; charset=UTF-8',
        'kr repositories are written with "kr push" or POST /v1/repos/kb/sync/push\n',
      ]);
      const post = await call('/v1/repos/kb.git/git-receive-pack', { method: 'POST' });
      expect(post.status).toBe(403);
      expect((await timeline('kb')).length).toBe(5);
    });

    it('a clone whose client goes away stops: the server sent a fraction of the pack, and goes on serving', async () => {
      // Pages that do not compress: far more than the socket buffers between client and server hold.
      const HUGE = 160;
      const text = (i: number) => {
        let out = `# ${i}\n`;
        for (let k = 0; out.length < 64 * 1024; k++) out += `${createHash('sha256').update(`${i}:${k}`).digest('base64')}\n`;
        return out;
      };
      for (let part = 0; part < HUGE / 40; part++) {
        await push('huge', Array.from({ length: 40 }, (_, k) => ({ path: `huge/${part * 40 + k}.md`, content: text(part * 40 + k) })));
      }
      const [head] = await timeline('huge');
      const ac = new AbortController();
      // Plain fetch: the target's client reads every body whole (to check it against the OpenAPI document).
      const r = await fetch(`${t.url}/v1/repos/huge.git/git-upload-pack`, {
        method: 'POST',
        signal: ac.signal,
        headers: { authorization: `Bearer ${alicePat}`, 'git-protocol': 'version=2' },
        body: `${pkt('command=fetch\n')}0001${pkt(`want ${head}\n`)}${pkt('done\n')}0000`,
      });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      ac.abort();
      await reader.cancel().catch(() => undefined);
      // The Node server logs how little it sent (the hosted build's object notices a dropped reader only at its
      // next write, which flow control may hold back: there the case checks that the server goes on).
      if (kind === 'node') {
        let line: Record<string, unknown> | undefined;
        for (let i = 0; i < 600 && !line; i++) {
          for (const l of t.logs) {
            if (!l.includes('stream_cancelled') || !l.includes('git-fetch')) continue;
            const parsed = JSON.parse(l.slice(l.indexOf('{'))) as Record<string, unknown>;
            if (parsed.repo === 'huge') line = parsed;
          }
          if (!line) await sleep(50);
        }
        expect(line).toMatchObject({ what: 'git-fetch', commits: 4 });
        expect(line!.objects).toBeGreaterThan(HUGE);
        expect(line!.sent).toBeLessThan(HUGE / 2);
      }
      expect(t.logs.filter((l) => l.includes('stream_failed'))).toEqual([]);
      // The next clone is whole.
      await ok(['clone', '-q', `${withCreds(alicePat)}/v1/repos/huge.git`, 'huge']);
      await ok(['-C', 'huge', 'fsck', '--strict']);
      expect(readFileSync(join(scratch.path, 'huge', 'huge', '7.md'), 'utf8')).toBe(text(7));
    }, 300_000);

    it('bad requests get clear 4xx answers, and the server keeps serving meanwhile', async () => {
      const [head] = await timeline('kb');
      const v2 = { 'git-protocol': 'version=2' };
      const post = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
        call('/v1/repos/kb.git/git-upload-pack', { method: 'POST', body: body as BodyInit, headers });
      const refused = async (body: string | Uint8Array, status: number, error: string, code: string, headers: Record<string, string> = {}) => {
        const r = await post(body, headers);
        expect([r.status, json(r.bytes)]).toEqual([status, { error, code }]);
      };
      // 100,000 have lines: over the body cap as sent, and (gzip-compressed to a few KB) once inflated.
      const haves = pkt(`have ${head}\n`).repeat(100_000);
      const fetchHead = `${pkt('command=fetch\n')}0001${pkt(`want ${head}\n`)}`;
      // (As sent, 5 MB: refused on its Content-Length. Under Miniflare the Worker's early answer can reset the
      // connection while the client still writes, so the raw body is sent to the Node server only.)
      if (kind === 'node') await refused(`${fetchHead}${haves}0000`, 413, 'request body too large', 'body_too_large', v2);
      const zipped = gzipSync(Buffer.from(`${fetchHead}${haves}0000`));
      expect(zipped.byteLength).toBeLessThan(64 * 1024);
      await refused(zipped, 413, 'request body too large', 'body_too_large', { ...v2, 'content-encoding': 'gzip' });
      // 33,000 fit in the body but not in the line bound.
      await refused(gzipSync(Buffer.from(`${fetchHead}${pkt(`have ${head}\n`).repeat(33_000)}0000`)), 413, 'too many have lines (at most 32768)', 'git_request_too_large', {
        ...v2,
        'content-encoding': 'gzip',
      });
      // deepen 2^31 is no depth; 2^31 - 1 is git's "infinite" and is served.
      await refused(`${fetchHead}${pkt('deepen 2147483648\n')}${pkt('done\n')}0000`, 400, 'invalid deepen: 2147483648 (a depth is 1 to 2147483647)', 'invalid_git_request', v2);
      await refused(`${fetchHead}${pkt('deepen 0\n')}${pkt('done\n')}0000`, 400, 'invalid deepen: 0 (a depth is 1 to 2147483647)', 'invalid_git_request', v2);
      const infinite = await post(`${fetchHead}${pkt('deepen 2147483647\n')}${pkt('done\n')}0000`, v2);
      expect(infinite.status).toBe(200);
      expect(packets(infinite.bytes).slice(0, 3)).toEqual([{ kind: 'line', text: 'shallow-info' }, { kind: 'delim' }, { kind: 'line', text: 'packfile' }]);
      // Malformed pkt-lines.
      await refused('zzzz', 400, 'invalid pkt-line length at byte 0', 'invalid_git_request', v2);
      await refused('0003', 400, 'invalid pkt-line length 3 at byte 0', 'invalid_git_request', v2);
      await refused(`ffff${'x'.repeat(100)}`, 400, 'pkt-line length 65535 over 65520 at byte 0', 'invalid_git_request', v2);
      await refused(`${pkt('command=fetch\n')}00ffwant`, 400, 'truncated pkt-line at byte 18: length 255, 8 bytes left', 'invalid_git_request', v2);
      await refused('00', 400, 'truncated pkt-line length at byte 0', 'invalid_git_request', v2);
      await refused(`${pkt('command=push\n')}0000`, 400, 'unknown command "push"', 'invalid_git_request', v2);
      await refused(`${pkt('command=fetch\n')}0001${pkt('want nothex\n')}0000`, 400, 'invalid object id in "want nothex"', 'invalid_git_request', v2);
      await refused(`${pkt('command=fetch\n')}0001${pkt(`want ${'a'.repeat(40)}\n`)}${pkt('done\n')}0000`, 400, `not our ref ${'a'.repeat(40)}`, 'invalid_git_request', v2);
      await refused(`${pkt(`want ${head}\n`)}${pkt('have x\n')}`, 400, 'unexpected line in the want section: "have x"', 'invalid_git_request');
      await refused(`${pkt(`want ${head}\n`)}`, 400, 'the want section does not end with a flush packet', 'invalid_git_request');
      await refused(Buffer.from([0x1f, 0x8b, 0x08, 0x00, 1, 2, 3]), 400, 'invalid gzip body', 'invalid_gzip', { 'content-encoding': 'gzip' });
      await refused('0000', 415, 'unsupported content encoding', 'unsupported_encoding', { 'content-encoding': 'br' });
      // Still serving.
      const health = await t.api('/health', { token: null });
      expect(health.status).toBe(200);
      const good = await post(`${fetchHead}${pkt('done\n')}0000`, v2);
      expect(packOf(good.bytes).count).toBeGreaterThan(10);
    });
  });
}
