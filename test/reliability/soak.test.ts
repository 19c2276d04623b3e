import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { LEGACY_KEY, logProblems, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { catFiles, fsckStrict, revList } from './helpers/git.ts';
import { rng, seedFor, type Rng } from './helpers/prng.ts';

/**
 * Soak (opt-in: RELIABILITY_SOAK=1, duration RELIABILITY_SOAK_SECONDS, default 600): the server as its own
 * process on loopback, 16 concurrent pushers on one repository for the whole duration, with readers and
 * sign-ins mixed in. Each pusher updates its own page with `parent_sha` (never a conflict) and now and
 * then the shared page with the last sha it knows (conflicts expected). Readers list pages, read one,
 * pull since a recent commit, read a history and a diff with blame; an account worker signs in (new and
 * returning users), mints and lists PATs, and calls /v1/me.
 *
 * Every request has a 10 s client-side timeout. The test fails on any request over 10 s (listed with
 * method, path, X-Request-Id and duration), on any 5xx or transport error, on any error or `lock_held`
 * in the server's log; and unless `git fsck --strict` passes and every acknowledged push is in
 * `git rev-list main` with the content it sent. It prints `[soak] ...` lines with the figures.
 */

const ENABLED = process.env.RELIABILITY_SOAK === '1';
const SECONDS = Number(process.env.RELIABILITY_SOAK_SECONDS ?? 600);
const PUSHERS = 16;
const READERS = 3;
const SLOW_MS = 10_000;
const REPO = 'soak';
const SHARED = 'shared/board.md';
const SEED = seedFor('soak', 0x50a4);

interface Sample {
  method: string;
  path: string;
  status: number | 'timeout' | 'error';
  ms: number;
  id: string | null;
  error?: string;
}

interface Answer {
  status: number;
  json: unknown;
  id: string | null;
}

class Client {
  readonly samples = { count: 0, slow: [] as Sample[], failed: [] as Sample[], slowest: null as Sample | null };
  readonly byKind = new Map<string, number>();
  constructor(readonly base: string) {}

  /** One request with a 10 s deadline; every answer is recorded. Null when no answer came (recorded too). */
  async send(method: string, path: string, token: string | null, json?: unknown): Promise<Answer | null> {
    const headers: Record<string, string> = {};
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (json !== undefined) headers['content-type'] = 'application/json';
    const t0 = performance.now();
    const kind = `${method} ${path.replace(/\?.*$/, '').replace(/^\/v1\/repos\/[^/]+\/([a-z-]+).*$/, '/v1/repos/:id/$1')}`;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    let sample: Sample;
    let answer: Answer | null = null;
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        signal: AbortSignal.timeout(SLOW_MS),
      });
      const text = await res.text();
      const id = res.headers.get('x-request-id');
      let parsed: unknown = text;
      if ((res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
      sample = { method, path, status: res.status, ms: performance.now() - t0, id };
      answer = { status: res.status, json: parsed, id };
    } catch (e) {
      const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
      sample = { method, path, status: timedOut ? 'timeout' : 'error', ms: performance.now() - t0, id: null, error: String(e) };
    }
    this.samples.count++;
    if (!this.samples.slowest || sample.ms > this.samples.slowest.ms) this.samples.slowest = sample;
    if (sample.ms > SLOW_MS || sample.status === 'timeout') this.samples.slow.push(sample);
    if (typeof sample.status !== 'number' || sample.status >= 500) this.samples.failed.push(sample);
    return answer;
  }
}

const show = (s: Sample) => `${s.method} ${s.path} → ${s.status} in ${Math.round(s.ms)} ms (request id ${s.id ?? 'none'})`;

interface Ack {
  sha: string;
  path: string;
  content: string;
}

function pageText(r: Rng, title: string, n: number): string {
  const lines = [`---`, `title: ${title}`, `rev: ${n}`, `---`, '', `# ${title}`, ''];
  for (let s = 0; s < 3; s++) {
    lines.push(`## Section ${s + 1}`, '');
    for (let l = 0, k = r.int(1, 4); l < k; l++) lines.push(`Line ${l} of revision ${n}: ${r.str(r.int(10, 60))}`);
    lines.push('');
  }
  return lines.join('\n');
}

describe.skipIf(!ENABLED)('soak', () => {
  it(
    `${PUSHERS} concurrent pushers with readers and sign-ins for ${SECONDS} s: no request over 10 s, no 5xx, every acknowledged push in git`,
    async () => {
      const idp: IdpStandIn = await startIdp();
      const dir = await tempDir('kr-soak-');
      let server: ServerProc | null = null;
      try {
        const dataRoot = join(dir.path, 'data');
        server = await spawnServer({
          dataRoot,
          env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
        });
        const client = new Client(server.url);
        const r = rng(SEED);

        const unexpected: string[] = [];
        /** The answer's JSON when it has the status expected; otherwise null, and noted (5xx are noted apart). */
        const expectStatus = <T>(a: Answer | null, status: number, what: string): T | null => {
          if (a === null) return null;
          if (a.status === status) return a.json as T;
          if (a.status < 500) unexpected.push(`${what} → ${a.status} ${JSON.stringify(a.json)} (request id ${a.id})`);
          return null;
        };
        const signIn = async (sub: string): Promise<string | null> => {
          const idToken = await idp.signIdToken({ sub, email: `${sub}@example.test`, name: sub });
          const a = await client.send('POST', '/v1/auth/idp', null, { id_token: idToken });
          return expectStatus<{ access_token: string }>(a, 200, `sign-in ${sub}`)?.access_token ?? null;
        };
        const mintPat = async (token: string, label: string): Promise<string | null> => {
          const a = await client.send('POST', '/v1/pats', token, { label });
          return expectStatus<{ token: string }>(a, 201, `PAT ${label}`)?.token ?? null;
        };
        const must = <T>(v: T | null, what: string): T => {
          if (v === null) throw new Error(`setup failed: ${what}\n${unexpected.join('\n')}`);
          return v;
        };

        // The repository, its owner and three members; pushers use sessions, PATs and the legacy key.
        const owner = must(await signIn('owner'), 'owner sign-in');
        must(expectStatus(await client.send('POST', '/v1/repos', owner, { id: REPO }), 201, 'create'), 'create');
        const invite = await client.send('POST', `/v1/repos/${REPO}/invite-keys`, owner, { label: 'soak' });
        const inviteToken = must(expectStatus<{ token: string }>(invite, 201, 'invite'), 'invite').token;
        const tokens: string[] = [owner, must(await mintPat(owner, 'owner-pat'), 'PAT'), LEGACY_KEY];
        for (const m of ['m1', 'm2', 'm3']) {
          const session = must(await signIn(m), `${m} sign-in`);
          must(expectStatus(await client.send('POST', '/v1/repos/join', session, { key: inviteToken }), 200, 'join'), 'join');
          tokens.push(session, must(await mintPat(session, `${m}-pat`), 'PAT'));
        }

        const acks: Ack[] = [];
        const recent: string[] = [];
        let pushes = 0;
        let conflicts = 0;
        let retries = 0;
        const deadline = performance.now() + SECONDS * 1000;
        const running = () => performance.now() < deadline;

        const pusher = async (i: number) => {
          const pr = rng(SEED + 1 + i);
          const token = tokens[i % tokens.length]!;
          const mine = `pages/pusher-${String(i).padStart(2, '0')}.md`;
          let mineSha: string | undefined;
          let sharedSha: string | undefined;
          for (let n = 1; running(); n++) {
            const files: Array<{ path: string; content: string; parent_sha?: string }> = [
              { path: mine, content: pageText(pr, `Pusher ${i}`, n), ...(mineSha ? { parent_sha: mineSha } : {}) },
            ];
            const shared = pr.chance(0.2);
            if (shared) {
              files.push({ path: SHARED, content: pageText(pr, `Board by ${i}`, n), ...(sharedSha ? { parent_sha: sharedSha } : {}) });
            }
            const a = await client.send('POST', `/v1/repos/${REPO}/sync/push`, token, {
              message: `pusher ${i} update ${n}`,
              author_name: `pusher ${i}`,
              author_email: `pusher${i}@example.test`,
              files,
            });
            if (a === null) {
              // No answer (recorded as a failure): whether it landed is unknown, so overwrite next time.
              mineSha = undefined;
              sharedSha = undefined;
              continue;
            }
            const body = a.json as {
              new_head: string;
              pushed: Array<{ path: string; sha: string; unchanged?: boolean }>;
              conflicts: Array<{ path: string; current_sha: string }>;
              error?: string;
            };
            if (a.status === 409 && body.error === 'concurrent update, retry') {
              retries++;
              continue;
            }
            if (a.status !== 200 && a.status !== 409) {
              if (a.status < 500) unexpected.push(`push by ${i} → ${a.status} ${JSON.stringify(a.json)} (request id ${a.id})`);
              mineSha = undefined;
              sharedSha = undefined;
              continue;
            }
            for (const p of body.pushed) {
              if (p.unchanged) continue;
              const content = files.find((f) => f.path === p.path)!.content;
              acks.push({ sha: p.sha, path: p.path, content });
              if (p.path === mine) mineSha = p.sha;
              else sharedSha = p.sha;
            }
            for (const c of body.conflicts) {
              if (c.path === mine) unexpected.push(`conflict on ${i}'s own page (request id ${a.id})`);
              else sharedSha = c.current_sha;
              conflicts++;
            }
            if (body.pushed.some((p) => !p.unchanged)) {
              pushes++;
              recent.push(body.new_head);
              if (recent.length > 64) recent.shift();
            }
          }
        };

        const reader = async (i: number) => {
          const rr = rng(SEED + 100 + i);
          const token = tokens[(i * 2 + 1) % tokens.length]!;
          while (running()) {
            const page = `pages/pusher-${String(rr.int(0, PUSHERS - 1)).padStart(2, '0')}.md`;
            const which = rr.int(0, 5);
            let a: Answer | null;
            if (which === 0) a = await client.send('GET', `/v1/repos/${REPO}/pages`, token);
            else if (which === 1) {
              a = await client.send('GET', `/v1/repos/${REPO}/pages/${page}`, token);
              if (a?.status === 404) continue; // not pushed yet
            } else if (which === 2) {
              const since = recent.length > 0 ? recent[rr.int(0, recent.length - 1)] : undefined;
              a = await client.send('GET', `/v1/repos/${REPO}/sync/pull${since ? `?since=${since}` : ''}`, token);
            } else if (which === 3) a = await client.send('GET', `/v1/repos/${REPO}/history/${page}?limit=20`, token);
            else if (which === 4) {
              a = await client.send('GET', `/v1/repos/${REPO}/diff/${page}?blame=true`, token);
              // A page with one commit has no parent to diff against; a page not pushed yet is absent.
              if (a?.status === 400 || a?.status === 404) continue;
            } else a = await client.send('GET', `/v1/repos/${REPO}/timeline?limit=20`, token);
            expectStatus(a, 200, `reader ${i}`);
          }
        };

        const accounts = async () => {
          let n = 0;
          while (running()) {
            n++;
            // Returning users and new ones; each mints a PAT, lists its PATs and reads /v1/me with it.
            const session = await signIn(r.chance(0.5) ? `visitor-${n}` : `m${r.int(1, 3)}`);
            const pat = session === null ? null : await mintPat(session, `soak-${n}`);
            if (session !== null && pat !== null) {
              for (const [path, token] of [['/v1/pats', session], ['/v1/me', pat], ['/v1/repos', pat]] as const) {
                expectStatus(await client.send('GET', path, token), 200, path);
              }
            }
            await new Promise((res) => setTimeout(res, 100));
          }
        };

        const t0 = performance.now();
        await Promise.all([
          ...Array.from({ length: PUSHERS }, (_, i) => pusher(i)),
          ...Array.from({ length: READERS }, (_, i) => reader(i)),
          accounts(),
        ]);
        const wallS = (performance.now() - t0) / 1000;

        // What git holds: a valid repository with every acknowledged commit, each page as it was sent.
        const gitdir = join(dataRoot, 'repos', `${REPO}.git`);
        await fsckStrict(gitdir);
        const inGit = new Set(await revList(gitdir));
        const missing = acks.filter((a) => !inGit.has(a.sha));
        const contents = await catFiles(gitdir, acks.map((a) => `${a.sha}:${a.path}`));
        const wrong = acks.filter((a, i) => contents[i]?.toString('utf8') !== a.content);

        const events = server.events();
        const lockEvents = events.filter((e) => e.event === 'lock_held' || e.event === 'slow_request');
        const slowest = client.samples.slowest;
        console.log(
          `[soak] seed=${SEED} seconds=${Math.round(wallS)} pushers=${PUSHERS} pushes=${pushes} conflicts=${conflicts} ` +
            `retries=${retries} requests=${client.samples.count} commits_in_git=${inGit.size} ` +
            `slowest=${slowest ? Math.round(slowest.ms) : 0}ms ${slowest ? `${slowest.method} ${slowest.path} (request id ${slowest.id})` : ''}`,
        );
        console.log(`[soak] requests by kind: ${[...client.byKind].map(([k, v]) => `${k}=${v}`).join(', ')}`);
        for (const e of lockEvents) console.log(`[soak] server: ${JSON.stringify(e)}`);

        expect(client.samples.slow.map(show), 'requests over 10 s').toEqual([]);
        expect(client.samples.failed.map(show), '5xx answers and transport errors').toEqual([]);
        expect(unexpected, 'unexpected answers').toEqual([]);
        expect(lockEvents, 'lock_held / slow_request in the server log').toEqual([]);
        expect(logProblems(events), 'errors in the server log').toEqual([]);
        expect(missing.map((a) => a.sha), 'acknowledged commits missing from git rev-list').toEqual([]);
        expect(wrong.map((a) => `${a.sha}:${a.path}`), 'acknowledged pages whose content differs in git').toEqual([]);
        expect(pushes).toBeGreaterThan(0);
      } finally {
        await server?.stop();
        await idp.close();
        await dir.cleanup();
      }
    },
    (SECONDS + 600) * 1000,
  );
});
