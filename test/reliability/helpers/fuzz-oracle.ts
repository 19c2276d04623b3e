/**
 * The fuzz test's oracle: for each generated request, the answers docs/api.md allows — worked out before the
 * request is sent, from the request alone (method, target, credential, body bytes) and what the fixture
 * knows for certain (who owns what, which shas exist).
 *
 * Three kinds of expectation:
 *  - exact: one answer, status and error body (`400 {"error":"invalid page path: a\u0085"}`);
 *  - pinned: a few documented answers, where the order of the concurrent requests decides between them
 *    (a disposable PAT is deleted once: 204, then 404 `pat not found`);
 *  - open: any answer below 500 (or any 4xx), where the outcome legitimately varies: raw bytes no client
 *    sends, headers near the server's size limit, a page path that only rules being added now may refuse.
 *
 * It only ever claims a page path is accepted when it is plainly valid (ASCII letters, digits, `-`, `_`,
 * `.`; no device names), and only claims a refusal for the rules the contract has always stated, so the
 * expectations hold while new refusals land. Routing and percent-decoding are Hono's (the same version
 * the server runs), over a route table written out from docs/api.md.
 */
import { Hono } from 'hono';
import type { FuzzContext, FuzzRequest } from './fuzz-gen.ts';

export interface Outcome {
  status: number;
  /** The exact `error` of the JSON body, or a pattern it must match. */
  error?: string | RegExp;
  /** Keys the JSON body must carry with exactly these values. */
  json?: Record<string, unknown>;
  /** A 409 push answer: `conflicts` is a non-empty array. */
  conflicts?: true;
}

export interface Expectation {
  /** null: open (any answer below 500, or any 4xx with `only4xx`). */
  outcomes: Outcome[] | null;
  only4xx?: boolean;
  /** What decided it, for the tally and for failure messages. */
  why: string;
}

export type ExpectationKind = 'exact' | 'pinned' | 'open';
export const kindOf = (e: Expectation): ExpectationKind => (e.outcomes === null ? 'open' : e.outcomes.length === 1 ? 'exact' : 'pinned');

export interface Limits {
  /** SERVICE_MAX_BODY_BYTES of the server under test. */
  maxBody: number;
  /** The cap of routes whose body is small JSON (docs/limits.md: 64 KiB). */
  smallBody: number;
}

// --- docs/api.md messages
const MISSING_AUTH = 'missing authorization header';
const BAD_FORMAT = 'invalid authorization format, expected Bearer <token>';
const INVALID_TOKEN = 'invalid token';
const USER_REQUIRED = 'user session required';
const NOT_MEMBER = 'not a member of this repo';
const TOO_LARGE = 'request body too large';
const INVALID_JSON = 'invalid JSON body';
const INVALID_REQUEST = /^invalid request: /;
const REMOVED = 'removed from this repo; ask an owner for a new invite key';
const ALREADY_EXISTS = 'repo already exists';
const PATH_NOT_IN_REPO = 'path not present in repo';
const PATH_NOT_AT_EITHER = 'path not present at either sha';
const NO_PARENT = 'no parent commit for this path; pass ?from explicitly';
const OWNER_ONLY: Record<string, string> = {
  'invite.mint': 'only an owner can manage invite keys',
  'invite.list': 'only an owner can manage invite keys',
  'invite.revoke': 'only an owner can manage invite keys',
  'member.remove': 'only an owner can remove members',
  'repo.delete': 'only an owner can delete a repository',
};

const err = (status: number, error: string | RegExp): Outcome => ({ status, error });
const ok = (status: number, json?: Record<string, unknown>): Outcome => (json ? { status, json } : { status });
const invalidPath = (p: string) => err(400, `invalid page path: ${p}`);
const unknownSha = (v: string) => err(400, `unknown sha: ${v}`);

/** The authentication answer of a credential kind the generator annotated (see fuzz-gen.ts credential()). */
export const AUTH_ERRORS = { missing: MISSING_AUTH, format: BAD_FORMAT, invalid: INVALID_TOKEN } as const;

// --- Routing: the route table of docs/api.md, in the server's mounting order (join before :id).
const ROUTE_TABLE: Array<[string, string]> = [
  ['GET', '/health'],
  ['POST', '/v1/auth/idp'],
  ['GET', '/v1/me'],
  ['POST', '/v1/pats'],
  ['GET', '/v1/pats'],
  ['DELETE', '/v1/pats/:id'],
  ['GET', '/v1/repos'],
  ['POST', '/v1/repos'],
  ['POST', '/v1/repos/join'],
  ['POST', '/v1/repos/:id'],
  ['DELETE', '/v1/repos/:id'],
  ['GET', '/v1/repos/:id/members'],
  ['DELETE', '/v1/repos/:id/members/:userId'],
  ['POST', '/v1/repos/:id/invite-keys'],
  ['GET', '/v1/repos/:id/invite-keys'],
  ['DELETE', '/v1/repos/:id/invite-keys/:keyId'],
  ['GET', '/v1/repos/:id/pages'],
  ['GET', '/v1/repos/:id/pages/:path{.+}'],
  ['POST', '/v1/repos/:id/sync/push'],
  ['GET', '/v1/repos/:id/sync/pull'],
  ['GET', '/v1/repos/:id/timeline'],
  ['GET', '/v1/repos/:id/history/:path{.+}'],
  ['GET', '/v1/repos/:id/diff/:path{.+}'],
  ['GET', '/v1/repos/:id/evolution/:path{.+}'],
  ['GET', '/v1/repos/:id/activity'],
];

interface Routed {
  route: string;
  params: Record<string, string>;
  query: Record<string, string | null>;
}

const router = new Hono();
for (const [method, path] of ROUTE_TABLE) {
  router.on(method, path, (c) =>
    c.json({ route: `${method} ${path}`, params: c.req.param(), query: Object.fromEntries(['since', 'from', 'to', 'confirm'].map((k) => [k, c.req.query(k) ?? null])) }),
  );
}
for (const path of new Set(ROUTE_TABLE.map(([, p]) => p))) router.all(path, (c) => c.json({ route: '405', params: {}, query: {} }));
router.notFound((c) => c.json({ route: '404', params: {}, query: {} }));

/** How the server routes a request target (the URL parsing of @hono/node-server, then Hono). */
async function routeOf(method: string, target: string): Promise<Routed | null> {
  try {
    // HEAD is routed as GET (Hono), and answered without a body.
    const res = await router.fetch(new Request(`http://fuzz.invalid${target}`, { method: method === 'HEAD' ? 'GET' : method }));
    return (await res.json()) as Routed;
  } catch {
    return null;
  }
}

// --- Page paths and repository ids, as docs/concepts.md states them.
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** Refused by a rule the contract has always stated (docs/concepts.md "Pages and paths", the list). */
export function definitelyRefused(p: string): boolean {
  if (p.length === 0 || utf8Bytes(p) > 512) return true;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(p)) return true;
  if (/[\ud800-\udfff]/.test(p.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) return true;
  if (p.includes('\\') || p.startsWith('/')) return true;
  return p.split('/').some((s) => s === '' || s === '.' || s === '..' || s.startsWith('-') || s.toLowerCase() === '.git');
}

const WINDOWS_DEVICE = /^(?:aux|con|conin\$|conout\$|nul|prn|com[0-9]|lpt[0-9])(?:[. ]|$)/i;
/** Accepted under every rule, old and new: ASCII letters, digits, `_`, `-`, `.`, nothing Windows refuses. */
export function plainlyValid(p: string): boolean {
  return utf8Bytes(p) <= 512 && p.split('/').every((s) => /^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(s) && !s.endsWith('.') && !WINDOWS_DEVICE.test(s));
}

type PathClass = 'refused' | 'valid' | 'maybe';
const classify = (p: string): PathClass => (definitelyRefused(p) ? 'refused' : plainlyValid(p) ? 'valid' : 'maybe');
/** As a new path in a push: an upper-case letter could collide, ignoring case, with a page at head. */
const classifyNew = (p: string): PathClass => {
  const c = classify(p);
  return c === 'valid' && /[A-Z]/.test(p) ? 'maybe' : c;
};

/** docs/concepts.md "Repositories": the id in a path is stripped to [A-Za-z0-9_-]; nothing left or more than 64 chars → null. */
const stripId = (raw: string): string | null => {
  const s = raw.replace(/[^A-Za-z0-9_-]/g, '');
  return s.length === 0 || s.length > 64 ? null : s;
};

// --- Bodies: the server reads them as UTF-8 text (a BOM dropped), then JSON.
type Parsed = { ok: true; value: unknown } | { ok: false };
function parseBody(body: Uint8Array | undefined, emptyAsObject: boolean): Parsed {
  const text = body ? new TextDecoder().decode(body) : '';
  if (emptyAsObject && text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optStr = (v: unknown) => v === undefined || typeof v === 'string';
const codePoints = (s: string) => [...s].length;

interface PushFileV {
  path: string;
  content?: string;
  parent_sha?: string;
  delete?: boolean;
}
function pushFiles(v: unknown): PushFileV[] | null {
  if (!isObj(v) || !Array.isArray(v.files) || !optStr(v.message) || !optStr(v.author_name) || !optStr(v.author_email)) return null;
  for (const f of v.files) {
    if (!isObj(f) || typeof f.path !== 'string' || !optStr(f.content) || !optStr(f.parent_sha)) return null;
    if (f.delete !== undefined && typeof f.delete !== 'boolean') return null;
  }
  return v.files as PushFileV[];
}

// --- Who is asking, and what the fixture guarantees about them.
type Who = { kind: 'legacy' } | { kind: 'user'; id: string; name: 'alice' | 'bob' | 'carol' };
type Role = 'owner' | 'member' | null;
interface Scenario {
  role: Role;
  exists: boolean;
}

/**
 * The states a repository can be in for this caller at any moment of the run. Fixed: 'fz' and 'lg' exist;
 * alice owns 'fz' (its only owner: she cannot be removed), bob is a member (no request removes him).
 * 'lg' was made by the legacy key after the first user signed in, so it stays ownerless: no user is ever its
 * member (docs/concepts.md "Repositories": only the first user adopts). Everything else may change under concurrent requests: carol
 * joins and is removed, other ids may be created.
 */
function scenarios(id: string, who: Who): Scenario[] {
  const fixed = id === 'fz' || id === 'lg';
  if (who.kind === 'legacy') return fixed ? [{ role: null, exists: true }] : [{ role: null, exists: true }, { role: null, exists: false }];
  if (id === 'fz' && who.name === 'alice') return [{ role: 'owner', exists: true }];
  if (id === 'fz' && who.name === 'bob') return [{ role: 'member', exists: true }];
  if (id === 'fz') return [{ role: null, exists: true }, { role: 'member', exists: true }];
  if (id === 'lg') return [{ role: null, exists: true }];
  const held: Scenario[] = [{ role: null, exists: true }, { role: 'owner', exists: true }, { role: 'member', exists: true }];
  return fixed ? held : [{ role: null, exists: false }, ...held];
}

/** An id equal to 'fz' or 'lg' ignoring case, but not exactly: creating it is 409 (docs/concepts.md "Repositories"). */
const caseTwin = (id: string) => ['fz', 'lg'].some((x) => x !== id && x === id.toLowerCase());

/** openRepo(): membership (403), owner-only actions (403), existence (404), then `cont`. */
function repoScoped(action: string, id: string, who: Who, cont: (sc: Scenario) => Outcome[]): Outcome[] {
  const out: Outcome[] = [];
  for (const sc of scenarios(id, who)) {
    if (who.kind === 'legacy') {
      if (action === 'invite.mint') {
        out.push(err(403, USER_REQUIRED));
        continue;
      }
    } else {
      if (sc.role === null) {
        out.push(err(403, NOT_MEMBER));
        continue;
      }
      const ownerOnly = OWNER_ONLY[action];
      if (ownerOnly && sc.role !== 'owner') {
        out.push(err(403, ownerOnly));
        continue;
      }
    }
    if (!sc.exists) {
      // A member row without its repository (a creation under way) makes no one a member.
      out.push(who.kind === 'legacy' ? err(404, 'repo not found') : err(403, NOT_MEMBER));
      continue;
    }
    out.push(...cont(sc));
  }
  return out;
}

/** How a sha given to `since`/`from`/`to` resolves in a repository: for certain, not at all, or either. */
function shaFate(ctx: FuzzContext, repo: string, v: string): 'resolves' | 'unknown' | 'either' {
  if (!/^[0-9a-fA-F]{1,40}$/.test(v)) return 'unknown';
  const prefix = v.toLowerCase();
  const known = (ctx.shasOf[repo] ?? []).filter((s) => s.startsWith(prefix));
  // Commits are only ever added: an ambiguous abbreviation stays ambiguous.
  if (known.length > 1) return 'unknown';
  // 8+ hex chars: a commit made during the run matches by chance with probability ~n/16^8 — never.
  if (prefix.length >= 8) return known.length === 1 ? 'resolves' : 'unknown';
  return 'either';
}

/** Outcomes of resolving the given shas in order; `then` when all resolve. */
function withShas(ctx: FuzzContext, repo: string, values: Array<string | null>, then: () => Outcome[]): Outcome[] {
  const out: Outcome[] = [];
  for (const v of values) {
    if (v === null || v === '') continue;
    const fate = shaFate(ctx, repo, v);
    if (fate === 'unknown') return [...out, unknownSha(v)];
    if (fate === 'either') out.push(unknownSha(v));
  }
  return [...out, ...then()];
}

/** A page path parameter: refused for certain (400), accepted for certain (`then`), or either. */
function withPath(p: string, then: () => Outcome[]): Outcome[] {
  const c = classify(p);
  if (c === 'refused') return [invalidPath(p)];
  return c === 'maybe' ? [invalidPath(p), ...then()] : then();
}

function pushOutcomes(ctx: FuzzContext, id: string, who: Who, body: Uint8Array | undefined): Outcome[] {
  const out: Outcome[] = [];
  for (const sc of scenarios(id, who)) {
    // Into an existing repository only members may push, before the body is read.
    if (sc.exists && who.kind === 'user' && sc.role === null) {
      out.push(err(403, NOT_MEMBER));
      continue;
    }
    const parsed = parseBody(body, false);
    if (!parsed.ok) {
      out.push(err(400, INVALID_JSON));
      continue;
    }
    const files = pushFiles(parsed.value);
    if (!files) {
      out.push(err(400, INVALID_REQUEST));
      continue;
    }
    // Every path first (the first refused one is named; one that new rules may refuse may come first).
    let refused = false;
    for (const f of files) {
      const c = classifyNew(f.path);
      if (c === 'valid') continue;
      out.push(invalidPath(f.path));
      if (c === 'refused') {
        refused = true;
        break;
      }
    }
    if (refused) continue;
    // Then each file's parent_sha and content, in order.
    let bad: Outcome | null = null;
    for (const [i, f] of files.entries()) {
      if (f.parent_sha !== undefined && !/^[0-9a-fA-F]{1,40}$/.test(f.parent_sha)) bad = err(400, `invalid parent_sha: ${f.parent_sha}`);
      else if (f.delete !== true && f.content === undefined) bad = err(400, `invalid request: files[${i}].content: required unless delete is true`);
      if (bad) break;
    }
    if (bad) {
      out.push(bad);
      continue;
    }
    if (!sc.exists) {
      if (caseTwin(id)) {
        out.push(err(409, ALREADY_EXISTS));
        continue;
      }
      // Another creator may have won meanwhile.
      if (who.kind === 'user') out.push(err(403, NOT_MEMBER));
    }
    out.push(ok(200));
    if (files.some((f) => f.parent_sha !== undefined)) out.push({ status: 409, conflicts: true });
  }
  return out;
}

/** The answers docs/api.md allows for `req` (see the module comment). */
export async function expectationOf(req: FuzzRequest, ctx: FuzzContext, limits: Limits): Promise<Expectation> {
  const open = (why: string, only4xx = false): Expectation => ({ outcomes: null, why, ...(only4xx ? { only4xx } : {}) });
  const pin = (why: string, outcomes: Outcome[]): Expectation => {
    const seen = new Map<string, Outcome>();
    for (const o of outcomes) seen.set(`${o.status} ${String(o.error ?? '')} ${JSON.stringify(o.json ?? null)} ${o.conflicts ?? ''}`, o);
    return { outcomes: [...seen.values()], why };
  };
  if (req.kind === 'raw') return open('raw bytes');
  // Near Node's header-size limit (16 KiB) the answer may be its own 431.
  const headerBytes = req.path.length + Object.entries(req.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  if (headerBytes > 14_000) return open('oversized headers');
  // Node's HTTP parser refuses raw non-ASCII bytes in the request line; @hono/node-server a backslash in the path.
  if (/[\x80-\xff]/.test(req.path)) return pin('raw non-ASCII in the target', [ok(400)]);
  if (req.path.split('?')[0]!.includes('\\')) return pin('backslash in the target', [ok(400)]);
  // CORS answers every OPTIONS as a preflight, before routing.
  if (req.method === 'OPTIONS') return pin('preflight', [ok(204)]);

  const bodyLen = req.body?.byteLength ?? 0;
  // A body over the cap may be refused before routing (on its declared length) or not read at all.
  const overCap = bodyLen > limits.maxBody ? [err(413, TOO_LARGE)] : [];
  const routed = await routeOf(req.method, req.path);
  if (!routed) return open('target the oracle cannot parse');
  if (routed.route === '404') return pin('unknown route', [err(404, 'not found'), ...overCap]);
  if (routed.route === '405') return pin('wrong method', [err(405, 'method not allowed'), ...overCap]);
  const route = routed.route;
  const isPublic = route === 'GET /health' || route === 'POST /v1/auth/idp';
  // docs/limits.md: sign-in, PATs, repository creation, invite keys and join take small JSON (64 KiB); push the rest.
  const smallJson = ['POST /v1/auth/idp', 'POST /v1/pats', 'POST /v1/repos', 'POST /v1/repos/join', 'POST /v1/repos/:id/invite-keys'].includes(route);
  const authFail = req.identity === null && !isPublic ? err(401, req.authError ?? INVALID_TOKEN) : null;

  const readsBody = smallJson || route === 'POST /v1/repos/:id/sync/push';
  if (bodyLen > limits.maxBody && readsBody) return pin('body over the cap', authFail ? [err(413, TOO_LARGE), authFail] : [err(413, TOO_LARGE)]);
  // A route that reads no body may refuse one over the cap on its declared length, or ignore it.
  if (authFail) return pin('no valid credential', bodyLen > limits.maxBody || (smallJson && bodyLen > limits.smallBody) ? [authFail, err(413, TOO_LARGE)] : [authFail]);
  // Small-JSON routes are getting a 64 KiB cap: 413 then, a 4xx of the route now.
  if (smallJson && bodyLen > limits.smallBody) return open('body over 64 KiB on a small-JSON route', true);

  const who: Who | null =
    req.identity === 'legacy'
      ? { kind: 'legacy' }
      : req.identity === ctx.users.alice
        ? { kind: 'user', id: req.identity, name: 'alice' }
        : req.identity === ctx.users.bob
          ? { kind: 'user', id: req.identity, name: 'bob' }
          : req.identity === ctx.users.carol
            ? { kind: 'user', id: req.identity, name: 'carol' }
            : null;
  if (!who && !isPublic) return open('unknown identity');
  const user = who?.kind === 'user' ? who : null;
  const needUser = (then: () => Outcome[]): Outcome[] => (user ? then() : [err(403, USER_REQUIRED)]);
  const p = routed.params;
  const id = p.id !== undefined ? stripId(p.id) : null;
  const withId = (then: (id: string) => Outcome[]): Outcome[] => (id === null ? [err(400, 'invalid repo id')] : then(id));

  const outcomes = ((): Outcome[] => {
    switch (route) {
      case 'GET /health':
        return [ok(200, { status: 'ok' })];
      case 'POST /v1/auth/idp': {
        const parsed = parseBody(req.body, true);
        if (!parsed.ok) return [err(400, INVALID_JSON)];
        const v = parsed.value;
        if (!isObj(v) || typeof v.id_token !== 'string' || v.id_token.length === 0) return [err(400, 'id_token required')];
        return ctx.idTokens.includes(v.id_token) ? [ok(200)] : [err(401, /^invalid id token: /)];
      }
      case 'GET /v1/me':
        return user ? [ok(200, { id: user.id })] : [err(401, 'session required')];
      case 'GET /v1/pats':
        return needUser(() => [ok(200)]);
      case 'POST /v1/pats':
        return needUser(() => {
          const parsed = parseBody(req.body, true);
          if (!parsed.ok) return [err(400, INVALID_JSON)];
          const v = parsed.value;
          const days = isObj(v) ? v.expires_in_days : undefined;
          if (!isObj(v) || !optStr(v.label) || (days !== undefined && !(typeof days === 'number' && Number.isInteger(days) && days >= 1 && days <= 366))) {
            return [err(400, INVALID_REQUEST)];
          }
          if (typeof v.label === 'string' && codePoints(v.label) > 200) return [err(400, 'label too long (max 200)')];
          return [ok(201)];
        });
      case 'DELETE /v1/pats/:id':
        return needUser(() => (ctx.deletablePats[p.id!] === user!.id ? [ok(204), err(404, 'pat not found')] : [err(404, 'pat not found')]));
      case 'GET /v1/repos':
        return [ok(200)];
      case 'POST /v1/repos':
        return needUser(() => {
          const parsed = parseBody(req.body, false);
          if (!parsed.ok) return [err(400, INVALID_JSON)];
          const v = parsed.value;
          if (!isObj(v) || typeof v.id !== 'string') return [err(400, INVALID_REQUEST)];
          if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(v.id)) return [err(400, 'id must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}')];
          // 'lg' has no owner: 409 all the same (only the first user ever adopts ownerless repositories).
          if (v.id === 'fz' || v.id === 'lg' || caseTwin(v.id)) return [err(409, ALREADY_EXISTS)];
          return [ok(201, { id: v.id, role: 'owner' }), err(409, ALREADY_EXISTS)];
        });
      case 'POST /v1/repos/join':
        return needUser(() => {
          const parsed = parseBody(req.body, true);
          if (!parsed.ok) return [err(400, INVALID_JSON)];
          const v = parsed.value;
          if (!isObj(v)) return [err(400, INVALID_REQUEST)];
          if (typeof v.key !== 'string' || v.key.trim() === '') return [err(400, 'key required')];
          if (v.key.trim() !== ctx.inviteTokens.live) return [err(404, 'invite key not recognized')];
          if (user!.name === 'alice') return [ok(200, { repo_id: 'fz', role: 'owner' })];
          if (user!.name === 'bob') return [ok(200, { repo_id: 'fz', role: 'member' })];
          // Carol may have been removed meanwhile: the live key predates that, so it no longer admits her.
          return [ok(200, { repo_id: 'fz', role: 'member' }), err(403, REMOVED)];
        });
      case 'POST /v1/repos/:id':
        return withId((id) => {
          if (caseTwin(id)) return [err(409, ALREADY_EXISTS)];
          const created = ok(201, { repo_id: id });
          if (!user || (id === 'fz' && user.name !== 'carol')) return [created];
          // Nobody is a member of the ownerless 'lg', and nobody may take it.
          if (id === 'lg') return [err(403, NOT_MEMBER)];
          return [created, err(403, NOT_MEMBER)];
        });
      case 'DELETE /v1/repos/:id':
        // The generator never confirms a deletion (the fixtures stay): reached only by a wrong method.
        return withId((id) =>
          repoScoped('repo.delete', id, who!, () => (routed.query.confirm === id ? [ok(204)] : [err(400, 'confirm the deletion with ?confirm=<id>')])),
        );
      case 'GET /v1/repos/:id/members':
        return withId((id) => repoScoped('members.list', id, who!, () => [ok(200)]));
      case 'GET /v1/repos/:id/activity':
        return withId((id) => repoScoped('activity.read', id, who!, () => [ok(200)]));
      case 'GET /v1/repos/:id/pages':
      case 'GET /v1/repos/:id/timeline':
        return withId((id) => repoScoped('repo.read', id, who!, () => [ok(200)]));
      case 'GET /v1/repos/:id/invite-keys':
        return withId((id) => repoScoped('invite.list', id, who!, () => [ok(200)]));
      case 'DELETE /v1/repos/:id/members/:userId':
        return withId((id) =>
          repoScoped('member.remove', id, who!, () => {
            const target = p.userId!;
            const { alice, carol, dave } = ctx.users;
            if (id === 'fz') {
              if (target === alice) return [err(409, "can't remove the last owner")];
              return target === carol || target === dave ? [ok(204), err(404, NOT_MEMBER)] : [err(404, NOT_MEMBER)];
            }
            return [alice, carol, dave].includes(target) ? [ok(204), err(404, NOT_MEMBER), err(409, "can't remove the last owner")] : [err(404, NOT_MEMBER)];
          }),
        );
      case 'POST /v1/repos/:id/invite-keys':
        return withId((id) =>
          repoScoped('invite.mint', id, who!, () => {
            const parsed = parseBody(req.body, true);
            if (!parsed.ok) return [err(400, INVALID_JSON)];
            const v = parsed.value;
            if (!isObj(v) || !optStr(v.label)) return [err(400, INVALID_REQUEST)];
            if (typeof v.label === 'string' && codePoints(v.label) > 200) return [err(400, 'label too long (max 200)')];
            return [ok(201)];
          }),
        );
      case 'DELETE /v1/repos/:id/invite-keys/:keyId':
        return withId((id) =>
          repoScoped('invite.revoke', id, who!, () =>
            id === 'fz' && p.keyId === ctx.disposableInviteKeyId ? [ok(204), err(404, 'invite key not found')] : [err(404, 'invite key not found')],
          ),
        );
      case 'GET /v1/repos/:id/pages/:path{.+}':
        return withId((id) => repoScoped('repo.read', id, who!, () => withPath(p.path!, () => [ok(200), err(404, 'page not found')])));
      case 'GET /v1/repos/:id/history/:path{.+}':
        return withId((id) => repoScoped('repo.read', id, who!, () => withPath(p.path!, () => [ok(200)])));
      case 'GET /v1/repos/:id/evolution/:path{.+}':
        return withId((id) => repoScoped('repo.read', id, who!, () => withPath(p.path!, () => [ok(200), err(404, PATH_NOT_IN_REPO)])));
      case 'GET /v1/repos/:id/diff/:path{.+}':
        return withId((id) =>
          repoScoped('repo.read', id, who!, () =>
            withPath(p.path!, () =>
              withShas(ctx, id, [routed.query.from ?? null, routed.query.to ?? null], () => [ok(200), err(404, PATH_NOT_IN_REPO), err(404, PATH_NOT_AT_EITHER), err(400, NO_PARENT)]),
            ),
          ),
        );
      case 'GET /v1/repos/:id/sync/pull':
        return withId((id) => repoScoped('repo.read', id, who!, () => withShas(ctx, id, [routed.query.since ?? null], () => [ok(200)])));
      case 'POST /v1/repos/:id/sync/push':
        return withId((id) => pushOutcomes(ctx, id, who!, req.body));
      default:
        return [];
    }
  })();
  if (outcomes.length === 0) return open(`no model for ${route}`);
  return pin(route, [...outcomes, ...overCap]);
}

/** Whether an answer is one the expectation allows. `json` is the parsed body (undefined if none). */
export function meets(e: Expectation, status: number, json: any, head: boolean): boolean {
  if (e.outcomes === null) return e.only4xx ? status >= 400 && status < 500 : status > 0 && status < 500;
  return e.outcomes.some((o) => {
    if (o.status !== status) return false;
    if (head) return true;
    if (o.error !== undefined) {
      const got = json?.error;
      if (typeof got !== 'string') return false;
      if (typeof o.error === 'string' ? got !== o.error : !o.error.test(got)) return false;
    }
    if (o.json && !Object.entries(o.json).every(([k, v]) => JSON.stringify(json?.[k]) === JSON.stringify(v))) return false;
    if (o.conflicts && !(Array.isArray(json?.conflicts) && json.conflicts.length > 0)) return false;
    return true;
  });
}

export const describeExpectation = (e: Expectation): string =>
  e.outcomes === null
    ? `${e.only4xx ? 'any 4xx' : 'anything below 500'} (${e.why})`
    : `${e.outcomes.map((o) => `${o.status}${o.error !== undefined ? ` ${String(o.error)}` : ''}${o.json ? ` ${JSON.stringify(o.json)}` : ''}${o.conflicts ? ' conflicts' : ''}`).join(' | ')} (${e.why})`;
