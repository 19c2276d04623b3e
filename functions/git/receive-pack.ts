import { defineRoute } from '../../lib/framework/route.ts';
import { refusePush } from '../../lib/usecases/git-http.ts';

/** POST /v1/repos/:id/git-receive-pack — `git push` is refused: pages are written with `kr push` or the push route. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/git-receive-pack',
  auth: 'git',
  body: 'none',
  doc: {
    operationId: 'gitReceivePack',
    summary: 'git push: refused',
    description: 'Repositories are read-only to git: the answer is a text/plain message git shows.',
    tag: 'Git',
    access: 'members (the refusal); the legacy key on any repository.',
    params: { id: 'The repository id, optionally followed by `.git`.' },
    responses: {
      403: { description: '`kr repositories are written with "kr push" or POST /v1/repos/<id>/sync/push`.', contentType: 'text/plain' },
    },
    
  },
  handler: refusePush,
});
