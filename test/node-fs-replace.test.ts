/**
 * The Node StoreFs's rename over an existing file (every push's ref update): the replaced file keeps a
 * second name until the rename is durable, so that the rename does not free it on the event loop, and is
 * freed in the background after. What the store and git see stays the same.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { linkSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeStoreFs, type FsTraceEvent } from '../lib/runtime/node/store-fs.ts';
import { GitStore } from '../lib/git/store.ts';
import { fsck, gitIn, tempDir } from './helpers/env.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('kr-replace-');
});
afterEach(async () => {
  await dir.cleanup();
});

/** A refs/heads directory holding `main` (old) and `main.lock` (new). */
async function refs(): Promise<{ heads: string; main: string; lock: string; kept: string }> {
  const heads = join(dir.path, 'refs', 'heads');
  await mkdir(heads, { recursive: true });
  await writeFile(join(heads, 'main'), 'old\n');
  await writeFile(join(heads, 'main.lock'), 'new\n');
  return { heads, main: join(heads, 'main'), lock: join(heads, 'main.lock'), kept: join(heads, '.main.replaced') };
}

describe('renameDurable over an existing file (Node)', () => {
  it('the replaced file is still linked when the rename runs, and freed only after the directory flush', async () => {
    const { heads, main, lock, kept } = await refs();
    const events: FsTraceEvent[] = [];
    /** The replaced file's link count as the rename over it starts. */
    let linksAtRename = 0;
    const fs = nodeStoreFs({
      trace: (e) => {
        events.push(e);
        if (e.op === 'rename' && e.phase === 'start' && e.to === main) linksAtRename = statSync(main).nlink;
      },
    });
    await fs.renameDurable(lock, main);
    expect(dec(await fs.readFile(main))).toBe('new\n');
    expect(linksAtRename).toBe(2);
    const at = (op: FsTraceEvent['op'], phase: 'start' | 'end', path: string) =>
      events.findIndex((e) => e.op === op && e.phase === phase && e.path === path);
    await fs.idle!();
    expect(at('link', 'end', main)).toBeGreaterThan(-1);
    expect(events.find((e) => e.op === 'link')).toMatchObject({ path: main, to: kept });
    expect(at('link', 'end', main)).toBeLessThan(at('rename', 'start', lock));
    expect(at('fsyncDir', 'end', heads)).toBeLessThan(at('unlink', 'start', kept));
    expect(events.filter((e) => e.failed)).toEqual([]);
    expect(readdirSync(heads)).toEqual(['main']);
  });

  it('a second name a crash left behind is replaced, then freed', async () => {
    const { heads, main, lock, kept } = await refs();
    writeFileSync(kept, 'from before the crash\n');
    const fs = nodeStoreFs();
    await fs.renameDurable(lock, main);
    await fs.idle!();
    expect(readdirSync(heads)).toEqual(['main']);
    expect(dec(await fs.readFile(main))).toBe('new\n');
  });

  it('back to back, while the previous free may still run, every rename lands and nothing is left', async () => {
    const { heads, main } = await refs();
    const fs = nodeStoreFs();
    for (let i = 0; i < 20; i++) {
      await writeFile(join(heads, 'main.lock'), `v${i}\n`);
      await fs.renameDurable(join(heads, 'main.lock'), main);
      expect(dec(await fs.readFile(main))).toBe(`v${i}\n`);
    }
    await fs.idle!();
    expect(readdirSync(heads)).toEqual(['main']);
  });

  it('a rename to a new name, or of a directory, keeps nothing', async () => {
    const fs = nodeStoreFs();
    const events: FsTraceEvent[] = [];
    const traced = nodeStoreFs({ trace: (e) => events.push(e) });
    await writeFile(join(dir.path, 'a'), 'a');
    await traced.renameDurable(join(dir.path, 'a'), join(dir.path, 'b'));
    await mkdir(join(dir.path, 'd1', 'x'), { recursive: true });
    await fs.renameDurable(join(dir.path, 'd1'), join(dir.path, 'd2'));
    await traced.idle!();
    expect(events.filter((e) => e.op === 'link' && !e.failed && e.phase === 'end')).toEqual([]);
    expect(readdirSync(dir.path).sort()).toEqual(['b', 'd2']);
  });

  it('a file with other names is only renamed over: its other names keep it', async () => {
    const { heads, main, lock } = await refs();
    linkSync(main, join(dir.path, 'elsewhere'));
    const fs = nodeStoreFs();
    await fs.renameDurable(lock, main);
    await fs.idle!();
    expect(readdirSync(heads)).toEqual(['main']);
    expect(statSync(join(dir.path, 'elsewhere')).nlink).toBe(1);
  });
});

describe('through the git store', () => {
  it('pushes move the branch as before; git ignores a second name still there', async () => {
    const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
    await store.init('r');
    const gitdir = join(dir.path, 'repos', 'r.git');
    const author = { name: 'Ann', email: 'ann@example.test' };
    let parent: string | null = null;
    for (let i = 0; i < 5; i++) {
      const c = await store.commit('r', { parent, writes: [{ path: `p${i}.md`, content: enc(`page ${i}`) }], author, message: `c${i}`, time: 1 + i });
      parent = c!.meta.sha;
    }
    await store.packMerges();
    expect(readdirSync(join(gitdir, 'refs', 'heads'))).toEqual(['main']);
    expect(await store.head('r')).toBe(parent);
    // As a crash between the rename and the free would leave it.
    linkSync(join(gitdir, 'refs', 'heads', 'main'), join(gitdir, 'refs', 'heads', '.main.replaced'));
    expect(gitIn(gitdir, 'for-each-ref', '--format=%(refname) %(objectname)').trim()).toBe(`refs/heads/main ${parent}`);
    fsck(gitdir);
    expect(gitIn(gitdir, 'log', '--format=%s', 'main').trim().split('\n')).toEqual(['c4', 'c3', 'c2', 'c1', 'c0']);
    const c = await store.commit('r', { parent, writes: [{ path: 'last.md', content: enc('last') }], author, message: 'last', time: 9 });
    await store.packMerges();
    expect(await store.head('r')).toBe(c!.meta.sha);
    expect(readdirSync(join(gitdir, 'refs', 'heads'))).toEqual(['main']);
    fsck(gitdir);
  });

  it('recovery at boot removes a second name a crash left, and leaves the branch alone', async () => {
    const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
    await store.init('r');
    const gitdir = join(dir.path, 'repos', 'r.git');
    const made = await store.commit('r', { parent: null, writes: [{ path: 'a.md', content: enc('a') }], author: { name: 'Ann', email: 'ann@example.test' }, message: 'a', time: 1 });
    await store.packMerges();
    linkSync(join(gitdir, 'refs', 'heads', 'main'), join(gitdir, 'refs', 'heads', '.main.replaced'));
    await new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') }).recoverAll();
    expect(readdirSync(join(gitdir, 'refs', 'heads'))).toEqual(['main']);
    expect(await store.head('r')).toBe(made!.meta.sha);
    fsck(gitdir);
  });
});
