import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { inflateSync } from 'node:zlib';
import { encodeObject, serializeCommit, serializeTree, webCodec } from '../lib/git/objects.ts';
import { nodeCodec } from '../lib/git/node-fs.ts';

const enc = (s: string) => new TextEncoder().encode(s);
/** What `git hash-object --stdin -t <type>` says for the same content. */
const gitHash = (type: string, content: Uint8Array) =>
  execFileSync('git', ['hash-object', '--stdin', '-t', type, '--literally'], { input: content }).toString().trim();

describe('git object encoding', () => {
  it('both codecs hash blobs exactly as git does and deflate to the wrapped object', async () => {
    for (const text of ['', 'hello\n', 'ünïcødé 漢字 😀\n', 'x'.repeat(100_000)]) {
      const content = enc(text);
      const a = await encodeObject(nodeCodec, 'blob', content);
      const b = await encodeObject(webCodec, 'blob', content);
      expect(a.oid).toBe(gitHash('blob', content));
      expect(b.oid).toBe(a.oid);
      expect(inflateSync(a.deflated).toString('latin1')).toBe(`blob ${content.length}\0` + Buffer.from(content).toString('latin1'));
      expect(Buffer.from(inflateSync(b.deflated)).equals(Buffer.from(inflateSync(a.deflated)))).toBe(true);
    }
  });

  it('serialises trees in git order (a directory sorts as name + "/") and git agrees', async () => {
    const blob = 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391';
    const tree = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
    const items = [
      { mode: '100644', name: 'a.md', oid: blob, type: 'blob' as const },
      { mode: '040000', name: 'a', oid: tree, type: 'tree' as const },
      { mode: '100644', name: 'a-b', oid: blob, type: 'blob' as const },
      { mode: '100644', name: 'ü.md', oid: blob, type: 'blob' as const },
      { mode: '100644', name: 'Z', oid: blob, type: 'blob' as const },
    ];
    const content = serializeTree(items);
    const listing = items
      .map((i) => `${i.type === 'tree' ? '040000' : i.mode} ${i.type} ${i.oid}\t${i.name}`)
      .join('\n');
    const viaGit = execFileSync('bash', ['-c', 'd=$(mktemp -d) && git init -q --bare "$d" && git --git-dir "$d" mktree --missing && rm -rf "$d"'], { input: `${listing}\n` }).toString().trim();
    expect((await encodeObject(nodeCodec, 'tree', content)).oid).toBe(viaGit);
    expect((await encodeObject(nodeCodec, 'tree', serializeTree([]))).oid).toBe(tree);
  });

  it('serialises commits as git commit-tree does', async () => {
    const content = serializeCommit({
      tree: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
      parents: [],
      author: { name: 'Ann Author', email: 'ann@example.test' },
      time: 1779012000,
      message: 'first\n',
    });
    const viaGit = execFileSync(
      'bash',
      ['-c', 'd=$(mktemp -d) && git init -q --bare "$d" && git --git-dir "$d" commit-tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904 -m first && rm -rf "$d"'],
      {
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 'Ann Author',
          GIT_AUTHOR_EMAIL: 'ann@example.test',
          GIT_AUTHOR_DATE: '1779012000 +0000',
          GIT_COMMITTER_NAME: 'Ann Author',
          GIT_COMMITTER_EMAIL: 'ann@example.test',
          GIT_COMMITTER_DATE: '1779012000 +0000',
        },
      },
    ).toString().trim();
    expect((await encodeObject(nodeCodec, 'commit', content)).oid).toBe(viaGit);
  });
});
