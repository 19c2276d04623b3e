/**
 * The image builds from what the Dockerfile copies: every file the server's and the admin command's bundles
 * import (server.ts and admin/main.ts, followed through their relative imports) lies under a path a COPY
 * line brings in. Docker cannot run here, so this reads the Dockerfile as the build would.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

function importedFiles(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !existsSync(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // Static imports and exports (type-only ones are erased by the bundler), and import() of a literal.
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\s)[^'";]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/gm)) {
      visit(resolve(dirname(file), (m[1] ?? m[2])!));
    }
  };
  visit(join(ROOT, entry));
  return seen;
}

describe('Dockerfile', () => {
  it('copies every file the server and the admin command import', () => {
    const copied = [...readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^COPY\s+(.+)\s+\S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    const missing = [...importedFiles('server.ts'), ...importedFiles('admin/main.ts')]
      .map((f) => relative(ROOT, f))
      .filter((f) => !copied.some((c) => f === c || f.startsWith(`${c.replace(/\/$/, '')}/`)));
    expect([...new Set(missing)]).toEqual([]);
  });
});
