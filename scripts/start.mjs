/**
 * `npm start`: builds the bundle when it is stale (scripts/bundle.mjs), and the client package the server hands
 * out (scripts/client-package.mjs), then runs dist/server.mjs in this same process — one node start instead of
 * two. A fresh bundle costs a few hundred stat calls here.
 */
import { pathToFileURL } from 'node:url';
import { SERVER_BUNDLE, buildIfStale } from './bundle.mjs';
import { buildClientIfStale } from './client-package.mjs';

const built = (bundle, reason) => {
  if (reason) process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', event: 'build', bundle, reason })}\n`);
};
const [server, client] = await Promise.all([buildIfStale(), buildClientIfStale()]);
built('dist/server.mjs', server);
built('dist/client/', client);
await import(pathToFileURL(SERVER_BUNDLE).href);
