import { defineRoute } from '../../lib/route.ts';
import { parseBody } from '../../lib/http/parse.ts';
import { repoIdParam } from '../../lib/http/params.ts';
import { precheckPush, repoForPush } from '../../lib/repos.ts';
import { push, validatePush } from '../../lib/sync.ts';
import { PushRequest } from '../../schema/wire/sync.ts';

/**
 * POST /v1/repos/:id/sync/push — every accepted file in one commit; per-file conflicts → 409. A missing
 * repository is created (its pusher, if a real user, becomes owner) — but only once the whole body
 * has been validated, so a refused push leaves nothing behind.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/sync/push',
  body: 'push',
  handler: async (c) => {
    const deps = c.get('deps');
    const id = repoIdParam(c);
    await precheckPush(c, id);
    const body = await parseBody(c, PushRequest);
    const files = validatePush(body);
    const { identity } = await repoForPush(c, id);
    const res = await push(deps, identity, id, body, files, { requestId: c.get('requestId') });
    return c.json(res.body, res.status);
  },
});
