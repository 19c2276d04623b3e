import { z } from 'zod';
import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { pagePathParam } from '../../lib/http/params.ts';
import { HttpError } from '../../lib/errors.ts';
import { pageAt } from '../../lib/differ/service.ts';
import { PageQuery } from '../../schema/wire/query.ts';

/** GET /v1/repos/:id/pages/<path>?at=<sha> — the page's bytes at head (or at a commit); X-Page-SHA = its last commit. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/pages/:path{.+}',
  doc: {
    operationId: 'readPage',
    summary: "One page's bytes at head",
    tag: 'Pages',
    access: 'members; the legacy key on any repository.',
    query: PageQuery,
    responses: {
      200: {
        description: 'The page exactly as stored.',
        contentType: 'text/markdown; charset=utf-8',
        schema: z.string(),
        headers: { 'X-Page-SHA': 'The last commit that touched the page (40 hex), at or before `at` when given.' },
      },
    },
    errors: {
      400: ['invalid repo id', 'invalid page path: <path>', 'unknown sha: <value>'],
      403: ['not a member of this repo'],
      404: ['repo not found', 'page not found'],
    },
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const at = c.req.query('at');
    if (at !== undefined && at !== '') {
      const old = await pageAt(repo, path, at);
      if (!old) throw new HttpError(404, 'page not found');
      return c.body(old.content as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'text/markdown; charset=utf-8', 'X-Page-SHA': old.sha });
    }
    const page = await repo.page(path);
    if (!page) throw new HttpError(404, 'page not found');
    return c.body(page.content as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': 'text/markdown; charset=utf-8',
      'X-Page-SHA': page.entry.commit.sha,
    });
  },
});
