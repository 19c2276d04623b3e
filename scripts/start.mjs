/**
 * `npm start`: builds the bundle when it is stale (scripts/bundle.mjs), then runs dist/server.mjs in this same
 * process — one node start instead of two. A fresh bundle costs a few hundred stat calls here.
 */
import { pathToFileURL } from 'node:url';
import { SERVER_BUNDLE, buildIfStale } from './bundle.mjs';

const reason = await buildIfStale();
if (reason) process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', event: 'build', bundle: 'dist/server.mjs', reason })}\n`);
await import(pathToFileURL(SERVER_BUNDLE).href);
