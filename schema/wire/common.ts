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

/**
 * Every JSON error body: the message, for people, and the refusal's stable code, for programs (lib/core/refusals.ts);
 * some refusals add fields of their own.
 */
export const ErrorBody = z
  .object({ error: z.string().describe('What went wrong, in words.'), code: z.string().describe('The refusal, stable and snake_case: what clients match on.') })
  .passthrough();
export type ErrorBody = z.infer<typeof ErrorBody>;
