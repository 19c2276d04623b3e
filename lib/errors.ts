/**
 * The one error type of the service. Thrown anywhere below a handler and rendered by the app as
 * `{"error": message, ...extra}` with the given status.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown> | undefined;
  /** Response headers that go with the error (`Retry-After` of a 503, `Connection: close` of a 408). */
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, extra?: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }

  body(): Record<string, unknown> {
    return { error: this.message, ...(this.extra ?? {}) };
  }
}

