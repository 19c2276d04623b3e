/**
 * The OpenAPI document (lib/framework/openapi.ts): a valid OpenAPI 3.1 document by a maintained validator, covering
 * every route with its path parameters, docs/openapi.json current with the code (CI runs this), and the
 * response checker the end-to-end suites run every answer through (test/helpers/openapi-check.ts) able to
 * fail.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildOpenApi, openApiPath } from '../lib/framework/openapi.ts';
import { hostedRoutes, routes } from '../functions/index.ts';
import { OPENAPI_FILE, openApiFileText } from '../scripts/openapi.ts';
import { ResponseChecker } from './helpers/openapi-check.ts';
import { startTarget, type TargetKind } from './helpers/targets.ts';

type Json = Record<string, any>;

const full = buildOpenApi({ routes, hostedRoutes }) as Json;
const selfHosted = buildOpenApi({ routes }) as Json;
const METHODS = ['get', 'post', 'delete'];

const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ path, method, op: op as Json })),
  );

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': '3f1c2b9e-4d5a-4c6b-8e7f-0a1b2c3d4e5f', ...headers },
  });

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator), for both builds', async () => {
    for (const doc of [full, selfHosted]) {
      const validator = new Validator();
      const result = await validator.validate(doc);
      expect(result.errors, JSON.stringify(result.errors, null, 1)?.slice(0, 2000)).toBeUndefined();
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.1');
    }
  });

  it('a broken document is refused by the same validator (the check can fail)', async () => {
    const broken = structuredClone(full);
    broken.paths['/health'].get.responses['200'].description = 42;
    delete broken.info.version;
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('docs/openapi.json is what `npm run openapi` generates now', () => {
    const onDisk = readFileSync(OPENAPI_FILE, 'utf8');
    expect(onDisk === openApiFileText(), 'docs/openapi.json is stale: run npm run openapi and commit it').toBe(true);
    expect(JSON.parse(onDisk)).toEqual(full);
  });

  it('every route has its doc (lib/framework/route.ts RouteDoc)', () => {
    const missing = [...routes, ...hostedRoutes].filter((r) => !r.doc).map((r) => `${r.method} ${r.path}`);
    expect(missing, 'routes without a doc: add one (see functions/pages/list.ts), then npm run openapi').toEqual([]);
    expect(JSON.stringify(full)).not.toContain('x-undocumented');
    const stub = buildOpenApi({ routes: [{ method: 'GET', path: '/v1/x/:id', handler: () => new Response() }] }) as Json;
    expect(stub.paths['/v1/x/{id}'].get).toMatchObject({ operationId: 'getV1XId', 'x-undocumented': true });
  });

  it('lists every route once, with its path parameters, an operationId and a tag; nothing else', () => {
    const ops = operations(full);
    const expected = [...routes, ...hostedRoutes].map((r) => `${r.method.toLowerCase()} ${openApiPath(r.path).path}`);
    expect(ops.map((o) => `${o.method} ${o.path}`).sort()).toEqual([...expected].sort());
    expect(new Set(ops.map((o) => o.op.operationId)).size).toBe(ops.length);
    const tags = new Set((full.tags as Json[]).map((t) => t.name));
    for (const { path, op } of ops) {
      expect(tags.has(op.tags[0]), `${path}: tag ${op.tags[0]}`).toBe(true);
      const declared = (op.parameters ?? [])
        .map((p: Json) => (p.$ref ? full.components.parameters[p.$ref.split('/').pop()] : p))
        .filter((p: Json) => p.in === 'path')
        .map((p: Json) => p.name);
      expect(declared, path).toEqual([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
    }
    expect(openApiPath('/v1/repos/:id/pages/:path{.+}')).toEqual({ path: '/v1/repos/{id}/pages/{path}', params: ['id', 'path'] });
  });

  it('public routes need no bearer; the others list their 401; rate-limited ones their 429', () => {
    const publicOps = operations(full).filter((o) => Array.isArray(o.op.security) && o.op.security.length === 0);
    expect(publicOps.map((o) => `${o.method} ${o.path}`).sort()).toEqual(['get /client/kr.mjs', 'get /client/kr.tgz', 'get /health', 'get /openapi.json', 'post /billing/webhook', 'post /v1/auth/idp']);
    expect(full.security).toEqual([{ bearer: [] }]);
    expect(full.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { path, method, op } of operations(full)) {
      const isPublic = publicOps.some((p) => p.op === op);
      if (!isPublic) {
        const r401 = op.responses['401'];
        if (r401.$ref) expect(r401.$ref, `${method} ${path}`).toBe('#/components/responses/Unauthorized');
        else if (op.tags[0] === 'Git') {
          // git's routes take Basic credentials too, and their 401 asks for them.
          expect(op.security, `${method} ${path}`).toEqual([{ basic: [] }, { bearer: [] }]);
          expect(r401.description).toBe(
            'One of: `missing authorization header` (`missing_authorization`); `invalid authorization format, expected Basic or Bearer credentials` (`invalid_git_authorization_format`); `invalid token` (`invalid_token`).',
          );
          expect(r401.headers['WWW-Authenticate']).toMatchObject({ required: true });
        } else expect(r401.description, `${method} ${path}`).toMatch(
            /^One of: `missing authorization header` \(`missing_authorization`\); `invalid authorization format, expected Bearer <token>` \(`invalid_authorization_format`\); `invalid token` \(`invalid_token`\); /,
          );
      }
      expect('429' in op.responses, `${method} ${path}`).toBe(path !== '/health' && path !== '/openapi.json');
      expect(op.responses['500'], `${method} ${path}`).toEqual({ $ref: '#/components/responses/InternalError' });
    }
  });

  it('marks the hosted routes; a self-hosted server documents neither them nor 402', () => {
    const hostedOps = operations(full).filter((o) => o.op['x-hosted-only'] === true);
    expect(hostedOps.map((o) => `${o.method.toUpperCase()} ${o.path}`).sort()).toEqual(
      hostedRoutes.map((r) => `${r.method} ${openApiPath(r.path).path}`).sort(),
    );
    expect(operations(full).find((o) => o.op.operationId === 'joinRepo')!.op.responses['402']).toBeDefined();
    const text = JSON.stringify(selfHosted);
    expect(text).not.toContain('x-hosted-only');
    expect(text).not.toContain('"402"');
    expect(text).not.toContain('QuotaErrorBody');
    expect(operations(selfHosted)).toHaveLength(routes.length);
  });

  it('names the exact error strings of a route', () => {
    const push = full.paths['/v1/repos/{id}/sync/push'].post.responses;
    expect(push['400'].description).toContain('`invalid page path: <path>`');
    expect(push['409'].content['application/json'].schema).toEqual({
      oneOf: [{ $ref: '#/components/schemas/PushResponse' }, { $ref: '#/components/schemas/ErrorBody' }],
    });
    expect(push['413'].description).toContain('`too many files in one push (max 10000)`');
    expect(push['402'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/QuotaErrorBody' });
    expect(full.paths['/v1/me'].get.responses['401'].description).toContain('`session required`');
  });

  it('components are the wire schemas: responses closed to unknown keys, requests open', () => {
    const s = full.components.schemas;
    expect(s.LimitsResponse).toEqual({
      type: 'object',
      properties: { max_body_bytes: { type: 'integer' }, max_files_per_push: { type: 'integer' }, max_page_path_bytes: { type: 'integer' } },
      required: ['max_body_bytes', 'max_files_per_push', 'max_page_path_bytes'],
      additionalProperties: false,
    });
    expect(s.PushRequest.additionalProperties).toBeUndefined();
    expect(s.CreatePatRequest.properties.expires_in_days).toEqual({ type: 'integer', minimum: 1, maximum: 366 });
    expect(s.RepoSummary.properties.last_commit).toEqual({ $ref: '#/components/schemas/Commit' });
    expect(JSON.stringify(full)).not.toMatch(/9007199254740991|"\$schema"|starts_with/);
  });
});

describe('the response checker (test/helpers/openapi-check.ts)', () => {
  const checker = new ResponseChecker(full);
  const limits = { max_body_bytes: 8388608, max_files_per_push: 10000, max_page_path_bytes: 512 };

  it('accepts answers that match, and leaves undocumented routes alone', async () => {
    expect(await checker.check('GET', '/v1/limits', json(limits))).toBeNull();
    expect(await checker.check('GET', '/health', json({ status: 'ok' }))).toBeNull();
    expect(await checker.check('POST', '/v1/repos/join', json({ repo_id: 'kb', role: 'member' }))).toBeNull();
    expect(await checker.check('GET', '/v1/repos/kb/pages/a/b.md?x=1', new Response('# A\n', {
      headers: { 'content-type': 'text/markdown; charset=utf-8', 'x-request-id': 'x', 'x-page-sha': 'a'.repeat(40) },
    }))).toBeNull();
    expect(await checker.check('DELETE', '/v1/pats/p1', new Response(null, { status: 204, headers: { 'x-request-id': 'x' } }))).toBeNull();
    expect(await checker.check('GET', '/v1/repos/kb/sync/push', json({ error: 'method not allowed', code: 'method_not_allowed' }, 405))).toBeNull();
    expect(await checker.check('GET', '/v1/nope', json({ error: 'not found', code: 'not_found' }, 404))).toBeNull();
    expect(await checker.check('POST', '/v1/repos', json({ error: 'repo already exists', code: 'repo_exists' }, 409))).toBeNull();
  });

  it('finds drift: a wrong type, a missing or an extra key, a bad nested value', async () => {
    expect(await checker.check('GET', '/v1/limits', json({ ...limits, max_page_path_bytes: '512' }))).toMatch(
      /GET \/v1\/limits \(\/v1\/limits\) → 200: body does not match its schema: \/max_page_path_bytes must be integer/,
    );
    const { max_files_per_push: _, ...missing } = limits;
    expect(await checker.check('GET', '/v1/limits', json(missing))).toMatch(/must have required property 'max_files_per_push'/);
    expect(await checker.check('GET', '/v1/limits', json({ ...limits, extra: 1 }))).toMatch(/must NOT have additional properties/);
    expect(await checker.check('GET', '/v1/repos', json({ repos: [{ id: 'kb', page_count: 1, role: 'admin' }] }))).toMatch(
      /\/repos\/0\/role must be equal to one of the allowed values/,
    );
    expect(await checker.check('GET', '/v1/repos', json({ repos: null }))).toMatch(/\/repos must be array/);
    expect(await checker.check('GET', '/v1/me', json({ message: 'session required' }, 401))).toMatch(/must have required property 'error'/);
  });

  it('finds an undocumented status, a wrong media type, a missing header, a body where none belongs', async () => {
    expect(await checker.check('GET', '/v1/limits', json({ error: 'teapot' }, 418))).toMatch(/status not in the document/);
    expect(await checker.check('GET', '/v1/limits', new Response(JSON.stringify(limits), { headers: { 'content-type': 'text/plain', 'x-request-id': 'x' } }))).toMatch(
      /content type "text\/plain" not in the document/,
    );
    expect(await checker.check('GET', '/v1/limits', new Response(JSON.stringify(limits), { headers: { 'content-type': 'application/json' } }))).toMatch(
      /required header X-Request-Id missing/,
    );
    expect(await checker.check('GET', '/v1/repos/kb/pages/a.md', new Response('x', { headers: { 'content-type': 'text/markdown', 'x-request-id': 'x' } }))).toMatch(
      /required header X-Page-SHA missing/,
    );
    const bodyWith204 = json({ ok: true });
    Object.defineProperty(bodyWith204, 'status', { value: 204 }); // fetch's Response refuses to build one
    expect(await checker.check('DELETE', '/v1/pats/p1', bodyWith204)).toMatch(/the document gives no body/);
  });

  it('compiles every JSON response schema of the document in strict mode', () => {
    let n = 0;
    for (const { path, method, op } of operations(full)) {
      for (const [status, r] of Object.entries(op.responses as Json)) {
        const response = r.$ref ? full.components.responses[r.$ref.split('/').pop()] : r;
        const schema = response.content?.['application/json']?.schema;
        if (!schema) continue;
        expect(() => checker.validate(schema, {}), `${method} ${path} ${status}`).not.toThrow();
        n++;
      }
    }
    expect(n).toBeGreaterThan(150);
  });
});

describe('both builds serve it', () => {
  for (const kind of ['node', 'workers'] as TargetKind[]) {
    it(`${kind}: GET /openapi.json without a credential, the document of the build's own routes`, async () => {
      const t = await startTarget(kind);
      try {
        const res = await t.api('/openapi.json', { token: null }); // checked against the document by the client
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual(selfHosted);
      } finally {
        await t.stop();
      }
    }, 60_000);
  }
});
