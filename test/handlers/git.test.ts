import { afterEach, describe, expect, it } from 'vitest';
import gitInfoRefs from '../../functions/git/info-refs.ts';
import gitUploadPack from '../../functions/git/upload-pack.ts';
import gitReceivePack from '../../functions/git/receive-pack.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ALL = [gitInfoRefs, gitUploadPack, gitReceivePack];
const ADVERTISEMENT = 'application/x-git-upload-pack-advertisement';
const RESULT = 'application/x-git-upload-pack-result';
const REFUSAL = 'kr repositories are written with "kr push" or POST /v1/repos/notes/sync/push\n';

/** A pkt-line of `text`. */
const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, '0')}${text}`;

/** The packets of an answer: text lines (`\n` cut), `flush`/`delim`, and once the pack begins, side-band data. */
function packets(body: Uint8Array): Array<{ kind: 'line'; text: string } | { kind: 'flush' | 'delim' } | { kind: 'band'; band: number; data: Uint8Array }> {
  const out: ReturnType<typeof packets> = [];
  let inPack = false;
  for (let at = 0; at < body.byteLength; ) {
    const n = parseInt(Buffer.from(body.subarray(at, at + 4)).toString('latin1'), 16);
    if (n < 4) {
      out.push({ kind: n === 0 ? 'flush' : 'delim' });
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

/** The object count of the pack in band 1. */
function packCount(body: Uint8Array): number {
  const pack = Buffer.concat(packets(body).flatMap((p) => (p.kind === 'band' && p.band === 1 ? [Buffer.from(p.data)] : [])));
  expect(pack.subarray(0, 4).toString('latin1')).toBe('PACK');
  return pack.readUInt32BE(8);
}

/** `Authorization: Basic base64(<user>:<password>)`, as git sends it. */
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());
const lines = (body: Uint8Array) => packets(body).map((p) => (p.kind === 'line' ? p.text : p.kind));

/** `notes` with one commit, alice its owner, bob a user who is not a member. */
async function setup(m: MountedHandler): Promise<{ alice: TestUser; bob: TestUser; head: string }> {
  const head = await m.commit('notes', { 'a.md': '# A\n', 'wiki/b.md': 'b\n' });
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  await m.deps.members.add('notes', alice.id, 'owner');
  return { alice, bob, head };
}

describe('GET /v1/repos/:id/info/refs (functions/git/info-refs.ts)', () => {
  it('v0: the service line, then HEAD and the branch with the capabilities; with or without `.git`', async () => {
    h = await mountHandler(gitInfoRefs);
    const { alice, head } = await setup(h);
    for (const id of ['notes', 'notes.git']) {
      const res = await alice.request(`/v1/repos/${id}/info/refs?service=git-upload-pack`);
      expect([res.status, res.headers.get('content-type')]).toEqual([200, ADVERTISEMENT]);
      const got = lines(await bytesOf(res));
      expect(got.slice(0, 2)).toEqual(['# service=git-upload-pack', 'flush']);
      expect(got[2]).toMatch(new RegExp(`^${head} HEAD\0.*\\bsymref=HEAD:refs/heads/main\\b`));
      expect(got.slice(3)).toEqual([`${head} refs/heads/main`, 'flush']);
    }
  });

  it('v2 (`Git-Protocol: version=2`): `version 2` and the capabilities, without the service line (as git-http-backend)', async () => {
    h = await mountHandler(gitInfoRefs);
    const { alice } = await setup(h);
    const res = await alice.request('/v1/repos/notes.git/info/refs?service=git-upload-pack', { headers: { 'git-protocol': 'version=2' } });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, ADVERTISEMENT]);
    expect(lines(await bytesOf(res))).toEqual([
      'version 2',
      expect.stringMatching(/^agent=kr\/\d+\.\d+\.\d+$/),
      'ls-refs=unborn',
      'fetch=shallow',
      'server-option',
      'object-format=sha1',
      'flush',
    ]);
  });

  it('an empty repository advertises no reference (v0): git clones it empty', async () => {
    h = await mountHandler(gitInfoRefs);
    await h.deps.repos.create('empty');
    const res = await h.legacy.request('/v1/repos/empty.git/info/refs?service=git-upload-pack');
    expect([res.status, lines(await bytesOf(res))]).toEqual([200, ['# service=git-upload-pack', 'flush', 'flush']]);
  });

  it('400 without service=git-upload-pack; 403 text/plain for git-receive-pack', async () => {
    h = await mountHandler(gitInfoRefs);
    const { alice } = await setup(h);
    const none = await alice.request('/v1/repos/notes/info/refs');
    expect([none.status, await none.json()]).toEqual([400, { error: "only git's smart HTTP protocol is served: service=git-upload-pack", code: 'unsupported_service' }]);
    const dumb = await alice.request('/v1/repos/notes/info/refs?service=git-archive');
    expect([dumb.status, await dumb.json()]).toEqual([400, { error: "only git's smart HTTP protocol is served: service=git-upload-pack", code: 'unsupported_service' }]);
    const push = await alice.request('/v1/repos/notes.git/info/refs?service=git-receive-pack');
    expect([push.status, push.headers.get('content-type'), await push.text()]).toEqual([403, 'text/plain; charset=UTF-8', REFUSAL]);
  });

  it('401 with `WWW-Authenticate: Basic realm="kr"` without credentials, with a bad password or another scheme', async () => {
    h = await mountHandler(gitInfoRefs);
    await setup(h);
    const path = '/v1/repos/notes.git/info/refs?service=git-upload-pack';
    const cases: Array<[Record<string, string>, string, string]> = [
      [{}, 'missing authorization header', 'missing_authorization'],
      [basic('kr', 'krp_nottherighttokennottherighttoken'), 'invalid token', 'invalid_token'],
      [basic('kr', ''), 'invalid token', 'invalid_token'],
      [{ authorization: 'Bearer nope' }, 'invalid token', 'invalid_token'],
      [{ authorization: 'Digest x' }, 'invalid authorization format, expected Basic or Bearer credentials', 'invalid_git_authorization_format'],
      [{ authorization: 'Basic !!!' }, 'invalid authorization format, expected Basic or Bearer credentials', 'invalid_git_authorization_format'],
    ];
    for (const [headers, error, code] of cases) {
      const res = await h.request(path, { headers });
      expect([res.status, res.headers.get('www-authenticate'), await res.json()], JSON.stringify(headers)).toEqual([401, 'Basic realm="kr"', { error, code }]);
    }
  });

  it('Basic with any user name and a PAT, a session token or the legacy key as the password; Bearer too', async () => {
    h = await mountHandler(gitInfoRefs);
    const { alice } = await setup(h);
    const pat = await h.deps.pats.create(alice.id, { expiresInDays: 10 });
    const path = '/v1/repos/notes/info/refs?service=git-upload-pack';
    for (const headers of [
      basic('kr', pat.token),
      basic('anyone at all', alice.token),
      basic('', h.config.apiKey),
      { authorization: `Bearer ${pat.token}` },
    ]) {
      const res = await h.request(path, { headers });
      expect([res.status, res.headers.get('content-type')]).toEqual([200, ADVERTISEMENT]);
    }
  });

  it('an outsider gets 403; a missing repository 404 (the legacy key), 403 (a user)', async () => {
    h = await mountHandler(gitInfoRefs);
    const { bob } = await setup(h);
    const outsider = await h.request('/v1/repos/notes.git/info/refs?service=git-upload-pack', { headers: basic('kr', bob.token) });
    expect([outsider.status, await outsider.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
    const missing = await h.legacy.request('/v1/repos/nope.git/info/refs?service=git-upload-pack');
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
    const missingUser = await bob.request('/v1/repos/nope.git/info/refs?service=git-upload-pack');
    expect([missingUser.status, await missingUser.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
  });
});

describe('POST /v1/repos/:id/git-upload-pack (functions/git/upload-pack.ts)', () => {
  it('v2 `ls-refs`: HEAD and the branch, then a flush', async () => {
    h = await mountHandler(gitUploadPack);
    const { alice, head } = await setup(h);
    const res = await alice.request('/v1/repos/notes.git/git-upload-pack', {
      method: 'POST',
      headers: { 'git-protocol': 'version=2', 'content-type': 'application/x-git-upload-pack-request' },
      body: `${pkt('command=ls-refs\n')}0001${pkt('symrefs\n')}${pkt('ref-prefix HEAD\n')}${pkt('ref-prefix refs/heads/\n')}0000`,
    });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, RESULT]);
    expect(lines(await bytesOf(res))).toEqual([`${head} HEAD symref-target:refs/heads/main`, `${head} refs/heads/main`, 'flush']);
  });

  it('v0 want/done: NAK and the pack of every object of the head', async () => {
    h = await mountHandler(gitUploadPack);
    const { alice, head } = await setup(h);
    const res = await h.request('/v1/repos/notes/git-upload-pack', {
      method: 'POST',
      headers: { ...basic('kr', alice.token), 'content-type': 'application/x-git-upload-pack-request' },
      body: `${pkt(`want ${head} side-band-64k ofs-delta agent=git/2.39\n`)}0000${pkt('done\n')}`,
    });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, RESULT]);
    const body = await bytesOf(res);
    expect(packets(body)[0]).toEqual({ kind: 'line', text: 'NAK' });
    // The commit, the root tree, wiki/ and two blobs.
    expect(packCount(body)).toBe(5);
    // A fetch that sent commits is alice's pull, by git.
    const { events } = await h.deps.activity.list('notes', 10, 0);
    expect(events.filter((e) => e.action === 'pull').map((e) => [e.email, e.detail])).toEqual([['alice@example.com', { client: 'git' }]]);
  });

  it('401 with the Basic challenge without credentials; 403 for an outsider; 404 for a missing repository', async () => {
    h = await mountHandler(gitUploadPack);
    const { bob } = await setup(h);
    const none = await h.request('/v1/repos/notes.git/git-upload-pack', { method: 'POST', body: '0000' });
    expect([none.status, none.headers.get('www-authenticate'), await none.json()]).toEqual([401, 'Basic realm="kr"', { error: 'missing authorization header', code: 'missing_authorization' }]);
    const outsider = await h.request('/v1/repos/notes.git/git-upload-pack', { method: 'POST', body: '0000', headers: basic('kr', bob.token) });
    expect([outsider.status, await outsider.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
    const missing = await h.legacy.request('/v1/repos/nope.git/git-upload-pack', { method: 'POST', body: '0000' });
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
    const malformed = await h.legacy.request('/v1/repos/notes.git/git-upload-pack', { method: 'POST', body: 'zzzz', headers: { 'git-protocol': 'version=2' } });
    expect([malformed.status, await malformed.json()]).toEqual([400, { error: 'invalid pkt-line length at byte 0', code: 'invalid_git_request' }]);
  });
});

describe('POST /v1/repos/:id/git-receive-pack (functions/git/receive-pack.ts)', () => {
  it('403 text/plain with the message git shows, to a member and the legacy key; nothing is written', async () => {
    h = await mountHandler(gitReceivePack);
    const { alice, head } = await setup(h);
    for (const caller of [alice, h.legacy]) {
      const res = await caller.request('/v1/repos/notes.git/git-receive-pack', { method: 'POST', body: '0000' });
      expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([403, 'text/plain; charset=UTF-8', REFUSAL]);
    }
    expect((await h.deps.repos.head('notes'))?.sha).toBe(head);
  });

  it('401 with the Basic challenge without credentials; an outsider gets 403 `not a member of this repo`', async () => {
    h = await mountHandler(ALL);
    const { bob } = await setup(h);
    const none = await h.request('/v1/repos/notes.git/git-receive-pack', { method: 'POST' });
    expect([none.status, none.headers.get('www-authenticate'), await none.json()]).toEqual([401, 'Basic realm="kr"', { error: 'missing authorization header', code: 'missing_authorization' }]);
    const outsider = await bob.request('/v1/repos/notes.git/git-receive-pack', { method: 'POST' });
    expect([outsider.status, await outsider.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
  });
});
