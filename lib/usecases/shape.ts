import type { IndexedCommit } from '../repo/path-index.ts';
import { LABEL_MAX_CHARS, type Commit } from '../../schema/wire/common.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';

/** A PAT's or invite key's label: at most {@link LABEL_MAX_CHARS} characters (code points); absent = "". */
export function checkLabel(label: string | undefined): string {
  if (label === undefined) return '';
  let n = 0;
  for (const _ of label) if (++n > LABEL_MAX_CHARS) throw refuse(R.label_too_long, LABEL_MAX_CHARS);
  return label;
}

/** Unix seconds → RFC 3339 UTC with whole seconds (`2026-05-17T10:00:00Z`). */
export const rfc3339 = (unixSeconds: number): string =>
  new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

export const commitJson = (c: IndexedCommit): Commit => ({
  sha: c.sha,
  author: c.author,
  email: c.email,
  time: rfc3339(c.time),
  message: c.message,
});
