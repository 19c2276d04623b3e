/** Page history helpers shared by `kr diff` (cli/commands/inspect.ts) and the agent's kr_diff (mcp/history-tools.ts). */
import type { SectionDiff } from '../schema/wire/diff.ts';
import type { Api } from './api.ts';

/** The code of the server's answer to a default diff of a page's first commit (docs/api.md "History", the diff route). */
export const NO_PARENT = 'no_parent';

/**
 * The diff of a page's first commit, against the empty page — the server answers a default diff of it
 * with `no parent commit`, and has no sha for "empty": evolution's entry of that commit is exactly that
 * diff (`from_sha: ""`). null when it cannot be found (then the server's refusal stands).
 */
export async function firstCommitDiff(api: Api, repo: string, path: string, to: string | undefined, blame: boolean | undefined): Promise<SectionDiff | null> {
  const evo = await api.evolution(repo, path, { limit: to === undefined ? 1 : 200, blame });
  const want = to?.toLowerCase();
  const entry = want === undefined ? evo.entries[0] : evo.entries.find((e) => e.commit.sha.startsWith(want));
  return entry && entry.diff.from_sha === '' ? entry.diff : null;
}
