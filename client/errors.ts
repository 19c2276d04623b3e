/**
 * The client's one error type. Exit codes (issue 9): 0 success, 1 a refused request (the server said no,
 * or the command cannot go on: not logged in, no project, a conflict), 2 bad usage (caught before any
 * request is made).
 *
 * Every error also has a short machine-readable `code` (issue 14), printed with the message as
 * `{"error": …, "code": …}` on stderr when the command was given `--json`: `usage` for bad usage, the
 * server's own `code` when its answer has one (quota errors), a name for each kind of refusal
 * (`token_invalid`, `timeout`, `unreachable`, `conflict`, `not_logged_in`, `no_project`, `no_repo`,
 * `too_large`, `denied` and `interrupted` for a browser login the user cancelled or broke off, …), `refused`
 * otherwise.
 */
export class CliError extends Error {
  readonly code: string;

  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
    code?: string,
  ) {
    super(message);
    this.name = 'CliError';
    this.code = code ?? (exitCode === 2 ? 'usage' : 'refused');
  }
}

/** Bad usage: exit 2, raised before any request. */
export const usageError = (message: string): CliError => new CliError(message, 2, 'usage');

/** A refusal that is not the server's: exit 1. */
export const refused = (message: string, code = 'refused'): CliError => new CliError(message, 1, code);
