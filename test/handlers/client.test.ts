import { afterEach, describe, expect, it } from 'vitest';
import { mkdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import clientTgz from '../../functions/client/tgz.ts';
import clientMjs from '../../functions/client/mjs.ts';
import { diskClientFiles } from '../../lib/runtime/node/client-files.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NOT_BUILT = 'client package not built on this server (npm run build:client)';

/**
 * Both routes, their files read from a folder of the data root (as the Node build reads dist/client/), which
 * holds `files`; the checkout's own dist/client/ is never looked at.
 */
async function mount(files: Record<string, Uint8Array | string>): Promise<MountedHandler> {
  const m = await mountHandler([clientTgz, clientMjs]);
  const dir = join(m.dataRoot, 'client');
  await mkdir(dir);
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(dir, name), bytes);
  m.deps.clientFiles = diskClientFiles(dir);
  return m;
}

describe('GET /client/kr.tgz and /client/kr.mjs (functions/client/tgz.ts, mjs.ts)', () => {
  it('200 with the bytes, their length and type, to anyone: no credential, or a wrong one', async () => {
    const tgz = randomBytes(70_000);
    const mjs = '#!/usr/bin/env node\nconsole.log("kr");\n';
    h = await mount({ 'kr.tgz': tgz, 'kr.mjs': mjs });
    for (const token of [undefined, 'garbage-token']) {
      const a = await h.request('/client/kr.tgz', { token });
      expect([a.status, a.headers.get('content-type'), a.headers.get('content-length'), a.headers.get('cache-control')]).toEqual([
        200,
        'application/gzip',
        String(tgz.byteLength),
        'no-cache',
      ]);
      expect(Buffer.from(await a.arrayBuffer()).equals(tgz)).toBe(true);
      const b = await h.request('/client/kr.mjs', { token });
      expect([b.status, b.headers.get('content-type'), b.headers.get('content-length'), await b.text()]).toEqual([
        200,
        'text/javascript; charset=utf-8',
        String(Buffer.byteLength(mjs)),
        mjs,
      ]);
    }
  });

  it('a rebuilt file is served from the next request on', async () => {
    h = await mount({ 'kr.mjs': 'one\n' });
    expect(await (await h.request('/client/kr.mjs')).text()).toBe('one\n');
    await writeFile(join(h.dataRoot, 'client', 'kr.mjs'), 'two, longer\n');
    expect(await (await h.request('/client/kr.mjs')).text()).toBe('two, longer\n');
  });

  it('404 with how to build it when the server has none (each file on its own)', async () => {
    h = await mount({ 'kr.mjs': 'x\n' });
    const tgz = await h.request('/client/kr.tgz');
    expect([tgz.status, await tgz.json()]).toEqual([404, { error: NOT_BUILT, code: 'client_not_built' }]);
    expect((await h.request('/client/kr.mjs')).status).toBe(200);
    // A runtime that hands out no client package at all.
    h.deps.clientFiles = undefined;
    for (const path of ['/client/kr.tgz', '/client/kr.mjs']) {
      const res = await h.request(path);
      expect([res.status, await res.json()]).toEqual([404, { error: NOT_BUILT, code: 'client_not_built' }]);
    }
  });
});
