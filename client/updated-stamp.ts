/**
 * The one conflict of a section merge that the clients settle themselves: two writers
 * who each stamp frontmatter `updated` with their own time (kr_write_page does on every write) change that key
 * differently on both sides, so the server's merge — rightly, by docs/api.md's rule "any other key changed differently
 * on both sides is a conflict" — refuses a push whose sections would merge. When a push's conflict names only
 * `frontmatter.updated` and both values are timestamps, `kr push` and kr_push push that page once more with
 * its `updated` set to the server's value: then the key changed on one side only (theirs), and the page merges.
 * The merged page keeps the server's `updated`, even when ours was later: the other writer's stamp stands for
 * both writes made at once.
 */
import { parsePage } from '../lib/core/page/parse.ts';
import { canonical } from '../lib/core/differ/frontmatter.ts';

/** The name of the key in a conflict's `conflicting` (docs/api.md "Pages", the push route's "Section merge"). */
export const UPDATED_CONFLICT = 'frontmatter.updated';

/** Whether a conflict names nothing but `frontmatter.updated`. */
export const onlyUpdatedConflicts = (conflicting: readonly string[] | undefined): boolean =>
  conflicting !== undefined && conflicting.length === 1 && conflicting[0] === UPDATED_CONFLICT;

/** A date or a date and time as YAML frontmatter writes them (`2026-05-17`, `2026-05-17T10:00:00.123Z`). */
const TIMESTAMP = /^\d{4}-\d\d-\d\d(?:[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:[Zz]|[+-]\d\d(?::?\d\d)?)?)?$/;
const isTimestamp = (v: unknown): v is string => typeof v === 'string' && TIMESTAMP.test(v) && !Number.isNaN(Date.parse(v));

const bare = (line: string): string => line.replace(/^\uFEFF/, '').replace(/\r$/, '');
const isFence = (line: string): boolean => /^---[ \t]*$/.test(bare(line));

/** The frontmatter's one top-level `updated:` line (index into `lines`), or null when there is not exactly one. */
function updatedLine(lines: string[]): number | null {
  if (lines.length === 0 || !isFence(lines[0]!)) return null;
  let found: number | null = null;
  for (let i = 1; i < lines.length; i++) {
    if (isFence(lines[i]!)) return found;
    if (/^updated[ \t]*:/.test(bare(lines[i]!))) {
      if (found !== null) return null;
      found = i;
    }
  }
  return null;
}

/**
 * `ours` with its frontmatter `updated` line replaced by the one of `theirs` (the same bytes), when both are
 * timestamps and nothing else of ours changes (checked by parsing the result); null otherwise.
 */
export function takeTheirUpdated(ours: string, theirs: string): { text: string; ours: string; theirs: string } | null {
  const po = parsePage(ours);
  const pt = parsePage(theirs);
  if (po.frontmatter === null || pt.frontmatter === null) return null;
  const mine = po.frontmatter.updated;
  const other = pt.frontmatter.updated;
  if (!isTimestamp(mine) || !isTimestamp(other)) return null;
  const ourLines = ours.split('\n');
  const theirLines = theirs.split('\n');
  const at = updatedLine(ourLines);
  const from = updatedLine(theirLines);
  if (at === null || from === null) return null;
  ourLines[at] = bare(theirLines[from]!) + (ourLines[at]!.endsWith('\r') ? '\r' : '');
  const text = ourLines.join('\n');
  const check = parsePage(text).frontmatter;
  if (check === null || canonical(check.updated) !== canonical(other)) return null;
  const keys = new Set([...Object.keys(check), ...Object.keys(po.frontmatter)]);
  for (const k of keys) if (k !== 'updated' && canonical(check[k]) !== canonical(po.frontmatter[k])) return null;
  if (parsePage(text).sections.length !== po.sections.length) return null;
  return { text, ours: mine, theirs: other };
}
