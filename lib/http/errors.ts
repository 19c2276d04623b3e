/**
 * The one error type of the service. Thrown anywhere below a handler and rendered by the app as
 * `{"error": message, ...extra}` with the given status.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown> | undefined;

  constructor(status: number, message: string, extra?: Record<string, unknown>) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.extra = extra;
  }

  body(): Record<string, unknown> {
    return { error: this.message, ...(this.extra ?? {}) };
  }
}

