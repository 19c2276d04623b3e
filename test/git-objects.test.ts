import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { inflateSync } from 'node:zlib';
import { encodeObject, hexToBytes, serializeCommit, serializeTree, serializeTreeSorted, toHex, webCodec } from '../lib/git/objects.ts';
import { nodeCodec } from '../lib/runtime/node/store-fs.ts';

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

  it('reports the stored order with the content, and refuses an entry whose object id is not 40 hex digits', () => {
    const blob = 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391';
    const items = [
      { mode: '100644', name: 'b', oid: blob, type: 'blob' as const, tag: 1 },
      { mode: '040000', name: 'a', oid: '4b825dc642cb6eb9a060e54bf8d69288fbee4904', type: 'tree' as const, tag: 2 },
      { mode: '100644', name: 'a.md', oid: blob, type: 'blob' as const, tag: 3 },
    ];
    const { content, sorted } = serializeTreeSorted(items);
    // "a.md" < "a/" (0x2e < 0x2f) < "b"
    expect(sorted.map((s) => s.tag)).toEqual([3, 2, 1]);
    expect(content).toEqual(serializeTree(items));
    expect(Buffer.from(content).toString('latin1')).toContain('40000 a\0');
    for (const oid of [blob.slice(0, 38), `${blob}00`, `${blob.slice(0, 39)}g`, '']) {
      expect(() => serializeTree([{ mode: '100644', name: 'x', oid, type: 'blob' }])).toThrow(RangeError);
    }
  });

  it('converts object ids between hex and bytes exactly as Buffer does, and refuses what is not hex', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(toHex(bytes)).toBe(Buffer.from(bytes).toString('hex'));
    expect(hexToBytes(toHex(bytes))).toEqual(bytes);
    expect(hexToBytes('DEADbeef')).toEqual(Uint8Array.from([0xde, 0xad, 0xbe, 0xef]));
    const out = new Uint8Array(6).fill(9);
    expect(hexToBytes('0aff', out, 2)).toBe(out);
    expect([...out]).toEqual([9, 9, 0x0a, 0xff, 9, 9]);
    for (const bad of ['abc', 'zz', '0x12', ' 1', '1 ', 'é1', '\u0661\u0662']) expect(() => hexToBytes(bad)).toThrow(RangeError);
    expect(hexToBytes('')).toEqual(new Uint8Array(0));
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
