import { z } from 'zod';
import { defineRoute } from '../../lib/framework/route.ts';
import { ADVERTISEMENT_TYPE, infoRefs } from '../../lib/usecases/git-http.ts';
import { R } from '../../lib/core/refusals.ts';

/**
 * GET /v1/repos/:id/info/refs?service=git-upload-pack — the first request of `git clone` and `git fetch`
 * (smart HTTP); `:id` may end in `.git`. `service=git-receive-pack` (`git push`) is refused.
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/info/refs',
  auth: 'git',
  doc: {
    operationId: 'gitInfoRefs',
    summary: 'git clone/fetch: the reference advertisement',
    description:
      'The repository as a git remote: `git clone {base}/v1/repos/<id>.git` (also without `.git`). Protocol v0/v1, or v2 with `Git-Protocol: version=2`. Credentials: HTTP Basic with any user name and a token as the password (what git sends from its prompt, `https://kr:<token>@host/…` or a credential helper), or Bearer; a 401 carries `WWW-Authenticate: Basic realm="kr"`. Read-only: `service=git-receive-pack` gets 403 with a text/plain message git shows.',
    tag: 'Git',
    access: 'members; the legacy key on any repository.',
    params: { id: 'The repository id, optionally followed by `.git`.' },
    query: z.object({ service: z.string().describe('`git-upload-pack` (`git-receive-pack` is refused).') }),
    responses: {
      200: { description: 'pkt-lines: v0/v1, the service line and the references (HEAD, a symref to `refs/heads/main`, and the branch) with the capabilities; v2, the capabilities.', contentType: ADVERTISEMENT_TYPE },
      403: { description: '`git push` (service=git-receive-pack) is refused: `kr repositories are written with "kr push" or POST /v1/repos/<id>/sync/push`.', contentType: 'text/plain' },
    },
    errors: [R.unsupported_service],
  },
  handler: infoRefs,
});
