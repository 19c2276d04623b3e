import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { importCases, IMPORT_ENV, makeHistory, WIKI_STEPS, git } from './import-cases.ts';
import { startTarget, type Target } from './helpers/targets.ts';
import { fsck, tempDir } from './helpers/env.ts';
import { readFileSync } from 'node:fs';

/**
 * Imports of git bundles against the hosted build in workerd (test/import-cases.ts): the body handed to the
 * repository's Durable Object a chunk at a time, checked there, its objects kept as rows of the object's
 * storage. Then a history moved between the builds: a Node export into the Workers build and back, the same
 * head sha all the way.
 */
importCases('workers');

describe('moving between builds', () => {
  let node: Target;
  let workers: Target;
  let work: { path: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    work = await tempDir('kr-move-');
    [node, workers] = await Promise.all([startTarget('node', IMPORT_ENV), startTarget('workers', IMPORT_ENV)]);
  });
  afterAll(async () => {
    await node?.stop();
    await workers?.stop();
    await work?.cleanup();
  });

  const importInto = async (t: Target, repo: string, bundle: Uint8Array) => {
    const r = await t.api(`/v1/repos/${repo}/import`, { method: 'POST', body: bundle as Uint8Array<ArrayBuffer>, headers: { 'content-type': 'application/x-git-bundle' } });
    return { status: r.status, body: await r.json() };
  };
  const exportOf = async (t: Target, repo: string) => new Uint8Array(await (await t.api(`/v1/repos/${repo}/export`)).arrayBuffer());
  const timeline = async (t: Target, repo: string) => (await (await t.api(`/v1/repos/${repo}/timeline?limit=1000`)).json()).commits;

  it('a Node export imports into the Workers build, and its export back into Node, with the same head sha', async () => {
    const src = join(work.path, 'src');
    const head = makeHistory(src, WIKI_STEPS);
    git(src, ['bundle', 'create', '-q', join(work.path, 'wiki.bundle'), 'main']);
    expect(await importInto(node, 'kb', new Uint8Array(readFileSync(join(work.path, 'wiki.bundle'))))).toEqual({
      status: 201,
      body: { id: 'kb', head, commits: 5, pages: 3 },
    });
    // Pushed on the Node build after the import: the export carries that commit too.
    expect((await node.api('/v1/repos/kb/sync/push', { method: 'POST', json: { files: [{ path: 'wiki/more.md', content: 'more\n' }], author_name: 'N', author_email: 'n@example.test' } })).status).toBe(200);
    const nodeTimeline = await timeline(node, 'kb');
    const nodeHead = nodeTimeline[0].sha as string;
    expect(await importInto(workers, 'kb', await exportOf(node, 'kb'))).toEqual({ status: 201, body: { id: 'kb', head: nodeHead, commits: 6, pages: 4 } });
    expect(await timeline(workers, 'kb')).toEqual(nodeTimeline);
    expect(await importInto(node, 'kb-back', await exportOf(workers, 'kb'))).toEqual({ status: 201, body: { id: 'kb-back', head: nodeHead, commits: 6, pages: 4 } });
    expect(await timeline(node, 'kb-back')).toEqual(nodeTimeline);
    fsck(join(node.dataRoot!, 'repos', 'kb-back.git'));
  });
});
