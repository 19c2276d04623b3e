import { defineRoute } from '../lib/framework/route.ts';
import { authorize } from '../lib/usecases/policy.ts';
import { MAX_FILES_PER_PUSH } from '../lib/usecases/sync.ts';
import { MAX_PATH_BYTES } from '../lib/core/page/path.ts';
import { LimitsResponse } from '../schema/wire/limits.ts';

/** GET /v1/limits — what a client needs to size its pushes. Any credential. */
export default defineRoute({
  method: 'GET',
  path: '/v1/limits',
  doc: {
    operationId: 'getLimits',
    summary: "The server's limits a client sizes its pushes by",
    tag: 'Service',
    access: 'any credential, the legacy key included.',
    responses: { 200: { description: 'The push body cap, the files one push may hold and the longest page path.', schema: LimitsResponse } },
  },
  handler: (c) => {
    authorize(c, 'limits.read');
    const res: LimitsResponse = {
      max_body_bytes: c.get('deps').config.maxBodyBytes,
      max_files_per_push: MAX_FILES_PER_PUSH,
      max_page_path_bytes: MAX_PATH_BYTES,
    };
    return c.json(res);
  },
});
