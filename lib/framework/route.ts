import type { Handler } from 'hono';
import type { z } from 'zod';
import type { Deps } from './deps.ts';
import type { Identity } from '../auth/identity.ts';
import type { BodyKind } from './http/body-limit.ts';
import type { DocRefusal } from '../core/refusals.ts';

/** The Hono environment every handler runs in. */
export type AppEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    /** Set by the auth middleware on /v1 routes. */
    identity: Identity | undefined;
    /** Cuts this request's connection at once, where the runtime has a way (AppOptions.connectionCutter). */
    cutConnection: (() => void) | undefined;
  };
};

export type Method = 'GET' | 'POST' | 'DELETE';

/** One endpoint: what each file in functions/ exports as its default. */
export interface RouteDef {
  method: Method;
  /** Hono path pattern; `:path{.+}` captures a page path with its slashes. */
  path: string;
  /** Extra limiter for this route on top of the general one. */
  limiter?: 'auth';
  /** No credential needed (health, sign-in, signed webhooks). Every other route runs behind authentication. */
  public?: boolean;
  /**
   * `git`: git's smart-HTTP routes, which also take HTTP Basic credentials (any user name, the token as the
   * password) and answer their 401s with `WWW-Authenticate: Basic realm="kr"` (lib/auth/resolve.ts).
   */
  auth?: 'git';
  /**
   * The request body this route reads (lib/framework/http/body-limit.ts): `none` (never read), `small` (JSON up to
   * 64 KiB), `push` (up to SERVICE_MAX_BODY_BYTES) or `git` (a git client's request, up to GIT_BODY_BYTES).
   * Default: `small` for POST, `none` otherwise.
   */
  body?: BodyKind;
  /**
   * `false`: exempt from the general per-IP rate limiter (`/health`, `/openapi.json`). Static paths only: the
   * exemption matches the request path exactly.
   */
  rateLimited?: false;
  /** What the OpenAPI document (lib/framework/openapi.ts) and so docs/openapi.json say about this route. */
  doc?: RouteDoc;
  handler: Handler<AppEnv>;
}

/**
 * A route's reference entry. The schemas are the wire schemas of schema/wire (named there, they become
 * `components/schemas` of the document). The cross-cutting answers are added by lib/framework/openapi.ts, not listed
 * here: 401 on every route behind authentication, 429 on rate-limited ones, 400/408/413/503 of the body
 * guard on routes that read a body, 500 everywhere, those of opening the repository on `/v1/repos/:id`
 * routes, and the hosted build's 402 where `quota` names a cap.
 */
export interface RouteDoc {
  /** Stable name of the operation (`listPages`). */
  operationId: string;
  summary: string;
  description?: string;
  /** The group it is listed under (`Pages`, `Members`, ...). */
  tag: string;
  /** Who may call it, in one sentence. */
  access: string;
  /** Descriptions of path parameters by name; `id`, `path`, `userId` and `keyId` have defaults. */
  params?: Record<string, string>;
  /** Query parameters, one per key of the object. */
  query?: z.ZodObject;
  /** The request body (JSON unless `contentType` says otherwise); `required` defaults to true. */
  body?: { schema: z.ZodType; required?: boolean; contentType?: string; description?: string };
  /** Successful answers by status. */
  responses: Record<number, RouteDocResponse>;
  /**
   * Refusals of the route itself: entries of the catalogue (lib/core/refusals.ts), or examples of them as this
   * route words them. Those of opening the repository (`invalid repo id`, `not a member of this repo`,
   * `repo not found`) are added to every `/v1/repos/:id` route by lib/framework/openapi.ts, not listed here.
   */
  errors?: DocRefusal[];
  /** A missing repository is created (a push, an import, the legacy create): no 404 `repo not found`. */
  createsRepo?: true;
  /** The hosted build's caps this route may refuse with 402 (`quota_repos`, `quota_members`). */
  quota?: Array<'quota_repos' | 'quota_members'>;
  /** The 402 `error` of a cap this route words its own way (whose plan it is), by code. */
  quotaMessage?: Partial<Record<'quota_repos' | 'quota_members', string>>;
}

export interface RouteDocResponse {
  description: string;
  /** The body's schema; none = no body (204) or a body described in words only. */
  schema?: z.ZodType;
  /** Media type of the body; `application/json` by default when there is a schema. */
  contentType?: string;
  /** Response headers specific to this answer: name → description. */
  headers?: Record<string, string>;
  /**
   * A `text/event-stream` answer's events: the schema of each event name's `data` line, listed as the media
   * type's `x-events` (OpenAPI 3.1 has no place for the items of a stream).
   */
  events?: Record<string, z.ZodType>;
}

export const defineRoute = (def: RouteDef): RouteDef => def;
