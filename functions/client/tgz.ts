import { defineRoute } from '../../lib/framework/route.ts';
import { CLIENT_FILE_TYPES, clientFileResponse } from '../../lib/usecases/client-package.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /client/kr.tgz — the kr client as an npm package (lib/usecases/client-package.ts). Anyone; no credential. */
export default defineRoute({
  method: 'GET',
  path: '/client/kr.tgz',
  public: true,
  doc: {
    operationId: 'clientPackage',
    summary: 'The kr client as an npm package',
    description:
      "An npm package of `kr` at this server's version, every dependency bundled (no dependencies, at most 4 MiB): `npm install -g <server>/client/kr.tgz` installs it without the server's checkout and without a registry.",
    tag: 'Service',
    access: 'anyone; no credential.',
    responses: { 200: { description: 'The file.', contentType: 'application/gzip' } },
    errors: [R.client_not_built],
  },
  handler: async (c) => {
    const file = await clientFileResponse(c.get('deps').clientFiles, 'kr.tgz');
    return c.body(file.body, 200, {
      'Content-Type': CLIENT_FILE_TYPES['kr.tgz'],
      'Content-Length': String(file.size),
      // A new server version hands out a new client at the same URL.
      'Cache-Control': 'no-cache',
    });
  },
});
