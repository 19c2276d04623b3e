import type { Handler } from 'hono';
import type { Deps } from './deps.ts';
import type { Identity } from './auth/identity.ts';
import type { BodyKind } from './http/body-limit.ts';

/** The Hono environment every handler runs in. */
export type AppEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    /** Set by the auth middleware on /v1 routes. */
    identity: Identity | undefined;
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
   * The request body this route reads (lib/http/body-limit.ts): `none` (never read), `small` (JSON up to
   * 64 KiB) or `push` (up to SERVICE_MAX_BODY_BYTES). Default: `small` for POST, `none` otherwise.
   */
  body?: BodyKind;
  handler: Handler<AppEnv>;
}

export const defineRoute = (def: RouteDef): RouteDef => def;
