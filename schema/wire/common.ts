import * as z from 'zod';

/** A commit as every route shows it: `time` is RFC 3339 UTC, whole seconds. */
export const Commit = z.object({
  sha: z.string(),
  author: z.string(),
  email: z.string(),
  time: z.string(),
  message: z.string(),
});
export type Commit = z.infer<typeof Commit>;

/** Labels of PATs and invite keys: at most this many characters. */
export const LABEL_MAX_CHARS = 200;

export const ErrorBody = z.object({ error: z.string() }).passthrough();
export type ErrorBody = z.infer<typeof ErrorBody>;
