/**
 * A full pull is fixed at the head when it began (RepoStore.pullPages, PathIndex.pullBatch): while that is
 * still the head its batches come from git_head, and once a push moves the branch mid-pull the batches
 * still to come are read as of the first head from git_changes — changed, deleted and added pages included.
 * Real libSQL file and bare repository.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { GitStore } from '../lib/git/store.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore, type PulledPage } from '../lib/repo/repo-store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { ManualClock } from '../lib/util/clock.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { tempDir } from './helpers/env.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const ann = { name: 'Ann Author', email: 'ann@example.test' };
const name = (i: number) => `p/${String(i).padStart(3, '0')}.md`;

let dir: { path: string; cleanup: () => Promise<void> };
let db: Database;
let repos: RepoStore;
beforeEach(async () => {
  dir = await tempDir('kr-pull-snapshot-');
  db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
  const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
  repos = new RepoStore(store, new PathIndex(db, { search: false }), new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0)));
  await repos.create('r');
});
afterEach(async () => {
  await db.close();
  await dir.cleanup();
});

const shape = (pages: PulledPage[]) => pages.map((p) => `${p.entry.path} ${dec(p.content)} ${p.entry.commit.sha}`);

describe('a full pull as of the head when it began', () => {
  it('a push landing between its batches changes nothing in it: not a changed, deleted, added or earlier page', async () => {
    const first = await repos.commitFiles('r', Array.from({ length: 300 }, (_, i) => ({ path: name(i), content: enc(`page ${i}, first\n`) })), ann, 'seed');
    const second = await repos.commitFiles('r', [{ path: name(250), content: enc('page 250, second\n') }], ann, 'one more');
    const expected = Array.from({ length: 300 }, (_, i) => `${name(i)} page ${i}, ${i === 250 ? 'second' : 'first'}\n ${i === 250 ? second.commit!.sha : first.commit!.sha}`);

    // Undisturbed: the whole head, in path order.
    const calm = await repos.pullPages('r');
    const calmPages = [...calm.first];
    for await (const b of calm.rest()) calmPages.push(...b);
    expect(shape(calmPages)).toEqual(expected);

    // Disturbed: after the first batch, a push changes a page not yet read and one already read, deletes
    // one not yet read and adds one at the end.
    const pull = await repos.pullPages('r');
    expect(pull.head!.sha).toBe(second.commit!.sha);
    expect(pull.first.length).toBeGreaterThan(0);
    expect(pull.first.length).toBeLessThan(100);
    const third = await repos.commitFiles(
      'r',
      [
        { path: name(200), content: enc('page 200, third\n') },
        { path: name(1), content: enc('page 1, third\n') },
        { path: name(260), content: null },
        { path: 'z/new.md', content: enc('new\n') },
      ],
      ann,
      'meanwhile',
    );
    expect(third.commit).not.toBeNull();
    const pages = [...pull.first];
    for await (const b of pull.rest()) pages.push(...b);
    expect(shape(pages)).toEqual(expected);
    const deleted: string[] = [];
    for await (const d of pull.deleted()) deleted.push(...d);
    expect(deleted).toEqual([]);

    // A pull begun now sees the third commit.
    const now = await repos.pullPages('r');
    const nowPages = [...now.first];
    for await (const b of now.rest()) nowPages.push(...b);
    expect(nowPages.map((p) => p.entry.path)).toEqual([...expected.map((e) => e.split(' ')[0]!).filter((p) => p !== name(260)), 'z/new.md']);
    expect(dec(nowPages.find((p) => p.entry.path === name(200))!.content)).toBe('page 200, third\n');
  });
});
