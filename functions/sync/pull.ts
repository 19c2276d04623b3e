import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { pull } from '../../lib/usecases/sync.ts';
import { logStreamEnd } from '../../lib/framework/http/stream.ts';
import { PullResponse } from '../../schema/wire/sync.ts';
import { PullQuery } from '../../schema/wire/query.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /v1/repos/:id/sync/pull?since=<sha> — every page, or what changed and was deleted since. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/sync/pull',
  doc: {
    operationId: 'pull',
    summary: 'Every page, or what changed and was deleted since a commit',
    description: 'Send `X-Service-Client: <name>` to name the client in the activity feed.',
    tag: 'Pages',
    access: 'members; the legacy key on any repository.',
    query: PullQuery,
    responses: { 200: { description: 'Contents as UTF-8 text. An empty repository: `new_head` is `""` and both lists are empty.', schema: PullResponse } },
    errors: [R.unknown_sha.example('<since>')],
  },
  handler: async (c) => {
    const { id, identity, repo } = await openRepo(c, 'repo.read');
    const since = c.req.query('since');
    const requestId = c.get('requestId');
    // Sent as it is made, a batch of pages at a time (lib/usecases/pull-body.ts): a full pull never holds its whole
    // answer, and stops when the client goes away.
    const body = await pull(
      c.get('deps'),
      identity,
      repo,
      since === undefined || since === '' ? undefined : since,
      c.req.header('x-service-client'),
      { requestId, onEnd: logStreamEnd(c.get('deps').log, { id: requestId, repo: id, what: 'pull' }) },
    );
    return c.body(body, 200, { 'content-type': 'application/json' });
  },
});
