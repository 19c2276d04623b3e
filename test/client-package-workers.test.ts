/**
 * The client package on the Workers build (docs/api.md "Service", the `/client/kr.tgz` route): workerd under Miniflare, with
 * dist/client/ behind the Worker's ASSETS binding as wrangler.toml's `[assets]` configures it (the Worker first,
 * the files through the binding; scripts/dev-worker.ts answers the binding from the folder). The same two files as the Node build serves, with the same
 * headers; without assets, the same 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startTarget, type Target } from './helpers/targets.ts';
import { tempDir } from './helpers/env.ts';
import { buildWorker } from '../scripts/build-worker.ts';
import { startWorkerDev } from '../scripts/dev-worker.ts';
import { CLIENT_NOT_BUILT } from '../lib/usecases/client-package.ts';
import { buildClientIfStale, CLIENT_DIR } from '../scripts/client-package.mjs';

let target: Target;

beforeAll(async () => {
  await buildClientIfStale();
  target = await startTarget('workers');
}, 120_000);

afterAll(async () => {
  await target?.stop();
});

describe('GET /client/kr.tgz and /client/kr.mjs (Workers build)', () => {
  it('serve the files of dist/client/ through the Worker, as the Node build does', async () => {
    for (const [name, type] of [
      ['kr.tgz', 'application/gzip'],
      ['kr.mjs', 'text/javascript; charset=utf-8'],
    ] as const) {
      const res = await target.api(`/client/${name}`, { token: null });
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      // The Worker answered (the static assets alone set neither).
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(bytes.equals(await readFile(join(CLIENT_DIR, name))), name).toBe(true);
    }
  });

  it('leave every connection whole: bodies the Worker refuses unread are answered, never reset', async () => {
    // Miniflare's assets router in front of the Worker reset about one such connection in sixteen.
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${target.url}/v1/pats`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-legacy-key', 'content-type': 'application/json' },
        body: JSON.stringify({ label: 'x'.repeat(i % 50) }),
      });
      statuses.push(res.status);
      expect(await res.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    }
    expect(statuses).toEqual(Array(200).fill(403));
  });

  it('answer 404 with the same error where the Worker has no assets', async () => {
    const dir = await tempDir('kr-workers-noassets-');
    const dev = await startWorkerDev({
      output: () => {},
      bundle: await buildWorker(join(tmpdir(), `kr-worker-noassets-${process.pid}.mjs`)),
      assetsDir: join(dir.path, 'nothing-built'),
      env: { SERVICE_DATA_ROOT: dir.path, SERVICE_LISTEN_ADDR: '127.0.0.1:0', SERVICE_SESSION_SECRET: 'test-session-secret-0123456789-abcdef', SERVICE_API_KEY: 'k' },
    });
    try {
      const res = await fetch(`${dev.url}/client/kr.tgz`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: CLIENT_NOT_BUILT, code: 'client_not_built' });
    } finally {
      await dev.close();
      await dir.cleanup();
    }
  }, 120_000);
});
