/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI 3.1 document of every route of both builds (the
 * hosted build's marked `x-hosted-only`). `npm run openapi -- --check` only compares, and exits 1 when the
 * file is not what the code generates now; test/openapi.test.ts makes the same check, so CI fails on a
 * stale document.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../lib/openapi.ts';
import { hostedRoutes, routes } from '../functions/index.ts';

export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

/** docs/openapi.json's content as the code stands. */
export function openApiFileText(): string {
  return `${JSON.stringify(buildOpenApi({ routes, hostedRoutes }), null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = openApiFileText();
  if (process.argv.includes('--check')) {
    const current = await readFile(OPENAPI_FILE, 'utf8').catch(() => '');
    if (current !== text) {
      console.error('docs/openapi.json is out of date: run npm run openapi');
      process.exit(1);
    }
    console.log('docs/openapi.json is current');
  } else {
    await writeFile(OPENAPI_FILE, text);
    console.log(`wrote docs/openapi.json (${text.length} bytes)`);
  }
}
