/**
 * Live events (docs/api.md "Live events"): the `data` of each Server-Sent Event of `GET /v1/repos/:id/events`,
 * which webhooks deliver too (with `event` and `delivery_id` added). The stream itself is text; these
 * schemas document its JSON lines and are what clients parse them with.
 */
import * as z from 'zod';

/** What a push did to one path. */
export const PathStatus = z.enum(['added', 'modified', 'deleted']);
export type PathStatus = z.infer<typeof PathStatus>;

/** Paths listed in a push event; the rest are counted in `more`. */
export const PUSH_EVENT_PATHS = 200;

/**
 * `event: push` — one commit of the repository. `time` is RFC 3339 UTC, whole seconds; `paths` the paths the
 * commit changed in push order, at most 200, with `more` counting the rest; `merged` the paths a section merge
 * wrote (push `"merge": "sections"`). `author`, `email` and `message` are cut at 1,000 characters.
 */
export const PushEventData = z.object({
  repo_id: z.string(),
  sha: z.string(),
  author: z.string(),
  email: z.string(),
  time: z.string(),
  message: z.string(),
  paths: z.array(z.object({ path: z.string(), status: PathStatus })),
  more: z.number().int().optional(),
  merged: z.array(z.string()).optional(),
});
export type PushEventData = z.infer<typeof PushEventData>;

/** How membership changed: `role` is the role held afterwards (absent for a removal). */
export const MemberChange = z.enum(['joined', 'removed', 'role']);
export type MemberChange = z.infer<typeof MemberChange>;

/** `event: member` — someone joined, was removed, or changed role. */
export const MemberEventData = z.object({
  repo_id: z.string(),
  user_id: z.string(),
  email: z.string(),
  change: MemberChange,
  role: z.enum(['owner', 'member']).optional(),
});
export type MemberEventData = z.infer<typeof MemberEventData>;

/** `event: reset` (the first event, when the id to resume after is not retained) and `event: revoked` (the last). */
export const StreamNotice = z.object({ reason: z.string() });
export type StreamNotice = z.infer<typeof StreamNotice>;

/** The kinds of event a repository has (and a webhook may ask for). */
export const EventKind = z.enum(['push', 'member']);
export type EventKind = z.infer<typeof EventKind>;

/** `GET /v1/repos/:id/events`. */
export const EventsQuery = z.object({
  after: z
    .string()
    .optional()
    .describe('Resume after this event id (as `Last-Event-ID` does; the header wins when both are given).'),
});
