/**
 * The merge brief of a push conflict (issue 16): everything an agent needs to merge one page by itself —
 * the common ancestor, its own version, the server's version, the section headings changed on each side
 * and on both (lib/differ, the one section differ), and the exact next step with the tools it has.
 */
import { diffPages, type SectionDiff } from '../lib/differ/index.ts';
import { pageRefOfPath } from '../lib/page/parse.ts';
import { NEW_PAGE_PARENT } from '../cli/commands/sync.ts';
import { KR_DIR } from '../cli/project.ts';
import { oneLine, wrapPage } from './safety.ts';

export interface ConflictInput {
  path: string;
  repo: string;
  /** What the agent sent (undefined: it deleted the page). */
  ours: string | undefined;
  theirs: string;
  ancestor: string | undefined;
  currentSha: string;
  expectedParentSha: string;
  /** The server version's author, when known. */
  serverAuthor: string | null;
}

/** The headings (and `frontmatter <field>` keys) that a diff reports as changed. */
export function changedKeys(d: SectionDiff): string[] {
  const keys: string[] = [];
  for (const f of [...d.frontmatter.changed, ...d.frontmatter.added, ...d.frontmatter.removed]) keys.push(`frontmatter field "${f.field}"`);
  for (const e of [...(d.preamble ? [d.preamble] : []), ...d.sections]) {
    if (e.status === 'unchanged') continue;
    const name = e.heading === '_preamble' ? (d.parse_fallback ? '(whole file)' : '(preamble: text before the first ## heading)') : e.heading;
    keys.push(e.status === 'renamed' && e.old_heading ? `${name} (renamed from ${e.old_heading})` : name);
  }
  return [...new Set(keys)];
}

const list = (keys: string[]): string => (keys.length ? keys.map((k) => oneLine(k)).join('; ') : '(none)');

/** The brief of one conflicting page, as text. */
export function mergeBrief(c: ConflictInput): string {
  const ref = pageRefOfPath(c.path);
  const file = `${KR_DIR}/${c.path}`;
  const short = c.currentSha.slice(0, 8);
  const lines: string[] = [];
  const by = c.serverAuthor ? ` by ${oneLine(c.serverAuthor)}` : '';
  if (c.ours === undefined) {
    lines.push(
      `CONFLICT ${c.path}: you deleted this page, but it changed on the server since (now ${short}${by}). Nothing was deleted.`,
      `Next step: to keep the page, call kr_pull with full=true (it brings the server's version back). ` +
        `To delete it anyway, run "kr resolve ${ref?.slug ?? c.path}" in a terminal, then call kr_push.`,
    );
    return lines.join('\n');
  }
  const isNew = c.expectedParentSha === NEW_PAGE_PARENT;
  lines.push(
    isNew
      ? `CONFLICT ${c.path}: the page already exists on the server (${short}${by}); yours was written without pulling it. Your file ${file} was left as it is.`
      : `CONFLICT ${c.path}: a project member changed it on the server (now ${short}${by}) after the version yours is based on (${c.expectedParentSha.slice(0, 8)}). Your file ${file} was left as it is.`,
  );
  if (c.ancestor !== undefined) {
    const mine = changedKeys(diffPages(c.ancestor, c.ours));
    const theirs = changedKeys(diffPages(c.ancestor, c.theirs));
    const both = mine.filter((k) => theirs.includes(k));
    lines.push(
      `Changed on BOTH sides (merge these by hand, keeping both intents): ${list(both)}`,
      `Changed only by you (keep your text): ${list(mine.filter((k) => !both.includes(k)))}`,
      `Changed only on the server (keep the server's text): ${list(theirs.filter((k) => !both.includes(k)))}`,
    );
  } else {
    lines.push(`Sections that differ between your version and the server's: ${list(changedKeys(diffPages(c.theirs, c.ours)))}`);
  }
  const write = ref
    ? `call kr_write_page with slug "${ref.slug}", type "${ref.type}", the merged body and frontmatter fields (title, summary, tags, related, sources), and base_sha "${c.currentSha}"`
    : `write the merged text to ${file} yourself, then run "kr resolve ${c.path}" in a terminal`;
  lines.push(
    'Next step, exactly:',
    `  1. Merge: start from the SERVER'S VERSION below and apply your own changes to it; ${write}.`,
    '  2. Call kr_push. (If the page changed on the server again meanwhile, you get a new brief.)',
    '',
  );
  if (c.ancestor !== undefined) {
    lines.push('ANCESTOR (the version both sides started from):', wrapPage(c.ancestor, { path: c.path, repo: c.repo, source: `common ancestor, base of ${c.expectedParentSha.slice(0, 8)}`, sha: c.expectedParentSha }).text, '');
  }
  lines.push('YOUR VERSION (the file you tried to push):', wrapPage(c.ours, { path: c.path, repo: c.repo, author: 'you (this agent, in this project folder)', source: 'your local file' }).text, '');
  lines.push("SERVER'S VERSION (the current one on the server):", wrapPage(c.theirs, { path: c.path, repo: c.repo, author: c.serverAuthor, source: `the server's copy at ${short}`, sha: c.currentSha }).text);
  return lines.join('\n');
}
