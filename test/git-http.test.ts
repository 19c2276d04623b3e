import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitHttpCases, packets, pkt } from './git-http-cases.ts';
import { startTestServer, type TestServer } from './helpers/env.ts';

/** git's own client against the Node server's git routes. */
gitHttpCases('node');

/** `git upload-pack --stateless-rpc` on `gitdir` with `body` (GIT_PROTOCOL as given): git's own answer. */
function gitUploadPack(gitdir: string, body: string, protocol?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: gitdir };
    if (protocol) env.GIT_PROTOCOL = protocol;
    const child = spawn('git', ['upload-pack', '--stateless-rpc', gitdir], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.on('error', reject);
    child.on('close', () => resolve(Buffer.concat(out)));
    child.stdin.end(body);
  });
}

/** The object ids a pack holds, as git's index-pack and verify-pack read it. */
function packObjects(pack: Buffer): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kr-pack-'));
  writeFileSync(join(dir, 'x.pack'), pack);
  return new Promise((resolve, reject) => {
    execFile('git', ['index-pack', join(dir, 'x.pack')], { env: { PATH: process.env.PATH, HOME: dir } }, (err) => {
      if (err) return reject(err);
      execFile('git', ['verify-pack', '-v', join(dir, 'x.idx')], { env: { PATH: process.env.PATH, HOME: dir } }, (err2, stdout) => {
        rmSync(dir, { recursive: true, force: true });
        if (err2) return reject(err2);
        resolve(stdout.split('\n').filter((l) => /^[0-9a-f]{40} /.test(l)).map((l) => l.slice(0, 40)).sort());
      });
    });
  });
}

/** What an answer says: its lines (progress and pack data left out), and the ids of the objects its pack holds. */
async function summary(body: Uint8Array): Promise<{ lines: string[]; objects: string[] | null }> {
  const ps = packets(body);
  const lines = ps.flatMap((p) => (p.kind === 'line' ? [p.text] : p.kind === 'band' ? [] : [p.kind]));
  const data = ps.flatMap((p) => (p.kind === 'band' && p.band === 1 ? [Buffer.from(p.data)] : []));
  return { lines, objects: data.length > 0 ? await packObjects(Buffer.concat(data)) : null };
}

describe('git over HTTP (node): the answers are those of git upload-pack on the same repository', () => {
  let srv: TestServer;
  const shas: string[] = [];
  beforeAll(async () => {
    srv = await startTestServer();
    for (let round = 0; round < 5; round++) {
      const files = Array.from({ length: 6 }, (_, i) => ({ path: `dir${i % 3}/page-${i}.md`, content: `# page ${i}\nround ${round}\n` }));
      if (round === 3) files.splice(0, 3);
      const r = await srv.api('/v1/repos/oracle/sync/push', { method: 'POST', json: { files, message: `round ${round}` } });
      shas.unshift(((await r.json()) as { new_head: string }).new_head);
    }
  }, 60_000);
  afterAll(async () => {
    await srv?.stop();
  });

  /** Our answer and git's to the same body, compared line for line and object set for object set. */
  const same = async (body: string, protocol?: string) => {
    const ours = await srv.api('/v1/repos/oracle.git/git-upload-pack', {
      method: 'POST',
      body,
      headers: protocol ? { 'git-protocol': protocol } : {},
    });
    expect(ours.status).toBe(200);
    const mine = await summary(new Uint8Array(await ours.arrayBuffer()));
    const theirs = await summary(await gitUploadPack(join(srv.dataRoot, 'repos', 'oracle.git'), body, protocol));
    expect(mine).toEqual(theirs);
    return mine;
  };

  it('v0: clone, shallow list, rounds with and without multi_ack, no-done, done, deepen-relative', async () => {
    const [head, h1, h2, h3] = shas as [string, string, string, string];
    const caps = (extra: string) => `want ${head} ${extra} side-band-64k ofs-delta no-progress agent=git/2.39.5\n`;
    const unknown = '0123456789abcdef0123456789abcdef01234567';
    expect((await same(`${pkt(caps('multi_ack_detailed no-done'))}0000${pkt('done\n')}`)).objects!.length).toBeGreaterThan(20);
    await same(`${pkt(caps('multi_ack_detailed no-done'))}${pkt('deepen 2\n')}0000`);
    await same(`${pkt(caps('multi_ack_detailed no-done'))}${pkt('deepen 2\n')}0000${pkt('done\n')}`);
    for (const acks of ['multi_ack_detailed', 'multi_ack_detailed no-done', 'multi_ack', '']) {
      await same(`${pkt(caps(acks))}0000${pkt(`have ${h2}\n`)}${pkt(`have ${unknown}\n`)}${pkt(`have ${h3}\n`)}0000`);
      await same(`${pkt(caps(acks))}0000${pkt(`have ${unknown}\n`)}${pkt(`have ${h1}\n`)}0000`);
      await same(`${pkt(caps(acks))}0000${pkt(`have ${unknown}\n`)}0000`);
      await same(`${pkt(caps(acks))}0000${pkt(`have ${h2}\n`)}${pkt(`have ${h3}\n`)}${pkt('done\n')}`);
    }
    // A depth-1 clone deepened by one, and one fetched whole again.
    await same(`${pkt(caps('multi_ack_detailed deepen-relative'))}${pkt(`shallow ${h1}\n`)}${pkt('deepen 1\n')}0000${pkt(`have ${h1}\n`)}${pkt('done\n')}`);
    await same(`${pkt(caps('multi_ack_detailed'))}${pkt(`shallow ${h2}\n`)}${pkt('deepen 2147483647\n')}0000${pkt(`have ${h1}\n`)}${pkt(`have ${h2}\n`)}${pkt('done\n')}`);
  });

  it('v2: ls-refs, fetch rounds, shallow-info with deepen and deepen-since', async () => {
    const [head, h1, h2] = shas as [string, string, string];
    const v2 = 'version=2';
    await same(`${pkt('command=ls-refs\n')}${pkt('agent=git/2.39.5\n')}0001${pkt('peel\n')}${pkt('symrefs\n')}${pkt('unborn\n')}${pkt('ref-prefix HEAD\n')}${pkt('ref-prefix refs/heads/\n')}0000`, v2);
    await same(`${pkt('command=ls-refs\n')}0001${pkt('ref-prefix refs/tags/\n')}0000`, v2);
    const fetch = (args: string[]) => `${pkt('command=fetch\n')}${pkt('object-format=sha1\n')}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;
    await same(fetch(['thin-pack', 'no-progress', 'ofs-delta', `want ${head}`, 'done']), v2);
    await same(fetch(['no-progress', `want ${head}`, `have ${'1'.repeat(40)}`]), v2);
    await same(fetch(['no-progress', `want ${head}`, `have ${h2}`, `have ${'1'.repeat(40)}`]), v2);
    await same(fetch(['no-progress', 'deepen 1', `want ${head}`, `have ${h2}`]), v2);
    await same(fetch(['no-progress', 'deepen 2', `want ${head}`, 'done']), v2);
    await same(fetch(['no-progress', `shallow ${h1}`, 'deepen 3', `want ${head}`, `have ${h1}`, 'done']), v2);
    await same(fetch(['no-progress', `shallow ${h1}`, `want ${head}`, `have ${h1}`, 'done']), v2);
    await same(fetch(['no-progress', 'deepen-since 1', `want ${head}`, 'done']), v2);
  });

  it('a repository whose packs git rewrote with deltas: the deltas are sent as whole objects, the same set as git sends', async () => {
    // Versions of big pages that differ by a line: git stores them as deltas of one another.
    const body = Array.from({ length: 100 }, (_, i) => `line ${i} of a long page that git will deltify\n`).join('');
    for (let round = 0; round < 3; round++) {
      const files = Array.from({ length: 4 }, (_, i) => ({ path: `big/page-${i}.md`, content: `# round ${round}\n${body}` }));
      const r = await srv.api('/v1/repos/oracle/sync/push', { method: 'POST', json: { files, message: `big ${round}` } });
      shas.unshift(((await r.json()) as { new_head: string }).new_head);
    }
    const gitdir = join(srv.dataRoot, 'repos', 'oracle.git');
    await new Promise<void>((resolve, reject) =>
      execFile('git', ['--git-dir', gitdir, 'repack', '-a', '-d', '-f', '--depth=10', '--window=50'], { env: { PATH: process.env.PATH, HOME: gitdir } }, (e) => (e ? reject(e) : resolve())),
    );
    const verify = await new Promise<string>((resolve, reject) =>
      execFile('sh', ['-c', `git --git-dir ${gitdir} verify-pack -v ${gitdir}/objects/pack/*.idx`], { env: { PATH: process.env.PATH, HOME: gitdir } }, (e, out) => (e ? reject(e) : resolve(out))),
    );
    // git made deltas of the pages' versions.
    expect(verify).toMatch(/chain length = [1-9]/);
    const [head, h2] = [shas[0]!, shas[2]!];
    const fetch = (args: string[]) => `${pkt('command=fetch\n')}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;
    expect((await same(fetch(['no-progress', `want ${head}`, 'done']), 'version=2')).objects!.length).toBeGreaterThan(20);
    await same(fetch(['no-progress', `want ${head}`, `have ${h2}`, 'done']), 'version=2');
  });
});
