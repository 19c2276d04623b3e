/**
 * Query parameters of the read routes, for the API's reference (lib/framework/openapi.ts turns each key into a
 * parameter). The handlers read them leniently (lib/framework/http/params.ts): a `limit` that is not a positive
 * integer means the default, one above the maximum means the maximum; a flag is on for `true`, `1` or `yes`.
 */
import * as z from 'zod';

const limit = (fallback: number, max: number, what: string) =>
  z
    .number()
    .int()
    .min(1)
    .default(fallback)
    .describe(`How many ${what} at most: default ${fallback}, capped at ${max}; anything but a positive integer means ${fallback}.`);

const sha = (what: string) =>
  z
    .string()
    .regex(/^[0-9A-Fa-f]{1,40}$/)
    .describe(`${what}: a commit sha, full or a unique abbreviation (1-40 hex characters).`);

const blame = z
  .boolean()
  .default(false)
  .describe('`true` (or `1`, `yes`) annotates each section with the commit that introduced its heading (`introduced_by`).');

/** `GET /v1/repos/:id/timeline`. */
export const TimelineQuery = z.object({ limit: limit(50, 1000, 'commits') });
/** `GET /v1/repos/:id/history/<path>`. */
export const HistoryQuery = z.object({ limit: limit(50, 1000, 'commits') });

/** `GET /v1/repos/:id/pages/<path>`. */
export const PageQuery = z.object({
  at: sha('The page as it was at this commit (its last change at or before it); absent or empty: at head').optional(),
});

/** `GET /v1/repos/:id/sync/pull`. */
export const PullQuery = z.object({
  since: sha('Answer only what changed and was deleted after this commit; absent or empty: every page at head').optional(),
});

/** `GET /v1/repos/:id/diff/<path>`. */
export const DiffQuery = z.object({
  from: sha('The older side; default: the commit touching the page before `to`').optional(),
  to: sha('The newer side; default: the last commit touching the page').optional(),
  blame,
});

/** `GET /v1/repos/:id/evolution/<path>`. */
export const EvolutionQuery = z.object({ limit: limit(20, 200, 'entries'), blame });

/** `GET /v1/repos/:id/activity`. */
export const ActivityQuery = z.object({
  limit: limit(50, 500, 'events'),
  offset: z.number().int().min(0).default(0).describe('Events to skip, newest first; anything but a non-negative integer means 0.'),
  actions: z
    .string()
    .regex(/^(push|pull|import|member)(,(push|pull|import|member))*$/)
    .optional()
    .describe(
      'Only events of these actions, comma-separated (`push`, `pull`, `import`, `member`; e.g. `push,member,import` leaves pulls out); `total` then counts only those. Absent: `push`, `pull` and `import` (membership changes only when `member` is named). Another value: 400 `invalid actions: <value>`.',
    ),
});
