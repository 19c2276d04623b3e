/**
 * The client's one error type. Exit codes (issue 9): 0 success, 1 a refused request (the server said no,
 * or the command cannot go on: not logged in, no project, a conflict), 2 bad usage (caught before any
 * request is made).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad usage: exit 2, raised before any request. */
export const usageError = (message: string): CliError => new CliError(message, 2);

/** A refusal that is not the server's: exit 1. */
export const refused = (message: string): CliError => new CliError(message, 1);
