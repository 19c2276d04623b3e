import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { bearerToken } from '../../lib/auth/resolve.ts';
import { streamGrant } from '../../lib/usecases/webhooks.ts';
import { EventsQuery, MemberEventData, PushEventData, StreamNotice } from '../../schema/wire/events.ts';
import { R } from '../../lib/core/refusals.ts';

/**
 * GET /v1/repos/:id/events — the repository's live events as Server-Sent Events, resumable with
 * `Last-Event-ID` (or `?after=`), ended with `event: revoked` when the caller loses access.
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/events',
  doc: {
    operationId: 'streamEvents',
    summary: 'Live events of a repository (Server-Sent Events)',
    description:
      'One event per change of the repository, as it happens: `event: push` (a commit: `PushEventData`) and `event: member` (`MemberEventData`), each with an `id:` (the repository\'s own sequence: increasing within the repository, saying nothing about other repositories) and its `data:` on one line of JSON. A `: ping` comment comes at least every 15 s. `Last-Event-ID: <id>` (or `?after=<id>`) first replays the retained events after that id (at least the repository\'s last 1,000) in order, then goes live; an id not retained starts the stream with `event: reset` (`{"reason": "unknown event id"}`): pull everything. Without either, the stream carries what happens from the moment it opened. The stream ends after `event: revoked` (`{"reason"}`) when the caller may no longer read the repository: at once when removed from it, when its token is revoked (directly or with the token it was minted with) or the repository deleted; within 2 s for a user disabled; by the next ping for an expired token. A reader that falls more than 512 KiB behind is cut at once (`event: reset` when it can still be sent). A closed stream frees its place at once. Pulls are not events.',
    tag: 'Live',
    access:
      'members; the legacy key on any repository. At most 10 open streams per identity per repository and 50 per identity in all; at most SERVICE_EVENTS_MAX_STREAMS (default 5,000) on the server (hosted build: per repository).',
    query: EventsQuery,
    responses: {
      200: {
        description: 'The event stream (it stays open). `x-events` gives the `data` of each event name.',
        contentType: 'text/event-stream',
        events: { push: PushEventData, member: MemberEventData, reset: StreamNotice, revoked: StreamNotice },
      },
    },
    errors: [R.too_many_streams, R.server_busy, R.server_stopping],
  },
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'events.read');
    // An empty value is no id (a browser's EventSource sends the header only once it has an id).
    const given = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v);
    const after = given(c.req.header('last-event-id')) ?? given(c.req.query('after')) ?? null;
    const grant = streamGrant(identity, bearerToken(c.req.header('authorization')));
    const body = await c.get('deps').live.stream(id, grant, after, { onCut: c.get('cutConnection') });
    // Proxies that buffer responses (nginx) are asked not to: events must go out as they happen.
    return c.body(body, 200, { 'Content-Type': 'text/event-stream', 'X-Accel-Buffering': 'no' });
  },
});
