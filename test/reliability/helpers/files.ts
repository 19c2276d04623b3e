/** Filesystem helpers for the reliability suite: tree snapshots and byte scans. */
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** Every entry below `root`: relative path → "type size mtime" (directories: "dir"). */
export async function snapshotTree(root: string, skip: (rel: string) => boolean = () => false): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string) => {
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      const rel = relative(root, path);
      if (skip(rel)) continue;
      const st = await lstat(path);
      if (st.isDirectory()) {
        out.set(rel, 'dir');
        await walk(path);
      } else out.set(rel, `${st.isSymbolicLink() ? 'link' : st.isFile() ? 'file' : 'other'} ${st.size} ${st.mtimeMs}`);
    }
  };
  await walk(root);
  return out;
}

/** Differences between two snapshots, as readable lines (empty when equal). */
export function treeDiff(before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of after) if (before.get(k) !== v) out.push(before.has(k) ? `changed ${k}: ${before.get(k)} -> ${v}` : `added ${k} (${v})`);
  for (const k of before.keys()) if (!after.has(k)) out.push(`removed ${k}`);
  return out;
}

/** Every regular file below `root` (recursively). */
export async function filesBelow(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const path = join(dir, name);
      const st = await lstat(path).catch(() => null);
      if (!st) continue;
      if (st.isDirectory()) await walk(path);
      else if (st.isFile()) out.push(path);
    }
  };
  await walk(root);
  return out;
}

/**
 * Which of `secrets` occur in any of `files` or `texts`: a list of "<secret label> in <where>". Files
 * are searched as raw bytes (latin1), so a secret stored in any encoding-preserving way is found.
 */
export async function findSecrets(
  secrets: Array<{ label: string; value: string }>,
  files: string[],
  texts: Array<{ where: string; text: string }> = [],
): Promise<string[]> {
  const found: string[] = [];
  const haystacks = [...texts];
  for (const f of files) {
    const buf = await readFile(f).catch(() => null);
    if (buf) haystacks.push({ where: f, text: buf.toString('latin1') });
  }
  for (const s of secrets) {
    if (s.value.length < 8) throw new Error(`secret ${s.label} is too short to scan for meaningfully`);
    for (const h of haystacks) if (h.text.includes(s.value)) found.push(`${s.label} in ${h.where}`);
  }
  return found;
}
