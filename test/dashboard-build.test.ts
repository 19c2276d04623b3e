/**
 * `npm run dashboard` reuses its build while its sources are unchanged (scripts/dashboard.ts,
 * buildDashboardIfStale): a real Vite build into a temp folder, then no build while nothing changed, then a
 * build again once a source file it was built from is modified (its mtime moved forward, content unchanged).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './helpers/env.ts';
import { DASHBOARD_DIR, buildDashboardIfStale, dashboardStaleReason } from '../scripts/dashboard.ts';

let dir: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir('kr-dashboard-reuse-');
});

afterAll(async () => {
  await dir?.cleanup();
});

describe('npm run dashboard: the build is reused while its sources are unchanged', () => {
  it('builds once, then not while nothing changed, then again after a source changed', async () => {
    const out = join(dir.path, 'dist');
    expect(await buildDashboardIfStale(out)).toBe('no build record');
    const built = (await stat(join(out, 'index.html'))).mtimeMs;
    expect(await dashboardStaleReason(out)).toBeNull();
    expect(await buildDashboardIfStale(out)).toBeNull();
    expect((await stat(join(out, 'index.html'))).mtimeMs).toBe(built);

    const source = join(DASHBOARD_DIR, 'src', 'webhooks.tsx');
    const now = new Date();
    await utimes(source, now, now);
    expect(await dashboardStaleReason(out)).toBe('dashboard/src/webhooks.tsx changed');
    expect(await buildDashboardIfStale(out)).toBe('dashboard/src/webhooks.tsx changed');
    expect(await dashboardStaleReason(out)).toBeNull();
  }, 180_000);
});
