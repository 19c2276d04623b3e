import { pathToFileURL } from 'node:url';
import { routesFor } from './functions/index.ts';
import { main as nodeMain, type CodeCache } from './lib/runtime/node/main.ts';

// The export threads run this bundle too, and start here (lib/runtime/node/export-threads.ts).
export { exportThread } from './lib/runtime/node/export-thread.ts';

/**
 * Node entry: the Node server (lib/runtime/node/main.ts) with the service's routes (functions/index.ts), handed
 * in here so that lib/ never imports functions/. Run from the sources (`node --import tsx server.ts`), it starts
 * at once; `npm start` runs the same `main` from the bundle built from this file (dist/server.mjs, by
 * scripts/bundle.mjs), whose loader calls it.
 */
export function main(opts: { codeCache?: CodeCache } = {}): Promise<void> {
  return nodeMain(routesFor, opts);
}

// Started directly, not imported (the bundle's loader imports it and calls `main` itself). No top-level await:
// the bundle is CommonJS. A failure to start is reported and ends the process, as an uncaught error would.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
