/**
 * The OpenAPI 3.1 document of the API, built from the route list (functions/) and each route's `doc`
 * (lib/framework/route.ts RouteDoc), with the zod schemas of schema/wire as its `components/schemas`: zod 4's
 * `z.toJSONSchema` writes JSON Schema draft 2020-12, the dialect OpenAPI 3.1 uses, so no converter library
 * is needed. Served at `GET /openapi.json` (functions/openapi.ts) and written to docs/openapi.json
 * (scripts/openapi.ts).
 *
 * Every schema exported by a schema/wire module is a named component (its export name); a route's doc
 * refers to them by identity. Request bodies and query parameters are converted as input (unknown keys
 * allowed, defaults optional), responses as output (`additionalProperties: false`: a key the schema does
 * not name is drift).
 */
import { z } from 'zod';
import type { RouteDef, RouteDoc, RouteDocResponse } from './route.ts';
import { R, docRefusal, type DocRefusal } from '../core/refusals.ts';
import * as auth from '../../schema/wire/auth.ts';
import * as common from '../../schema/wire/common.ts';
import * as diff from '../../schema/wire/diff.ts';
import * as hosted from '../../schema/wire/hosted.ts';
import * as limits from '../../schema/wire/limits.ts';
import * as links from '../../schema/wire/links.ts';
import * as members from '../../schema/wire/members.ts';
import * as query from '../../schema/wire/query.ts';
import * as repos from '../../schema/wire/repos.ts';
import * as search from '../../schema/wire/search.ts';
import * as service from '../../schema/wire/service.ts';
import * as sync from '../../schema/wire/sync.ts';
import * as events from '../../schema/wire/events.ts';
import * as webhooks from '../../schema/wire/webhooks.ts';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

export interface OpenApiInput {
  /** The routes every build serves (functions/index.ts `routes`). */
  routes: RouteDef[];
  /**
   * The hosted build's routes (functions/hosted/), listed with `x-hosted-only: true`; omit them for the
   * document of a self-hosted server, which does not serve them (nor answers 402).
   */
  hostedRoutes?: RouteDef[];
}

const WIRE_MODULES: Record<string, unknown>[] = [common, auth, repos, sync, diff, members, limits, service, query, hosted, search, links, events, webhooks];

const JSON_TYPE = 'application/json';
const COMPONENT = '#/components/schemas/';

/** A refusal as a response lists it: its message (as the route words it) and its code. */
interface Listed {
  message: string;
  code: string;
}
const listed = (d: DocRefusal): Listed => {
  const { refusal, message } = docRefusal(d);
  return { message, code: refusal.code };
};

const AUTH_ERRORS = [R.missing_authorization, R.invalid_authorization_format, R.invalid_token];
/** git's routes take Basic credentials too, and their 401s carry `WWW-Authenticate: Basic realm="kr"`. */
const GIT_AUTH_ERRORS = [R.missing_authorization, R.invalid_git_authorization_format, R.invalid_token];
/** The 402 of each cap, as most routes word it (RouteDoc.quotaMessage words it otherwise). */
const QUOTA_MESSAGES: Record<'quota_repos' | 'quota_members', string> = {
  quota_repos: 'repository limit reached for your plan (<limit>)',
  quota_members: "member limit reached for this repository's plan (<limit>)",
};
/** Opening the repository of a `/v1/repos/:id` route (lib/usecases/open-repo.ts `openRepo`, lib/framework/http/params.ts). */
const OPEN_REPO_ERRORS = [R.invalid_repo_id, R.not_a_member];

/** Refusals whose answers carry Retry-After. */
const RETRY_CODES = new Set([R.rate_limited.code, R.server_busy.code, R.repo_busy.code]);
const retries = (list: Listed[]) => list.some((l) => RETRY_CODES.has(l.code));

const TAGS: Array<{ name: string; description: string }> = [
  { name: 'Service', description: 'Health, limits and this document.' },
  { name: 'Accounts', description: 'Sign-in, the current user and personal access tokens.' },
  { name: 'Repositories', description: 'Creating, listing and exporting repositories.' },
  { name: 'Pages', description: 'Pages at head, push and pull.' },
  { name: 'History', description: 'Commits, section-aware diffs and evolution.' },
  { name: 'Search', description: 'Full-text search over the pages at head.' },
  { name: 'Members', description: 'Membership, invite keys and the activity feed.' },
  { name: 'Live', description: 'Events of a repository as they happen (Server-Sent Events).' },
  { name: 'Webhooks', description: 'Signed POSTs of a repository\'s events to other services.' },
  { name: 'Git', description: "Clone and fetch with git's own client (smart HTTP, read-only)." },
  { name: 'Billing', description: 'Plans and payments (hosted build only).' },
  { name: 'Admin', description: "The service operator's views (hosted build only)." },
];

const DEFAULT_PARAMS: Record<string, string> = {
  id: 'Repository id. Characters outside `[A-Za-z0-9_-]` are dropped before use; nothing left, or more than 64 characters, is 400 `invalid repo id`.',
  path: 'Page path inside the repository, slashes included and not encoded (`wiki/concepts/decision-log.md`).',
  userId: "The member's user id (a UUID).",
  keyId: "The invite key's id (a UUID), never its token.",
};

const INFO_DESCRIPTION = [
  'Project knowledge pages (markdown with frontmatter and `## ` sections) kept in one git repository per project, with history, membership, invite keys, personal access tokens, an activity feed and a section-aware diff.',
  '',
  'Every route under `/v1` takes `Authorization: Bearer <token>`: the legacy shared key, a session token from `POST /v1/auth/idp`, or a `krp_` personal access token. Bodies are JSON; every error is `{"error": "<message>", "code": "<code>"}`: the message is for people, the code (stable, snake_case, listed with each answer below) for programs; a 402 adds `limit` and `upgrade_url`. Every response carries `X-Request-Id`; every `/v1` response carries `Cache-Control: no-store`. A path that exists with another method answers 405 `method not allowed` with `Allow`; an unknown path answers 404 `not found`.',
  '',
  'The prose reference, with examples, is `docs/` in the repository.',
].join('\n');

/**
 * The schemas of schema/wire under their export names. A schema exported under two names (`XResponse =
 * X`) takes the one that is not a `...Response`, else the first in alphabetical order: loaders list a
 * module's exports in different orders, and the document must not depend on it.
 */
function wireSchemas(): Map<z.ZodType, string> {
  const rank = (name: string) => `${name.endsWith('Response') ? 1 : 0}${name}`;
  const entries = WIRE_MODULES.flatMap((mod) => Object.entries(mod)).sort(([a], [b]) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
  const names = new Map<z.ZodType, string>();
  for (const [name, value] of entries) if (value instanceof z.ZodType && !names.has(value)) names.set(value, name);
  return names;
}

const ZOD_PATTERN_FORMATS = new Set(['starts_with', 'ends_with', 'includes']);

/** Drops zod's implicit safe-integer bounds, its pattern formats and the per-schema `$schema`/`$id`, recursively. */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === '$id') continue;
    if ((k === 'minimum' && v === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && v === Number.MAX_SAFE_INTEGER)) continue;
    // zod names its `startsWith`/`endsWith`/`includes` checks as formats JSON Schema does not know; their `pattern` says it.
    if (k === 'format' && typeof v === 'string' && ZOD_PATTERN_FORMATS.has(v)) continue;
    out[k] = tidy(v);
  }
  return out;
}

/** Every `$ref` to a component inside `node`. */
function refsIn(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) for (const v of node) refsIn(v, into);
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT)) into.add(v.slice(COMPONENT.length));
      else refsIn(v, into);
    }
  }
}

/** Converts schemas to JSON Schema, remembering which components each direction uses. */
class SchemaWriter {
  readonly names = wireSchemas();
  readonly used: Record<Io, Set<string>> = { input: new Set(), output: new Set() };
  readonly #registries: Record<Io, z.core.$ZodRegistry<{ id: string }>>;

  constructor() {
    const make = () => {
      const reg = z.registry<{ id: string }>();
      for (const [schema, id] of this.names) reg.add(schema, { id });
      return reg;
    };
    this.#registries = { input: make(), output: make() };
  }

  #convert(schema: z.ZodType, io: Io): Json {
    return z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      metadata: this.#registries[io],
      unrepresentable: 'any',
    }) as Json;
  }

  /** A `$ref` to the schema's component when it is a named wire schema, else the schema inline. */
  ref(schema: z.ZodType, io: Io): Json {
    const name = this.names.get(schema);
    if (name) {
      this.used[io].add(name);
      return { $ref: COMPONENT + name };
    }
    const json = this.#convert(schema, io);
    const defs = (json.$defs ?? {}) as Json;
    delete json.$defs;
    // Nested named schemas come out as `#/$defs/<name>`: point them at the components instead.
    const text = JSON.stringify(tidy(json)).replaceAll('"#/$defs/', `"${COMPONENT}`);
    for (const name of Object.keys(defs)) this.used[io].add(name);
    return JSON.parse(text) as Json;
  }

  /** Query parameters: one per key of the object. */
  parameters(schema: z.ZodObject): Json[] {
    const json = tidy(this.#convert(schema, 'input')) as { properties?: Record<string, Json>; required?: string[] };
    return Object.entries(json.properties ?? {}).map(([name, prop]) => {
      const { description, ...rest } = prop;
      return {
        name,
        in: 'query',
        required: (json.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      };
    });
  }

  /** `components/schemas`: every named schema the document uses, and those they use. */
  components(): Json {
    const all: Record<Io, Json> = {
      input: this.#all('input'),
      output: this.#all('output'),
    };
    const out: Json = {};
    for (const io of ['output', 'input'] as const) {
      const queue = [...this.used[io]];
      const seen = new Set<string>();
      while (queue.length > 0) {
        const name = queue.shift()!;
        if (seen.has(name)) continue;
        seen.add(name);
        const schema = all[io][name];
        if (schema === undefined) throw new Error(`openapi: no schema named ${name}`);
        if (name in out && JSON.stringify(out[name]) !== JSON.stringify(schema)) {
          throw new Error(`openapi: ${name} is both a request and a response schema, and they differ`);
        }
        out[name] = schema;
        const refs = new Set<string>();
        refsIn(schema, refs);
        queue.push(...refs);
      }
    }
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  #all(io: Io): Json {
    const json = z.toJSONSchema(this.#registries[io], {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      uri: (id) => COMPONENT + id,
    }) as { schemas: Json };
    return tidy(json.schemas) as Json;
  }
}

/** `/v1/repos/:id/pages/:path{.+}` → `/v1/repos/{id}/pages/{path}` and its parameter names. */
export function openApiPath(honoPath: string): { path: string; params: string[] } {
  const params: string[] = [];
  const path = honoPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)(\{[^}]*\})?/g, (_, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path, params };
}

const pathParameter = (name: string, description: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

const code = (s: string) => `\`${s}\``;

/** `message` (`code`). */
const describe = (l: Listed) => `${code(l.message)} (${code(l.code)})`;

function errorResponse(status: number, list: Listed[], w: SchemaWriter): Json {
  const schema = status === 402 ? w.ref(hosted.QuotaErrorBody, 'output') : w.ref(common.ErrorBody, 'output');
  const retryAfter = retries(list);
  return {
    description: list.length === 1 ? describe(list[0]!) : `One of: ${list.map(describe).join('; ')}.`,
    headers: {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      ...(retryAfter ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
    },
    content: { [JSON_TYPE]: { schema } },
  };
}

/** Refusals many routes share, as `components/responses`, referenced where a route's list is exactly theirs. */
const SHARED_RESPONSES: Array<{ name: string; status: number; list: Listed[] }> = [
  { name: 'Unauthorized', status: 401, list: AUTH_ERRORS.map(listed) },
  { name: 'BodyTimeout', status: 408, list: [listed(R.body_timeout)] },
  { name: 'BodyTooLarge', status: 413, list: [listed(R.body_too_large)] },
  { name: 'RateLimited', status: 429, list: [listed(R.rate_limited)] },
  { name: 'InternalError', status: 500, list: [listed(R.internal_error)] },
  { name: 'ServerBusy', status: 503, list: [listed(R.server_busy)] },
];

const key = (list: Listed[]) => list.map((l) => `${l.code} ${l.message}`).join('\n');

function sharedResponse(status: number, list: Listed[]): string | undefined {
  const found = SHARED_RESPONSES.find((r) => r.status === status && key(r.list) === key(list));
  return found ? `#/components/responses/${found.name}` : undefined;
}

function successResponse(r: RouteDocResponse, w: SchemaWriter): Json {
  const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
  for (const [name, description] of Object.entries(r.headers ?? {})) headers[name] = { description, required: true, schema: { type: 'string' } };
  const out: Json = { description: r.description, headers };
  const type = r.contentType ?? (r.schema ? JSON_TYPE : undefined);
  if (type) {
    const media: Json = r.schema ? { schema: w.ref(r.schema, 'output') } : {};
    if (r.events) media['x-events'] = Object.fromEntries(Object.entries(r.events).map(([name, s]) => [name, w.ref(s, 'output')]));
    out.content = { [type]: media };
  }
  return out;
}

function operation(r: RouteDef, doc: RouteDoc, hostedOnly: boolean, withQuota: boolean, w: SchemaWriter): Json {
  const { params } = openApiPath(r.path);
  const bodyKind = r.body ?? (r.method === 'POST' ? 'small' : 'none');

  // Refusals: opening the repository and the route's own, then those every route of its kind shares.
  const errors = new Map<number, Listed[]>();
  const add = (...refusals: DocRefusal[]) => {
    for (const d of refusals) {
      const status = docRefusal(d).refusal.status;
      const l = listed(d);
      const list = errors.get(status) ?? [];
      if (!list.some((x) => x.message === l.message && x.code === l.code)) list.push(l);
      errors.set(status, list);
    }
  };
  if (!r.public) add(...(r.auth === 'git' ? GIT_AUTH_ERRORS : AUTH_ERRORS));
  if (isRepoRoute(r)) add(...OPEN_REPO_ERRORS, ...(doc.createsRepo ? [] : [R.repo_not_found]));
  add(...(doc.errors ?? []));
  if (withQuota) for (const q of doc.quota ?? []) add(R[q].example(doc.quotaMessage?.[q] ?? QUOTA_MESSAGES[q]));
  if (bodyKind !== 'none') {
    if (doc.body && (doc.body.contentType ?? JSON_TYPE) === JSON_TYPE) add(R.invalid_json);
    add(R.body_incomplete, R.body_timeout, R.body_too_large, R.server_busy);
  }
  if (r.rateLimited !== false) add(R.rate_limited);
  add(R.internal_error);

  const responses: Json = {};
  const statuses = [...new Set([...Object.keys(doc.responses).map(Number), ...errors.keys()])].sort((a, b) => a - b);
  for (const status of statuses) {
    const ok = doc.responses[status];
    const messages = errors.get(status);
    if (ok && messages) {
      // One status, two shapes (a push's 409: conflicts, or a refusal of the whole push).
      const a = successResponse(ok, w);
      const b = errorResponse(status, messages, w);
      if (!(JSON_TYPE in ((a.content as Json | undefined) ?? {}))) {
        // One status, two media types (git's push refusal in text/plain, or a JSON refusal).
        responses[status] = {
          description: `${ok.description} Or a refusal, ${b.description as string}`,
          headers: b.headers,
          content: { ...(a.content as Json), ...(b.content as Json) },
        };
        continue;
      }
      const aSchema = ((a.content as Json)[JSON_TYPE] as Json).schema;
      const bSchema = ((b.content as Json)[JSON_TYPE] as Json).schema;
      responses[status] = {
        description: `${ok.description} Or a refusal, ${b.description as string}`,
        headers: { ...(a.headers as Json), ...(b.headers as Json) },
        content: { [JSON_TYPE]: { schema: { oneOf: [aSchema, bSchema] } } },
      };
    } else if (ok) responses[status] = successResponse(ok, w);
    else if (messages) {
      const shared = sharedResponse(status, messages);
      responses[status] = shared ? { $ref: shared } : errorResponse(status, messages, w);
      if (status === 401 && r.auth === 'git') {
        ((responses[status] as Json).headers as Json)['WWW-Authenticate'] = { description: '`Basic realm="kr"`: git asks for credentials.', required: true, schema: { type: 'string' } };
      }
    }
  }

  const parameters: Json[] = params.map((name) =>
    doc.params?.[name] === undefined && DEFAULT_PARAMS[name] !== undefined
      ? { $ref: `#/components/parameters/${name}` }
      : pathParameter(name, doc.params?.[name] ?? name),
  );
  if (doc.query) parameters.push(...w.parameters(doc.query));

  const notes: string[] = [];
  if (hostedOnly) notes.push('**Hosted build only**: a self-hosted server answers 404 `not found`.');
  if (doc.description) notes.push(doc.description);
  notes.push(`**Who may call it**: ${doc.access}`);
  if (r.rateLimited === false) notes.push('Not rate limited.');
  else if (r.limiter === 'auth') notes.push('Rate limited per client IP by the general limiter and by the sign-in limiter.');

  const op: Json = {
    operationId: doc.operationId,
    summary: doc.summary,
    description: notes.join('\n\n'),
    tags: [doc.tag],
  };
  if (parameters.length > 0) op.parameters = parameters;
  if (doc.body) {
    const type = doc.body.contentType ?? JSON_TYPE;
    op.requestBody = {
      required: doc.body.required ?? true,
      ...(doc.body.description ? { description: doc.body.description } : {}),
      content: { [type]: { schema: w.ref(doc.body.schema, 'input') } },
    };
  }
  op.responses = responses;
  if (r.public) op.security = [];
  else if (r.auth === 'git') op.security = [{ basic: [] }, { bearer: [] }];
  if (hostedOnly) op['x-hosted-only'] = true;
  return op;
}

/** A route under `/v1/repos/:id`: it opens the repository its `:id` names (lib/usecases/open-repo.ts `openRepo`). */
export const isRepoRoute = (r: RouteDef): boolean => r.path === '/v1/repos/:id' || r.path.startsWith('/v1/repos/:id/');

const undocumented = (r: RouteDef): RouteDoc => ({
  operationId: `${r.method.toLowerCase()}${r.path.replace(/\{[^}]*\}/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, ch?: string) => (ch ?? '').toUpperCase())}`,
  summary: `${r.method} ${r.path}`,
  tag: 'Service',
  access: 'not documented yet.',
  responses: { 200: { description: 'Not documented yet.' } },
});

/** The OpenAPI 3.1 document of `routes` (and of `hostedRoutes`, marked hosted-only). */
export function buildOpenApi(input: OpenApiInput): Json {
  const w = new SchemaWriter();
  const hostedSet = new Set(input.hostedRoutes ?? []);
  const withQuota = hostedSet.size > 0;
  const paths: Json = {};
  for (const r of [...input.routes, ...(input.hostedRoutes ?? [])]) {
    const { path } = openApiPath(r.path);
    const item = (paths[path] ??= {}) as Json;
    const method = r.method.toLowerCase();
    if (item[method]) throw new Error(`openapi: ${r.method} ${r.path} is listed twice`);
    // A route without its doc yet is listed all the same, flagged (test/openapi.test.ts refuses it).
    const doc = r.doc ?? undocumented(r);
    item[method] = operation(r, doc, hostedSet.has(r), withQuota, w);
    if (!r.doc) (item[method] as Json)['x-undocumented'] = true;
  }
  const usedTags = new Set(
    Object.values(paths).flatMap((item) => Object.values(item as Json).flatMap((op) => (op as { tags: string[] }).tags)),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Knowledge Repository Service (kr)',
      version: '1',
      description: withQuota
        ? `${INFO_DESCRIPTION}\n\nThis document covers both builds: operations marked \`x-hosted-only\` exist only in the hosted build, and 402 answers come only from it.`
        : INFO_DESCRIPTION,
    },
    tags: TAGS.filter((t) => usedTags.has(t.name)),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The legacy shared key (`SERVICE_API_KEY`), a session token (a JWT from `POST /v1/auth/idp`, 30 days) or a personal access token (`krp_...`).',
        },
        basic: {
          type: 'http',
          scheme: 'basic',
          description: "git's routes only: any user name, and as the password a token the bearer scheme takes (what git sends from its prompt, URL userinfo or a credential helper).",
        },
      },
      headers: {
        'X-Request-Id': {
          description: "The request's id, also in the server's log line for it.",
          required: true,
          schema: { type: 'string', format: 'uuid' },
        },
        'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
      },
      parameters: Object.fromEntries(Object.entries(DEFAULT_PARAMS).map(([name, description]) => [name, pathParameter(name, description)])),
      responses: Object.fromEntries(
        SHARED_RESPONSES.map((r) => [r.name, errorResponse(r.status, r.list, w)]),
      ),
      schemas: w.components(),
    },
  };
}
