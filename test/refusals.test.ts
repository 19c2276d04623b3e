/**
 * The catalogue of refusals (lib/core/refusals.ts) against what uses it: every route's documented refusals are
 * catalogue entries (their examples worded as the entry's message says), the OpenAPI document lists each with
 * its code, the framework adds opening the repository's refusals to every `/v1/repos/:id` route, messages and
 * codes map one to one, docs/api.md's table is the catalogue's, and no JSON error is made outside it.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hostedRoutes, routes } from '../functions/index.ts';
import { buildOpenApi, isRepoRoute, openApiPath } from '../lib/framework/openapi.ts';
import { CATALOGUE, R, Refusal, docRefusal } from '../lib/core/refusals.ts';
import { API_DOC_FILE, apiDocText } from '../scripts/openapi.ts';

type Json = Record<string, any>;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ALL = [...routes, ...hostedRoutes];
const doc = buildOpenApi({ routes, hostedRoutes }) as Json;

/** A message template as a pattern: each `<...>` stands for any text. */
const pattern = (template: string) =>
  new RegExp(`^${template.split(/<[^>]+>/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`, 's');

/** The (message, code) pairs of an OpenAPI error response's description. */
function listedIn(description: string): Array<[string, string]> {
  return [...description.matchAll(/`((?:[^`])+)` \(`([a-z_]+)`\)/g)].map((m) => [m[1]!, m[2]!]);
}

describe('the catalogue of refusals', () => {
  it('codes are snake_case; each message has one code and each code one message', () => {
    const codeOf = new Map<string, string>();
    const messageOf = new Map<string, string>();
    for (const r of CATALOGUE) {
      expect(r.code, r.message).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      expect(codeOf.get(r.message) ?? r.code, r.message).toBe(r.code);
      expect(messageOf.get(r.code) ?? r.message, r.code).toBe(r.message);
      codeOf.set(r.message, r.code);
      messageOf.set(r.code, r.message);
      expect(r.status, r.code).toBeGreaterThanOrEqual(400);
    }
    // The one message with two statuses, one code.
    const twice = CATALOGUE.filter((r) => CATALOGUE.some((o) => o !== r && o.code === r.code));
    expect(twice.map((r) => [r.status, r.code, r.message])).toEqual([
      [403, 'not_a_member', 'not a member of this repo'],
      [404, 'not_a_member', 'not a member of this repo'],
    ]);
    // Keys are the codes, but the 404 of that one.
    for (const [key, r] of Object.entries(R)) if (key !== 'member_not_found') expect(r.code).toBe(key);
  });

  it('a message made from values has the shape its template says', () => {
    for (const r of CATALOGUE) {
      if (!r.format) continue;
      // Free text (a git client's request, a cap's wording) is the whole message: made from its template, it is the template.
      const make = r.format as unknown as (...args: string[]) => string;
      const free = make.length === 1 && make('\u0000') === '\u0000';
      const args = free ? [r.message] : Array.from({ length: make.length }, (_, i) => `v${i}`);
      expect(make(...args), r.code).toMatch(pattern(r.message));
    }
    expect(R.unknown_sha.text('abc')).toBe('unknown sha: abc');
    expect(R.invalid_request.text('files[0].path: expected string')).toBe('invalid request: files[0].path: expected string');
    expect(R.import_file_too_large.text('c0ffee', 'big.md', 10, 5)).toBe('file too large in c0ffee: big.md (10 bytes, at most 5)');
  });

  it("every route's documented refusals are catalogue entries, and examples read as their entry's template", () => {
    const entries = new Set<Refusal<never>>(CATALOGUE);
    for (const r of ALL) {
      for (const d of r.doc?.errors ?? []) {
        const { refusal, message } = docRefusal(d);
        expect(entries.has(refusal), `${r.method} ${r.path}: ${message}`).toBe(true);
        expect(message, `${r.method} ${r.path}`).toMatch(pattern(refusal.message));
      }
    }
  });

  it('no route lists the refusals of opening its repository: the framework adds them', () => {
    const opening = new Set<Refusal<never>>([R.invalid_repo_id, R.not_a_member, R.repo_not_found]);
    for (const r of ALL) {
      for (const d of r.doc?.errors ?? []) expect(opening.has(docRefusal(d).refusal), `${r.method} ${r.path}`).toBe(false);
    }
  });

  it('the OpenAPI document lists every refusal with its code, each a catalogue entry', () => {
    const byCode = new Map<string, Refusal<never>[]>();
    for (const r of CATALOGUE) byCode.set(r.code, [...(byCode.get(r.code) ?? []), r]);
    const resolve = (resp: Json): Json => (resp.$ref ? doc.components.responses[String(resp.$ref).split('/').pop()!] : resp);
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        for (const [status, resp] of Object.entries((op as Json).responses as Json)) {
          if (Number(status) < 400) continue;
          const r = resolve(resp as Json);
          const listed = listedIn(r.description);
          // A refusal sharing its status with a success (a push's 409) follows "Or a refusal,".
          expect(listed.length, `${method} ${path} ${status}: ${r.description}`).toBeGreaterThan(0);
          for (const [message, code] of listed) {
            const entry = (byCode.get(code) ?? []).find((e) => e.status === Number(status));
            expect(entry, `${method} ${path} ${status}: ${code}`).toBeDefined();
            expect(message, `${method} ${path} ${status}`).toMatch(pattern(entry!.message));
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(300);
    expect(doc.components.schemas.ErrorBody.required).toEqual(['error', 'code']);
  });

  it("every /v1/repos/:id route answers opening's refusals: 400 invalid repo id, 403 not a member, 404 repo not found unless it creates the repository", () => {
    const repoRoutes = ALL.filter(isRepoRoute);
    expect(repoRoutes.length).toBeGreaterThan(25);
    for (const r of repoRoutes) {
      const op = doc.paths[openApiPath(r.path).path][r.method.toLowerCase()] as Json;
      const codes = (status: number) => listedIn(op.responses[status]?.description ?? '').map(([, c]) => c);
      const name = `${r.method} ${r.path}`;
      expect(codes(400), name).toContain('invalid_repo_id');
      expect(codes(403), name).toContain('not_a_member');
      if (r.doc?.createsRepo) expect(codes(404), name).not.toContain('repo_not_found');
      else expect(codes(404), name).toContain('repo_not_found');
    }
    expect(ALL.filter((r) => r.doc?.createsRepo).map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      'POST /v1/repos/:id',
      'POST /v1/repos/:id/import',
      'POST /v1/repos/:id/sync/push',
    ]);
  });

  it("docs/api.md's table of refusal codes is the catalogue's (npm run openapi writes it)", () => {
    const onDisk = readFileSync(API_DOC_FILE, 'utf8');
    expect(onDisk === apiDocText(onDisk), "docs/api.md's refusal codes are stale: run npm run openapi and commit it").toBe(true);
    for (const r of CATALOGUE) expect(onDisk).toContain(`| ${r.status} | \`${r.code}\` |`);
  });

  it('no JSON error is made outside the catalogue: no HttpError from a literal, no hand-made error body', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    for (const dir of ['lib', 'functions']) walk(join(ROOT, dir));
    files.push(join(ROOT, 'server.ts'), join(ROOT, 'worker.ts'));
    const offenders: string[] = [];
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      const rel = f.slice(ROOT.length);
      // The class itself (errorFromWire rebuilds one), a subclass made from catalogue entries, and git's 401
      // copied with its challenge header (code and message kept).
      const allowed = ['lib/core/errors.ts', 'lib/git/upload-request.ts', 'lib/auth/resolve.ts'];
      if (/new HttpError\(/.test(text) && !allowed.includes(rel)) offenders.push(`${rel}: new HttpError(`);
      if (/json\(\s*\{\s*error\s*:/.test(text)) offenders.push(`${rel}: a hand-made error body`);
    }
    expect(offenders).toEqual([]);
  });
});
