/**
 * The dashboard's side of the shared API client (client/http/client.ts): the browser's fetch, no time limit,
 * answers trusted (no zod in the bundle), and a request that got no answer explained (the server is down, or
 * this origin is not allowed by its CORS settings). Every call site uses the shared client's methods and the
 * wire types of schema/wire.
 */
import type { MeResponse } from '../../schema/wire/auth.ts';
import { ApiClient, ApiError } from '../../client/http/client.ts';

export { ApiError };

/** A readable sentence for any failure; the API's own `error` text is kept as it is. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 0) return e.message;
    const hint =
      e.status === 401
        ? ' Sign in again.'
        : e.status === 403
          ? ' You do not have access to this.'
          : e.status === 429
            ? ' Too many requests: wait a moment and try again.'
            : '';
    return `${capitalise(e.message)} (HTTP ${e.status}).${hint}`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The views this server has for the signed-in user, as GET /v1/me says: nothing probes a route that would refuse. */
export interface Capabilities {
  /** The hosted build: plan and billing. */
  hosted: boolean;
  /** The hosted build's admin page (the user's email is in SERVICE_ADMIN_EMAILS). */
  admin: boolean;
}

export function capabilitiesOf(me: MeResponse): Capabilities {
  return { hosted: me.server.hosted, admin: me.admin === true };
}

/** What GET /v1/me said about the server: its capabilities, or why it could not say; neither while it is asked. */
export interface ServerInfo {
  caps?: Capabilities;
  error?: string;
}

/**
 * Why a request got no answer at all. The browser reports a CORS refusal as the same network error as a server
 * that is down, so two probes of the server's `/health` (public, not rate limited) tell them apart: a CORS
 * request, which succeeds only if this origin is allowed, and a no-cors one, which succeeds whenever the server
 * answers (its answer stays opaque). The server is up but the CORS probe fails: the origin is not allowed.
 */
export async function unreachableReason(baseUrl: string, origin: string): Promise<string> {
  const health = `${baseUrl}/health`;
  const down = `The server at ${baseUrl} could not be reached.`;
  try {
    await fetch(health, { cache: 'no-store' });
    return down; // this origin is allowed: the failure was the connection's
  } catch {
    // refused by CORS, or down: the no-cors probe decides
  }
  try {
    await fetch(health, { mode: 'no-cors', cache: 'no-store' });
  } catch {
    return down;
  }
  return `This dashboard's origin ${origin} is not allowed by the server at ${baseUrl}: add it to SERVICE_CORS_ORIGINS in the server's settings (comma-separated) and restart the server.`;
}

export class Api extends ApiClient {
  /** The probe under way after a request got no answer; concurrent failures share it. */
  private probe: Promise<string> | undefined;

  constructor(baseUrl: string, token: string | null) {
    super({ baseUrl, token, fetch: (input, init) => fetch(input, init) });
  }

  private unreachable(): Promise<string> {
    this.probe ??= unreachableReason(this.baseUrl, location.origin).finally(() => {
      this.probe = undefined;
    });
    return this.probe;
  }

  /** No answer: why, in words; a request its caller stopped (`signal`) fails as it was stopped. */
  protected override async failure(e: unknown, signal?: AbortSignal): Promise<ApiError> {
    if (e instanceof ApiError) return e;
    if (signal?.aborted) throw e;
    return new ApiError(await this.unreachable(), 0);
  }
}
