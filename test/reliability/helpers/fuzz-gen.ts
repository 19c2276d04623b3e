/**
 * The hostile-request generator of the fuzz test. Every request is drawn from a seeded PRNG, so a
 * failing request can be reproduced from the seed and its index. About a third are well-formed (so the
 * fuzz also writes, and the ledger of accepted writes is exercised); the rest are hostile: malformed,
 * truncated or deeply nested JSON, wrong types, huge strings, path traversal and percent-encoding tricks
 * in repository ids and page paths, NUL and control characters, invalid UTF-8, shas of every form,
 * wrong methods, forged and malformed credentials, and raw bytes no client library would send.
 */
import type { Rng } from './prng.ts';

export type CredKind =
  | 'none'
  | 'garbage'
  | 'legacy'
  | 'alice'
  | 'alicePat'
  | 'bob'
  | 'carol'
  | 'revokedPat'
  | 'expired'
  | 'otherSecret'
  | 'algNone'
  | 'malformed';

export interface FuzzContext {
  legacyKey: string;
  /** Existing repositories ('fz' owned by alice with bob and dave as members, 'lg' without owner). */
  repos: string[];
  /** Valid ids that do not exist yet (creations are allowed to happen). */
  newRepos: string[];
  /** Pages that exist in 'fz' / 'lg'. */
  pages: string[];
  /** Full shas of existing commits. */
  shas: string[];
  /** The same, by repository ('fz', 'lg'). */
  shasOf: Record<string, string[]>;
  users: { alice: string; bob: string; carol: string; dave: string };
  tokens: Record<Exclude<CredKind, 'none' | 'malformed'>, string>;
  /** PAT ids: one alice may delete, the revoked one, bob's (not alice's to delete). */
  patIds: string[];
  /** The live PATs among patIds, each with the one user who may delete it. */
  deletablePats: Record<string, string>;
  /** Invite key ids: a disposable one of 'fz', and an unknown one. */
  inviteKeyIds: string[];
  /** The one of inviteKeyIds that exists (in 'fz') until a request deletes it. */
  disposableInviteKeyId: string;
  inviteTokens: { live: string; revoked: string };
  /** Valid ID tokens (new subjects and existing users with unchanged claims). */
  idTokens: string[];
  /** ID tokens the sign-in route must refuse (expired, wrong audience, alg confusion...). */
  badIdTokens: string[];
}

export interface FuzzRequest {
  /** 'http': through node:http (keep-alive); 'raw': bytes on a fresh TCP connection. */
  kind: 'http' | 'raw';
  /** The route the generator aimed at (for the tally); the server may well see another. */
  target: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  raw?: Uint8Array;
  cred: CredKind;
  /** Whose identity the credential carries if the server accepts it: a user id, 'legacy', or null. */
  identity: string | null;
  /** When identity is null: the 401 message docs/api.md gives for this Authorization header. */
  authError?: string;
}

const enc = new TextEncoder();

/** Percent-encodes every byte of the UTF-8 form outside the visible ASCII a request target may carry raw. */
export function pct(s: string, alsoEncode = /[%?#]/): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x21 && cp <= 0x7e && !alsoEncode.test(ch)) out += ch;
    else for (const b of enc.encode(ch)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const HOSTILE_REPO_SEGMENTS = [
  '..', '.', '%2e%2e', '%2E%2E', '.%2e', '%2e', '..%2f..%2fetc', '..%2F..%2Fdata', '%252e%252e', '%252e%252e%252f',
  '%c0%ae%c0%ae', '%c0%af', '%e0%80%ae', '%ef%bc%8e%ef%bc%8e', 'fz%00', '%00', 'fz%0a', 'fz%0d%0aX-Injected:%201',
  '.git', 'fz.git', 'fz%2f..%2f..%2f', 'repos', '~', '~root', '%7e', 'a'.repeat(65), 'b'.repeat(300), '-', '--', '-rf', '_',
  'fz%20', '%20fz', '%EF%BD%86%EF%BD%9A', 'f%7a', 'f.z', 'F%20Z', '%ff%fe', '%', '%zz', '%%', 'fz;rm', 'fz$(id)', 'fz%60id%60',
  'fz%7Cid', 'fz&x', '..;', 'con', 'nul', 'service.db', '..%5c..%5c', '%5c', 'fz%3f', 'fz%23x', 'FZ', 'l%67', '%2fetc%2fpasswd',
  'x%2F..%2F..%2F..%2Ftmp', '%u002e%u002e', '%%32%65%%32%65', '%C3%BF%C3%BE', '\u00ff\u00fe',
];

const HOSTILE_URL_PATHS = [
  '..', '../..', '%2e%2e', '%2e%2e/%2e%2e/etc/passwd', '..%2f..%2f..%2fetc%2fpasswd', '%252e%252e%252fetc', '%c0%ae%c0%ae/%c0%ae%c0%ae/x',
  '%c0%af', '.git/config', '.GIT%2fconfig', '%2egit/HEAD', 'wiki/%00.md', 'wiki/%0a.md', 'a%5cb', '%5c..%5c..%5cx', '/etc/passwd',
  'wiki//x.md', 'wiki/./x.md', 'wiki/../wiki/concepts/a.md', '-rf', 'wiki/%2d', '%ff%fe%fd', '%e2%80%ae', 'x'.repeat(600), 'wiki/', '%',
  '%%32%65', '..;/x', '%u002e%u002e', 'wiki/a.md%00.txt', 'wiki/concepts/a.md/', 'objects/info', 'HEAD', 'refs/heads/main',
  '..%252f..%252fservice.db', '%2e%2e%5c%2e%2e%5cservice.db', 'wiki%2fconcepts%2fa.md', '%7f', '%1b%5b31m',
];

const HOSTILE_PAGE_PATHS = [
  '', '.', '..', '../x.md', '../../etc/passwd', 'wiki/../../../x', '/etc/passwd', '//x', 'a//b', 'a/./b', 'a/../b', '.git', '.git/config',
  '.GIT/HEAD', 'wiki/.Git/x', 'a\\b', '..\\..\\x', '-rf', 'wiki/-x', 'a\u0000b', 'a\nb', 'a\tb', '\u001b[31m', 'a\u007f', 'a\u0085', '\u0080x.md', 'wiki/\u009b31m.md', 'notes/a\u009f.md',
  '\ud800', 'x\udfff', 'x'.repeat(600), 'wiki/', 'wiki//', ' ', '%2e%2e/x', 'C:\\x', 'objects/../../../x', '..%2f..%2fx',
];

const VALID_NEW_PATHS = ['fuzz/new.md', 'wiki/concepts/fuzz.md', 'raw/sessions/2026-05-17', 'ünïcödé/页面.md', 'a b.md', 'deep/a/b/c/d/e.md', 'x'.repeat(200) + '.md', 'wiki/%2e%2e.md', '.hidden', 'a..b.md'];

const SHA_FORMS = [
  '', 'HEAD', 'main', 'HEAD~1', 'HEAD^', 'HEAD@{1}', '@{1}', 'refs/heads/main', 'v1.0', 'g'.repeat(40), '-1', ' ab12', 'ab12 ', '0x1f', '1e3',
  'deadbeef\u0000', '../../HEAD', 'main..HEAD', 'a'.repeat(1000), 'z'.repeat(5000), '٣٣٣٣', 'ＡＢＣＤ', '\u0000', '%00', 'ab%2fcd', '--all', '-n1',
  'ORIG_HEAD', 'FETCH_HEAD', ':/msg', 'HEAD:wiki/a.md', 'master', '0'.repeat(40), 'f'.repeat(40), '0', 'a', 'abcdef1234567890abcdef1234567890abcdef123',
];

const WRONG_TYPES: unknown[] = [null, true, false, 0, -1, 1.5, 1e300, -0, '', 'x', [], {}, [1, 2], { a: 1 }, ['x'], [[]], [{}]];

const METHODS = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'];

function deep(r: Rng, depth: number): string {
  return r.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

function hugeString(r: Rng): string {
  const n = r.pick([4096, 65_536, 200_000, 400_000]);
  return r.chance(0.5) ? r.str(64).repeat(Math.ceil(n / 64)).slice(0, n) : 'é'.repeat(n / 2);
}

/** A JSON-ish string value: plain, with control characters, NUL, lone surrogates, bidi tricks, or huge. */
function strValue(r: Rng): string {
  return r.weighted<() => string>([
    [10, () => r.str(r.int(0, 30))],
    [2, () => `a\u0000b\u0001\u001f\u007f`],
    [2, () => '\ud800\udc00\ud800x\udfff'],
    [1, () => '\u202e\u2066evil\u2069'],
    [1, () => '<script>alert(1)</script>"\'`'],
    [1, () => '../../../../etc/passwd'],
    [1, () => hugeString(r)],
  ])();
}

function pagePathLogical(r: Rng, ctx: FuzzContext): string {
  return r.weighted<() => string>([
    [30, () => r.pick(ctx.pages)],
    [20, () => `fuzz/p${r.int(0, 40)}.md`],
    [10, () => r.pick(VALID_NEW_PATHS)],
    [40, () => r.pick(HOSTILE_PAGE_PATHS)],
  ])();
}

/** A page path as it appears in a URL. */
function pageSeg(r: Rng, ctx: FuzzContext): string {
  return r.weighted<() => string>([
    [35, () => pct(pagePathLogical(r, ctx), /[%?#]/)],
    [10, () => pct(pagePathLogical(r, ctx), /[%?#/]/)],
    [10, () => pct(pct(pagePathLogical(r, ctx), /[%?#/.]/), /[%]/)],
    [10, () => pct(pagePathLogical(r, ctx)).replace(/\./g, () => r.pick(['.', '%2e', '%2E', '%c0%ae', '%252e']))],
    [35, () => r.pick(HOSTILE_URL_PATHS)],
  ])();
}

function repoSeg(r: Rng, ctx: FuzzContext): string {
  return r.weighted<() => string>([
    [45, () => r.pick(ctx.repos)],
    [8, () => r.pick(ctx.newRepos)],
    [47, () => r.pick(HOSTILE_REPO_SEGMENTS)],
  ])();
}

function shaValue(r: Rng, ctx: FuzzContext): string {
  return r.weighted<() => string>([
    [20, () => r.pick(ctx.shas)],
    [20, () => r.pick(ctx.shas).slice(0, r.int(1, 39))],
    [5, () => r.pick(ctx.shas).toUpperCase().slice(0, r.int(4, 40))],
    [10, () => r.str(40, '0123456789abcdef')],
    [10, () => r.str(r.int(1, 45), '0123456789abcdef')],
    [35, () => r.pick(SHA_FORMS)],
  ])();
}

function queryValue(r: Rng, v: string): string {
  return r.chance(0.85) ? pct(v, /[%?#&=+]/) : v.replace(/[^\x21-\x7e]/g, (c) => pct(c));
}

function limitValue(r: Rng): string {
  return r.pick(['1', '5', '50', '500', '1000', '1001', '0', '-1', '1.5', '1e3', 'NaN', 'Infinity', '9'.repeat(400), ' 5', '5 ', '0x10', '', '%00', '%zz', '１２', '2147483648', '9007199254740993']);
}

function query(r: Rng, params: Array<[string, () => string]>): string {
  const parts: string[] = [];
  for (const [name, value] of params) if (r.chance(0.6)) parts.push(`${name}=${queryValue(r, value())}`);
  if (r.chance(0.08)) parts.push(r.pick(['&&&', '=x', 'limit', 'limit=1&limit=2', '%zz=%zz', `junk=${'q'.repeat(r.int(100, 6000))}`, 'a[b]=c', '__proto__=x']));
  return parts.length ? `?${parts.join('&')}` : r.chance(0.05) ? '?' : '';
}

/** A JSON body for `valid`, possibly spoiled. Returns the bytes and a content type. */
function jsonBody(r: Rng, valid: () => Record<string, unknown>, fields: Array<[string, () => unknown]>): { body: Uint8Array; contentType: string | null } {
  const contentType = r.weighted<string | null>([
    [85, 'application/json'],
    [4, 'application/json; charset=utf-8'],
    [2, 'text/plain'],
    [2, null],
    [2, 'application/x-www-form-urlencoded'],
    [2, 'multipart/form-data; boundary=x'],
    [1, 'application/json; charset=utf-16'],
    [2, 'application/json, application/json'],
  ]);
  const mode = r.weighted<string>([
    [38, 'valid'],
    [16, 'wrong-type'],
    [5, 'missing-extra'],
    [4, 'huge'],
    [4, 'deep'],
    [8, 'truncated'],
    [6, 'malformed'],
    [5, 'invalid-utf8'],
    [5, 'non-object'],
    [3, 'empty'],
    [3, 'proto'],
    [3, 'bom'],
  ]);
  const obj = valid();
  let text: string | null = null;
  let bytes: Uint8Array | null = null;
  switch (mode) {
    case 'valid':
      break;
    case 'wrong-type': {
      const [name] = r.pick(fields.length ? fields : [['x', () => 1] as [string, () => unknown]]);
      obj[name] = r.pick(WRONG_TYPES);
      break;
    }
    case 'missing-extra': {
      for (const [name] of fields) if (r.chance(0.5)) delete obj[name];
      obj[r.pick(['extra', 'files[0]', '', 'constructor', 'toString'])] = strValue(r);
      break;
    }
    case 'huge': {
      const [name] = r.pick(fields.length ? fields : [['x', () => 1] as [string, () => unknown]]);
      obj[name] = hugeString(r);
      break;
    }
    case 'deep':
      text = r.chance(0.5) ? deep(r, r.pick([100, 5000, 100_000])) : `{"${fields[0]?.[0] ?? 'x'}":${deep(r, r.pick([1000, 50_000]))}}`;
      break;
    case 'truncated': {
      const full = JSON.stringify(obj);
      text = full.slice(0, r.int(0, Math.max(0, full.length - 1)));
      break;
    }
    case 'malformed':
      text = r.pick([
        "{'a': 1}", '{"a": 1,}', '{"a": NaN}', '{"a": undefined}', '{a: 1}', '{"a": 1} {"b": 2}', '{"a": 01}', '{"a": "\\x41"}', '{"a": "\\u12"}',
        '/* c */ {}', '{"a": 1 // c\n}', '{"a":"\u0000"}', '{"a":"\n"}', '[}', '{"files":[{"path":"a.md","content":"x"}]', '\u0000', 'true false',
        '{"a": Infinity}', '{"a": -}', '{"__proto__":', '"', "{\"a\":'1'}",
      ]);
      break;
    case 'invalid-utf8': {
      const full = enc.encode(JSON.stringify(obj));
      const at = r.int(0, full.length);
      const junk = r.pick([[0xff], [0xfe, 0xff], [0xc0, 0xae], [0xe0, 0x80, 0xae], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xc3]]);
      bytes = new Uint8Array([...full.subarray(0, at), ...junk, ...full.subarray(at)]);
      break;
    }
    case 'non-object':
      text = r.pick(['null', '[]', '"str"', '0', 'true', '[{}]', `[${JSON.stringify(obj)}]`, '1e999', '-0']);
      break;
    case 'empty':
      text = r.pick(['', ' ', '\n\n', '\t']);
      break;
    case 'proto':
      text = r.pick([
        `{"__proto__": {"admin": true, "role": "owner"}, ${JSON.stringify(obj).slice(1)}`,
        `{"constructor": {"prototype": {"admin": true}}, ${JSON.stringify(obj).slice(1)}`,
        `${JSON.stringify(obj).slice(0, -1)}${Object.keys(obj).length ? ',' : ''} "${fields[0]?.[0] ?? 'x'}": ${JSON.stringify(r.pick(WRONG_TYPES))}}`,
      ]);
      break;
    case 'bom':
      bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode(JSON.stringify(obj))]);
      break;
  }
  return { body: bytes ?? enc.encode(text ?? JSON.stringify(obj)), contentType };
}

const MISSING = 'missing authorization header';
const FORMAT = 'invalid authorization format, expected Bearer <token>';
const INVALID = 'invalid token';

function credential(r: Rng, ctx: FuzzContext): { cred: CredKind; header: string | null; identity: string | null; authError?: string } {
  const cred = r.weighted<CredKind>([
    [20, 'legacy'],
    [15, 'alice'],
    [10, 'alicePat'],
    [10, 'bob'],
    [8, 'carol'],
    [6, 'none'],
    [5, 'garbage'],
    [4, 'revokedPat'],
    [4, 'expired'],
    [4, 'otherSecret'],
    [4, 'algNone'],
    [10, 'malformed'],
  ]);
  const identityOf: Partial<Record<CredKind, string>> = {
    legacy: 'legacy',
    alice: ctx.users.alice,
    alicePat: ctx.users.alice,
    bob: ctx.users.bob,
    carol: ctx.users.carol,
  };
  if (cred === 'none') return { cred, header: null, identity: null, authError: MISSING };
  if (cred !== 'malformed') {
    const identity = identityOf[cred] ?? null;
    return { cred, header: `Bearer ${ctx.tokens[cred]}`, identity, ...(identity === null ? { authError: INVALID } : {}) };
  }
  // Malformed Authorization headers, each with what it is (an identity, or the 401 message docs/api.md gives);
  // a few are unusual but valid spellings of a real credential (the scheme is case-insensitive).
  const [header, identity] = r.pick<[string, string]>([
    ['Basic dXNlcjpwYXNz', FORMAT],
    ['Bearer', FORMAT],
    ['Bearer ', FORMAT],
    ['Bearer\t', FORMAT],
    [`bearer ${ctx.legacyKey}`, 'legacy'],
    [`BEARER   ${ctx.tokens.alicePat}  `, ctx.users.alice],
    [`Bearer ${ctx.legacyKey}x`, INVALID],
    [`Bearer ${ctx.legacyKey.slice(0, -1)}`, INVALID],
    [`Bearer ${ctx.tokens.alice}.`, INVALID],
    [`Bearer ${ctx.tokens.alice.split('.').slice(0, 2).join('.')}.`, INVALID],
    [`Bearer ${ctx.tokens.alicePat.slice(0, -2)}`, INVALID],
    [`Bearer krp_`, INVALID],
    [`Bearer kri_${ctx.inviteTokens.live.slice(4)}`, INVALID],
    [`Bearer ${ctx.inviteTokens.live}`, INVALID],
    [`Bearer ${'A'.repeat(8000)}`, INVALID],
    ['Bearer a.b.c', INVALID],
    ['Bearer eyJhbGciOiJIUzI1NiJ9.e30.', INVALID],
    ['Bearer eyJ!!!.eyJ!!!.!!!', INVALID],
    [`Bearer ${ctx.legacyKey} ${ctx.legacyKey}`, INVALID],
    ['Digest username="x"', FORMAT],
    ['\u00ff\u00fe', FORMAT],
    [`Token ${ctx.legacyKey}`, FORMAT],
  ]);
  return [MISSING, FORMAT, INVALID].includes(identity) ? { cred, header, identity: null, authError: identity } : { cred, header, identity };
}

type RouteGen = (r: Rng, ctx: FuzzContext) => { method: string; path: string; json?: { body: Uint8Array; contentType: string | null } };

const idTokenValue = (r: Rng, ctx: FuzzContext): unknown =>
  r.weighted<() => unknown>([
    [4, () => r.pick(ctx.idTokens)],
    [30, () => r.pick(ctx.badIdTokens)],
    [10, () => r.pick([ctx.tokens.alice, ctx.tokens.expired, ctx.tokens.algNone, ctx.tokens.alicePat, ctx.legacyKey])],
    [10, () => strValue(r)],
    [5, () => `${r.str(20)}.${r.str(40)}.${r.str(40)}`],
  ])();

const ROUTES: Record<string, [number, RouteGen]> = {
  'GET /health': [2, (r) => ({ method: 'GET', path: `/health${r.chance(0.1) ? query(r, [['x', () => 'y']]) : ''}` })],
  'POST /v1/auth/idp': [5, (r, ctx) => ({ method: 'POST', path: '/v1/auth/idp', json: jsonBody(r, () => ({ id_token: idTokenValue(r, ctx) }), [['id_token', () => 1]]) })],
  'GET /v1/me': [2, () => ({ method: 'GET', path: '/v1/me' })],
  'POST /v1/pats': [3, (r) => ({
    method: 'POST',
    path: '/v1/pats',
    json: jsonBody(r, () => ({ label: strValue(r).slice(0, 200), ...(r.chance(0.5) ? { expires_in_days: r.pick([1, 30, 366, 0, 367, -1, 1.5, 1e9]) } : {}) }), [['label', () => 1], ['expires_in_days', () => 1]]),
  })],
  'GET /v1/pats': [2, () => ({ method: 'GET', path: '/v1/pats' })],
  'DELETE /v1/pats/:id': [3, (r, ctx) => ({ method: 'DELETE', path: `/v1/pats/${r.weighted<() => string>([[5, () => r.pick(ctx.patIds)], [3, () => '00000000-0000-4000-8000-000000000000'], [4, () => r.pick(HOSTILE_REPO_SEGMENTS)], [1, () => pct("' OR 1=1 --")]])()}` })],
  'GET /v1/repos': [2, (r) => ({ method: 'GET', path: `/v1/repos${query(r, [['limit', () => limitValue(r)]])}` })],
  'POST /v1/repos': [4, (r, ctx) => ({
    method: 'POST',
    path: '/v1/repos',
    json: jsonBody(r, () => ({ id: r.weighted<() => string>([[3, () => r.pick(ctx.newRepos)], [2, () => r.pick(ctx.repos)], [5, () => decodeURIComponentSafe(r.pick(HOSTILE_REPO_SEGMENTS))]])() }), [['id', () => 1]]),
  })],
  'POST /v1/repos/join': [4, (r, ctx) => ({
    method: 'POST',
    path: '/v1/repos/join',
    json: jsonBody(
      r,
      () => ({ key: r.weighted<() => unknown>([[4, () => ctx.inviteTokens.live], [2, () => ctx.inviteTokens.revoked], [1, () => ` ${ctx.inviteTokens.live} `], [1, () => ctx.tokens.alicePat], [3, () => `kri_${r.str(32)}`], [2, () => strValue(r)]])() }),
      [['key', () => 1]],
    ),
  })],
  'POST /v1/repos/:id': [4, (r, ctx) => ({ method: 'POST', path: `/v1/repos/${repoSeg(r, ctx)}` })],
  'GET /v1/repos/:id/members': [2, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/members` })],
  'DELETE /v1/repos/:id/members/:userId': [3, (r, ctx) => ({
    method: 'DELETE',
    path: `/v1/repos/${repoSeg(r, ctx)}/members/${r.weighted<() => string>([[3, () => ctx.users.dave], [2, () => ctx.users.carol], [1, () => ctx.users.alice], [2, () => r.pick(HOSTILE_REPO_SEGMENTS)]])()}`,
  })],
  'POST /v1/repos/:id/invite-keys': [3, (r, ctx) => ({ method: 'POST', path: `/v1/repos/${repoSeg(r, ctx)}/invite-keys`, json: jsonBody(r, () => ({ label: strValue(r).slice(0, 100) }), [['label', () => 1]]) })],
  'GET /v1/repos/:id/invite-keys': [2, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/invite-keys` })],
  'DELETE /v1/repos/:id/invite-keys/:keyId': [3, (r, ctx) => ({
    method: 'DELETE',
    path: `/v1/repos/${repoSeg(r, ctx)}/invite-keys/${r.weighted<() => string>([[3, () => r.pick(ctx.inviteKeyIds)], [2, () => r.pick(HOSTILE_REPO_SEGMENTS)]])()}`,
  })],
  'GET /v1/repos/:id/pages': [3, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/pages` })],
  'GET /v1/repos/:id/pages/:path': [6, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/pages/${pageSeg(r, ctx)}` })],
  'POST /v1/repos/:id/sync/push': [12, (r, ctx) => ({ method: 'POST', path: `/v1/repos/${repoSeg(r, ctx)}/sync/push`, json: pushBody(r, ctx) })],
  'GET /v1/repos/:id/sync/pull': [5, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/sync/pull${query(r, [['since', () => shaValue(r, ctx)]])}` })],
  'GET /v1/repos/:id/timeline': [3, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/timeline${query(r, [['limit', () => limitValue(r)]])}` })],
  'GET /v1/repos/:id/history/:path': [4, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/history/${pageSeg(r, ctx)}${query(r, [['limit', () => limitValue(r)]])}` })],
  'GET /v1/repos/:id/diff/:path': [7, (r, ctx) => ({
    method: 'GET',
    path: `/v1/repos/${repoSeg(r, ctx)}/diff/${pageSeg(r, ctx)}${query(r, [['from', () => shaValue(r, ctx)], ['to', () => shaValue(r, ctx)], ['blame', () => r.pick(['true', '1', 'yes', 'TRUE', 'false', '', '%00', 'x'.repeat(100)])]])}`,
  })],
  'GET /v1/repos/:id/evolution/:path': [4, (r, ctx) => ({
    method: 'GET',
    path: `/v1/repos/${repoSeg(r, ctx)}/evolution/${pageSeg(r, ctx)}${query(r, [['limit', () => limitValue(r)], ['blame', () => r.pick(['true', 'false', '1'])]])}`,
  })],
  'GET /v1/repos/:id/activity': [3, (r, ctx) => ({ method: 'GET', path: `/v1/repos/${repoSeg(r, ctx)}/activity${query(r, [['limit', () => limitValue(r)], ['offset', () => limitValue(r)]])}` })],
  'unknown path': [3, (r, ctx) => ({
    method: r.pick(METHODS),
    path: r.pick([
      '/', '/v1', '/v1/', '/v2/repos', '/v1/repos/', '/v1//repos', `/v1/repos/${r.pick(ctx.repos)}/`, `/v1/repos/${r.pick(ctx.repos)}/pages/`,
      `/v1/repos/${r.pick(ctx.repos)}/sync`, `/v1/repos/${r.pick(ctx.repos)}/sync/push/x`, '/health/', '/HEALTH', '/V1/ME', '/v1/me/',
      '/v1/admin/stats', '/billing/webhook', '/v1/billing', '/.git/config', '/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/service.db',
      '/repos/fz.git/HEAD', '/v1/repos/fz.git/HEAD', '/favicon.ico', '/*', `/${'a/'.repeat(2000)}`, '/v1/repos/join/x', '/v1/pats/',
    ]),
  })],
};

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function pushFile(r: Rng, ctx: FuzzContext): Record<string, unknown> {
  const f: Record<string, unknown> = { path: pagePathLogical(r, ctx) };
  const del = r.chance(0.12);
  if (del) f.delete = r.chance(0.9) ? true : r.pick(WRONG_TYPES);
  else if (r.chance(0.97)) f.content = r.weighted<() => unknown>([[20, () => `---\ntitle: ${r.str(8)}\n---\n## ${r.str(6)}\n${r.str(r.int(0, 200))}\n`], [3, () => strValue(r)], [1, () => r.pick(WRONG_TYPES)]])();
  if (r.chance(0.35)) f.parent_sha = r.chance(0.9) ? shaValue(r, ctx) : r.pick(WRONG_TYPES);
  if (r.chance(0.03)) f.path = r.pick(WRONG_TYPES);
  return f;
}

function pushBody(r: Rng, ctx: FuzzContext) {
  return jsonBody(
    r,
    () => {
      const n = r.weighted<number>([[60, 1], [25, 2], [10, 4], [4, 0], [1, 60]]);
      const body: Record<string, unknown> = { files: Array.from({ length: n }, () => pushFile(r, ctx)) };
      if (r.chance(0.4)) body.message = strValue(r).slice(0, 5000);
      if (r.chance(0.3)) body.author_name = strValue(r).slice(0, 500);
      if (r.chance(0.3)) body.author_email = r.pick(['a@b.c', '<evil>', 'x\n@y', strValue(r).slice(0, 300)]);
      return body;
    },
    [['files', () => 1], ['message', () => 1], ['author_name', () => 1], ['author_email', () => 1]],
  );
}

/** Raw requests: what no well-behaved client library sends. */
function rawRequest(r: Rng, ctx: FuzzContext, host: string): { target: string; bytes: Uint8Array } {
  const auth = `Authorization: Bearer ${ctx.legacyKey}\r\n`;
  const repo = r.pick(ctx.repos);
  const kinds: Array<[number, () => [string, string | Uint8Array]]> = [
    [3, () => ['NUL in path', `GET /v1/repos/${repo}/pages/a\u0000b HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [3, () => ['control chars in path', `GET /v1/repos/${repo}/pages/a\u0001\u001b[31m HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [3, () => ['space in path', `GET /v1/repos/${repo}/pages/a b.md HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [4, () => ['invalid UTF-8 in path', new Uint8Array([...enc.encode(`GET /v1/repos/${repo}/pages/`), 0xff, 0xc0, 0xae, 0x80, ...enc.encode(` HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`)])]],
    [3, () => ['invalid UTF-8 in repo id', new Uint8Array([...enc.encode('GET /v1/repos/'), 0xc0, 0xae, 0xc0, 0xae, ...enc.encode(`/pages HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`)])]],
    [3, () => ['oversized header', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}X-Big: ${'b'.repeat(r.int(17_000, 70_000))}\r\nConnection: close\r\n\r\n`]],
    [2, () => ['oversized request line', `GET /v1/repos/${repo}/pages/${'p'.repeat(r.int(17_000, 40_000))} HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['many headers', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}${Array.from({ length: 3000 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}Connection: close\r\n\r\n`]],
    [2, () => ['absolute-form target', `GET http://evil.example/v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['absolute-form, other scheme', `GET ftp://evil.example/../../etc/passwd HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['missing Host', `GET /v1/repos HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`]],
    [3, () => ['bad Host', `GET /v1/repos HTTP/1.1\r\nHost: ${r.pick(['evil.example:99999', '[::1', 'a b', '', 'x@evil', '../..', 'évil', '%00', 'localhost:0', 'a'.repeat(300)])}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['HTTP/1.0 without Host', `GET /health HTTP/1.0\r\n\r\n`]],
    [2, () => ['CL and TE together', `POST /v1/repos/${repo}/sync/push HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`]],
    [2, () => ['bad chunk size', `POST /v1/repos/${repo}/sync/push HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`]],
    [2, () => ['chunked push', `POST /v1/repos/${repo}/sync/push HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\n{"f\r\n9\r\niles": []}\r\n0\r\n\r\n`]],
    [2, () => ['duplicate Content-Length', `POST /v1/pats HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}`]],
    [2, () => ['negative Content-Length', `POST /v1/pats HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Length: -1\r\nConnection: close\r\n\r\n{}`]],
    [2, () => ['body longer than Content-Length', `POST /v1/repos/join HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GARBAGE /x HTTP/1.1\r\n\r\n`]],
    [2, () => ['declared length over the cap', `POST /v1/repos/${repo}/sync/push HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999999\r\nConnection: close\r\n\r\n{"files":[]}`]],
    [2, () => ['obs-fold header', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer\r\n ${ctx.legacyKey}\r\nConnection: close\r\n\r\n`]],
    [2, () => ['NUL in header value', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ctx.legacyKey}\u0000x\r\nConnection: close\r\n\r\n`]],
    [2, () => ['header without colon', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}Garbage\r\nConnection: close\r\n\r\n`]],
    [2, () => ['LF-only line ends', `GET /v1/repos HTTP/1.1\nHost: ${host}\n${auth.replace('\r\n', '\n')}Connection: close\n\n`]],
    [2, () => ['unknown method', `${r.pick(['FOO', 'TRACE', 'PROPFIND', 'get', 'BREW', 'M-SEARCH', 'PRI'])} /v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [1, () => ['CONNECT', `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`]],
    [1, () => ['upgrade request', `GET /v1/repos HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n`]],
    [2, () => ['pipelined', `GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /v1/repos/${repo}/pages HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nGET /v1/me HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n']],
    [1, () => ['TLS hello', new Uint8Array([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, ...r.bytes(64)])]],
    [2, () => ['garbage bytes', r.bytes(r.int(1, 2000))]],
    [2, () => ['bad version', `GET /v1/repos HTTP/9.9\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`]],
    [2, () => ['Expect: 100-continue', `POST /v1/pats HTTP/1.1\r\nHost: ${host}\r\n${auth}Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`]],
    [2, () => ['invalid UTF-8 body', new Uint8Array([...enc.encode(`POST /v1/repos/${repo}/sync/push HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nContent-Length: 44\r\nConnection: close\r\n\r\n{"files":[{"path":"a.md","content":"`), 0xff, 0xfe, 0xc0, 0xae, 0xed, 0xa0, 0x80, ...enc.encode('"}]}')])]],
  ];
  const [target, payload] = r.weighted(kinds)();
  return { target: `raw: ${target}`, bytes: typeof payload === 'string' ? latin1(payload) : payload };
}

function latin1(s: string): Uint8Array {
  // Request bytes as written: characters above U+00FF are sent UTF-8 encoded, the rest byte for byte.
  const out: number[] = [];
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp <= 0xff) out.push(cp);
    else out.push(...enc.encode(ch));
  }
  return new Uint8Array(out);
}

const ROUTE_LIST = Object.entries(ROUTES).map(([name, [w, gen]]) => [w, [name, gen]] as const);
export const FUZZ_ROUTES = Object.keys(ROUTES);

/** The i-th request of a fuzz run (the PRNG's state carries the sequence). */
export function generate(r: Rng, ctx: FuzzContext, host: string): FuzzRequest {
  if (r.chance(0.06)) {
    const { target, bytes } = rawRequest(r, ctx, host);
    return { kind: 'raw', target, method: '', path: '', headers: {}, raw: bytes, cred: 'legacy', identity: 'legacy' };
  }
  const [target, gen] = r.weighted(ROUTE_LIST);
  const g = gen(r, ctx);
  const { cred, header, identity, authError } = credential(r, ctx);
  const headers: Record<string, string> = {};
  if (header !== null) headers.authorization = header;
  let method = g.method;
  if (r.chance(0.07)) method = r.pick(METHODS.filter((m) => m !== g.method));
  let body: Uint8Array | undefined;
  if (g.json) {
    body = g.json.body;
    if (g.json.contentType) headers['content-type'] = g.json.contentType;
  } else if (r.chance(0.05)) {
    body = enc.encode(r.pick(['{}', 'x', '{"files":[]}', '\u0000']));
  }
  if (body && body.byteLength > 0 && r.chance(0.015)) body = new Uint8Array(1024 * 1024 + r.int(1, 100_000)); // over the 1 MiB cap
  if (r.chance(0.15)) headers['x-service-client'] = r.pick(['kr-cli', 'x'.repeat(r.int(1, 9000)), '\u00ff\u00fe\u00e9', 'a\tb', '<script>', '']);
  if (r.chance(0.05)) headers.origin = r.pick(['http://localhost:5173', 'http://evil.example', 'null', '*']);
  if (r.chance(0.05)) headers['x-forwarded-for'] = r.pick(['1.2.3.4', 'garbage', '::1, 10.0.0.1', '999.999.999.999', ','.repeat(100)]);
  if (r.chance(0.02)) headers.accept = r.pick(['*/*', 'text/html', '\u00ff']);
  // Node's client refuses other characters in a request target (the raw requests send those): encode them.
  const path = g.path.replace(/[^\x21-\xff]/gu, (c) => pct(c));
  return { kind: 'http', target, method, path, headers, body, cred, identity, ...(authError !== undefined ? { authError } : {}) };
}
