import { main } from './lib/runtime/node/main.ts';

/**
 * Node entry, for running the sources directly (`node --import tsx server.ts`). `npm start` runs the same
 * `main` from the bundle (dist/server.mjs, built from lib/runtime/node/main.ts by scripts/bundle.mjs).
 */
await main();
