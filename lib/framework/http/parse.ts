import type { Context } from 'hono';
import type { z } from 'zod';
import { refuse } from '../../core/errors.ts';
import { R } from '../../core/refusals.ts';
import { readBody } from './body-limit.ts';

/** Describes the first problem zod found, naming the field: `files[2].path: expected string`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request body';
  const path = issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
  const msg = issue.code === 'invalid_type' ? `expected ${issue.expected}` : issue.message;
  return path ? `${path}: ${msg}` : msg;
}

const decoder = new TextDecoder();

/**
 * Reads the body as JSON and validates it: malformed JSON or a wrong type → 400 naming the problem.
 * An empty body is treated as `{}` when `emptyAsObject` (routes whose fields are all optional).
 */
export async function parseBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  opts: { emptyAsObject?: boolean } = {},
): Promise<z.infer<S>> {
  const text = decoder.decode(await readBody(c));
  let value: unknown;
  if (text.trim() === '' && opts.emptyAsObject) value = {};
  else {
    try {
      value = JSON.parse(text);
    } catch {
      throw refuse(R.invalid_json);
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw refuse(R.invalid_request, describeIssue(parsed.error));
  return parsed.data;
}
