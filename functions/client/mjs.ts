import { defineRoute } from '../../lib/framework/route.ts';
import { CLIENT_FILE_TYPES, clientFileResponse } from '../../lib/usecases/client-package.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /client/kr.mjs — the kr client as one file (lib/usecases/client-package.ts). Anyone; no credential. */
export default defineRoute({
  method: 'GET',
  path: '/client/kr.mjs',
  public: true,
  doc: {
    operationId: 'clientScript',
    summary: 'The kr client as one file',
    description: 'The same client as one ES module file: `node kr.mjs <command>`.',
    tag: 'Service',
    access: 'anyone; no credential.',
    responses: { 200: { description: 'The file.', contentType: 'text/javascript; charset=utf-8' } },
    errors: [R.client_not_built],
  },
  handler: async (c) => {
    const file = await clientFileResponse(c.get('deps').clientFiles, 'kr.mjs');
    return c.body(file.body, 200, {
      'Content-Type': CLIENT_FILE_TYPES['kr.mjs'],
      'Content-Length': String(file.size),
      // A new server version hands out a new client at the same URL.
      'Cache-Control': 'no-cache',
    });
  },
});
