import type { Context } from 'hono';
import { storedPathProblem, stripRepoId } from '../../core/page/path.ts';
import { refuse } from '../../core/errors.ts';
import { R } from '../../core/refusals.ts';
import type { AppEnv } from '../route.ts';

/** The longest raw id a log line carries: the rest of a long one is cut (the id used is at most 64). */
const LOGGED_RAW_ID = 200;

/**
 * The `:id` of a repo-scoped route, stripped to `[A-Za-z0-9_-]` (400 `invalid repo id` if unusable).
 * The contract strips here (docs/concepts.md "Repositories"), so `team;x` is the repository `teamx`; since that is rarely what
 * the caller meant, every stripped id is logged (`repo_id_stripped`: the raw and stripped forms, and the
 * request id).
 */
export function repoIdParam(c: Context<AppEnv>, raw: string = c.req.param('id') ?? ''): string {
  const id = stripRepoId(raw);
  if (id === null) throw refuse(R.invalid_repo_id);
  if (id !== raw) {
    c.get('deps').log.warn('repo_id_stripped', {
      id: c.get('requestId'),
      raw: raw.length > LOGGED_RAW_ID ? `${raw.slice(0, LOGGED_RAW_ID)}…` : raw,
      stripped: id,
    });
  }
  return id;
}

/** The `:id` of a git route: `<id>.git` or `<id>`, then as repoIdParam. */
export function gitRepoIdParam(c: Context<AppEnv>): string {
  const raw = c.req.param('id') ?? '';
  return repoIdParam(c, raw.endsWith('.git') ? raw.slice(0, -4) : raw);
}

/**
 * The page path captured by `:path{.+}` of a read route, validated with the stored-path rules (a page kept
 * from before the stricter write rules stays readable); 400 `invalid page path: <path>`.
 */
export function pagePathParam(c: Context): string {
  const path = c.req.param('path') ?? '';
  if (storedPathProblem(path) !== null) throw refuse(R.invalid_page_path, path);
  return path;
}

/** A positive-integer query parameter: absent or not a positive integer → `fallback`; above `max` → `max`. */
export function limitQuery(c: Context, name: string, fallback: number, max: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || !/^[0-9]+$/.test(raw.trim())) return fallback;
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n <= 0) return fallback;
  return Math.min(n, max);
}

/** A non-negative integer query parameter (offsets); anything else → 0. */
export function offsetQuery(c: Context, name: string): number {
  const raw = c.req.query(name);
  if (raw === undefined || !/^[0-9]+$/.test(raw.trim())) return 0;
  const n = Number(raw.trim());
  return Number.isSafeInteger(n) ? n : 0;
}

/** `true`/`1`/`yes` (any case) → true. */
export function flagQuery(c: Context, name: string): boolean {
  const raw = c.req.query(name)?.trim().toLowerCase();
  return raw === 'true' || raw === '1' || raw === 'yes';
}
