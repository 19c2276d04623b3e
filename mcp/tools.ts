/**
 * The tools of the agent tool server (issue 16). Each one is the CLI's own logic (cli/commands/sync.ts,
 * cli/commands/inspect.ts, cli/project.ts, lib/differ) answering in text an agent can act on. A failure is
 * a result with `isError: true` and the message (the CLI's wording), never a crashed server.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { diffPages, type SectionDiff } from '../lib/differ/index.ts';
import { PAGE_TYPES } from '../lib/page/parse.ts';
import { ApiError } from '../cli/api.ts';
import { firstCommitDiff, NO_PARENT } from '../cli/commands/inspect.ts';
import { packPlan, pageStatuses, planPush, pullPages, sendPushes } from '../cli/commands/sync.ts';
import { KR_DIR } from '../cli/project.ts';
import { renderDiff, summaryLines } from '../cli/render.ts';
import type { Paint } from '../cli/output.ts';
import { authorOf, lastCommits, type KrContext } from './context.ts';
import { mergeBrief } from './merge.ts';
import { indexOf, listPages, pathOf, readPage, search, writePage } from './pages.ts';
import { cleanText, removalNote, sanitize, wrapPage } from './safety.ts';

const plain = (s: string) => s;
const PLAIN: Paint = { red: plain, green: plain, yellow: plain, cyan: plain, bold: plain, dim: plain };

const sha8 = (sha: string): string => (sha === '' ? '(none)' : sha.slice(0, 8));

/** A tool's answer: text; errors flagged. */
const ok = (text: string): CallToolResult => ({ content: [{ type: 'text', text }] });
export const failure = (e: unknown): CallToolResult => ({
  content: [{ type: 'text', text: `error: ${cleanText(e instanceof Error ? e.message : String(e))}` }],
  isError: true,
});

/** Runs a tool body; any exception becomes an error result. */
async function guarded(run: () => Promise<string | CallToolResult>): Promise<CallToolResult> {
  try {
    const r = await run();
    return typeof r === 'string' ? ok(r) : r;
  } catch (e) {
    return failure(e);
  }
}

/** Every string of a diff sanitised (they are page text), and how many characters went. */
function cleanDiff<T>(value: T): { value: T; removed: number; kinds: Record<string, number> } {
  let removed = 0;
  const kinds: Record<string, number> = {};
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const s = sanitize(v);
      removed += s.removed;
      for (const [k, n] of Object.entries(s.kinds)) kinds[k] = (kinds[k] ?? 0) + n;
      return s.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return { value: walk(value) as T, removed, kinds };
}

const pageRef = {
  slug: z.string().optional().describe('page slug, e.g. "decision-log" (looked up in the local .kr/ folders)'),
  path: z.string().optional().describe('or the page path, e.g. "wiki/concepts/decision-log.md"'),
  type: z.enum(PAGE_TYPES).optional().describe('page type, when the slug exists under several types'),
};

export function registerTools(server: McpServer, ctx: KrContext): void {
  server.registerTool(
    'kr_status',
    {
      title: 'Status of the project folder',
      description:
        'Server, repository, user, local pages, last pull, pages never pushed, pages modified here, and pages changed on the server since the last pull. Call it first.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(async () => {
        const c = await ctx.connect();
        let user: string;
        try {
          const me = await c.api.me();
          user = `${me.email}${me.name ? ` (${me.name})` : ''}`;
        } catch (e) {
          if (!(e instanceof ApiError) || e.status !== 401 || e.message !== 'session required') throw e;
          user = 'the legacy shared key (no user identity)';
        }
        const { rows, inSync, absent } = await pageStatuses(c.project, c.api, c.repo);
        const by = (st: string) => rows.filter((r) => r.status === st).map((r) => r.path);
        const list = (paths: string[]) => (paths.length ? paths.map((p) => `\n  - ${p}`).join('') : ' none');
        const lines = [
          `Server: ${c.serverUrl}`,
          `Repository: ${c.repo}${absent ? ' (does not exist on the server yet: the first push creates it)' : ''}`,
          `User: ${user}`,
          `Project folder: ${c.project.krDir}`,
          `Local pages: ${c.project.localPages().length}`,
          `Last pull: ${c.project.state.head ? `HEAD=${sha8(c.project.state.head)}` : 'never'}`,
          `Never pushed (new here):${list(by('new'))}`,
          `Modified here, not pushed:${list(by('modified'))}`,
          `Deleted here, not pushed:${list(by('deleted'))}`,
          `Changed on the server since the last pull:${list(by('behind'))}`,
          `Changed here and on the server (conflicts):${list(by('conflict'))}`,
        ];
        if (inSync.length) lines.push(`Already on the server as here (recorded as pushed): ${inSync.join(', ')}`);
        if (c.project.skipped.length) lines.push(`Skipped files (never sent): ${c.project.skipped.map((s) => `${s.file} (${s.reason})`).join('; ')}`);
        const next: string[] = [];
        if (by('behind').length || by('conflict').length) next.push('kr_pull fetches what changed on the server');
        if (by('new').length || by('modified').length || by('deleted').length) next.push('kr_push sends your changes');
        lines.push(next.length ? `Next: ${next.join('; ')}.` : 'Up to date: nothing to push or pull.');
        return lines.join('\n');
      }),
  );

  server.registerTool(
    'kr_pull',
    {
      title: 'Pull pages from the server',
      description: "Fetch what changed on the server into .kr/ (deletions too). Your unpushed edits are kept and reported as conflicts.",
      inputSchema: { full: z.boolean().optional().describe('fetch every page, not only what changed since the last pull') },
    },
    ({ full }) =>
      guarded(async () => {
        const c = await ctx.connect();
        const r = await pullPages(c.project, c.api, c.repo, full === true);
        const n = r.added.length + r.updated.length + r.deleted.length;
        const lines = [n === 0 && r.conflicts.length === 0 ? `Already up to date (HEAD=${sha8(r.new_head)}).` : `Pulled ${n} page(s); HEAD=${sha8(r.new_head)}`];
        for (const p of r.added) lines.push(`  added    ${p}`);
        for (const p of r.updated) lines.push(`  updated  ${p}`);
        for (const p of r.deleted) lines.push(`  deleted  ${p}`);
        for (const x of r.conflicts) lines.push(`  conflict ${x.path}: ${x.why}; your file was kept`);
        if (r.conflicts.length) lines.push('Next: call kr_push for the conflicting pages: its answer is a merge brief per page (ancestor, both versions, what to do).');
        return cleanText(lines.join('\n'));
      }),
  );

  server.registerTool(
    'kr_push',
    {
      title: 'Push pages to the server',
      description:
        'One push of the new, modified and deleted pages (or only `paths`) as one commit. On a conflict the answer is a merge brief per page: the ancestor, your version, the server\'s version, the sections changed on both sides, and the exact next step.',
      inputSchema: {
        message: z.string().optional().describe('commit message'),
        paths: z.array(z.string()).optional().describe('slugs or page paths to push (default: every changed page)'),
      },
    },
    ({ message, paths }) =>
      guarded(async () => {
        const c = await ctx.connect();
        const plan = await planPush(c.project, paths ?? [], undefined, message);
        const lines: string[] = [];
        for (const s of plan.skipped) lines.push(`skipped ${s.file}: ${s.reason}`);
        for (const t of plan.troubles) lines.push(`warning: ${KR_DIR}/${t.path}:${t.line}: the frontmatter does not parse (${t.problem}); pushed as is`);
        if (plan.files.length === 0) return cleanText(['Nothing to push: no new, changed or deleted pages.', ...lines].join('\n'));
        c.project.checkRepo(c.repo);
        const limits = await c.api.limits();
        const { tooLarge, batches } = packPlan(plan, limits);
        const res = batches.length ? await sendPushes(c.project, c.api, c.repo, batches, plan.message) : { heads: [], pushed: [], conflicts: [], inSync: [], gone: [] };
        const sent = new Map(plan.files.map((f) => [f.wire.path, f]));
        const committed = res.pushed.filter((x) => !x.unchanged);
        if (committed.length) {
          lines.unshift(`Pushed ${committed.length} page(s) to ${c.repo}; HEAD=${sha8(res.heads[res.heads.length - 1] ?? '')}`, ...committed.map((x) => `  ${sent.get(x.path)?.kind ?? ''}  ${x.path}`));
        } else if (res.conflicts.length === 0) lines.unshift('Nothing new on the server: it already had this content.');
        if (res.inSync.length) lines.push(`Already on the server exactly as yours (recorded as pushed): ${res.inSync.join(', ')}`);
        if (res.gone.length) lines.push(`Deleted here and already gone from the server: ${res.gone.join(', ')}`);
        for (const f of tooLarge) lines.push(`not sent: ${f.wire.path} is ${f.bytes} bytes, over the server's limit of ${limits.max_body_bytes} bytes per push`);
        if (res.conflicts.length) {
          const authors = await lastCommits(c.api, c.repo);
          lines.push('', `${res.conflicts.length} page(s) NOT pushed because they changed on the server. Merge brief per page:`);
          for (const k of res.conflicts) {
            const f = sent.get(k.path);
            lines.push(
              '',
              mergeBrief({
                path: k.path,
                repo: c.repo,
                ours: f?.kind === 'deleted' ? undefined : (f?.wire.content ?? ''),
                theirs: Buffer.from(k.current_content, 'base64').toString('utf8'),
                ancestor: k.ancestor_content !== undefined ? Buffer.from(k.ancestor_content, 'base64').toString('utf8') : undefined,
                currentSha: k.current_sha,
                expectedParentSha: k.expected_parent_sha,
                serverAuthor: authorOf(authors.get(k.path)),
              }),
            );
          }
        }
        return lines.join('\n');
      }),
  );

  server.registerTool(
    'kr_write_page',
    {
      title: 'Write a page locally',
      description:
        'Validate the slug and the frontmatter and write the page into .kr/ (created/updated times set). Returns its path. Nothing is sent: call kr_push afterwards. When merging a conflict, pass base_sha from the merge brief.',
      inputSchema: {
        slug: z.string().describe('file name without extension, e.g. "decision-log"'),
        type: z.enum(PAGE_TYPES).describe('page type: concept, entity, analysis or source'),
        body: z.string().describe('the Markdown body, sections introduced by "## " headings; no frontmatter'),
        title: z.string().optional().describe('title (default: the existing title, else the slug)'),
        summary: z.string().optional().describe('one-line summary'),
        tags: z.array(z.string()).optional(),
        related: z.array(z.string()).optional().describe('slugs of related pages'),
        sources: z.array(z.string()).optional().describe('where the knowledge comes from (URLs, files, sessions)'),
        base_sha: z.string().optional().describe("only when merging a conflict: the server's sha named in the merge brief"),
      },
    },
    (args) => guarded(() => writePage(ctx, args)),
  );

  server.registerTool(
    'kr_read_page',
    {
      title: 'Read a page',
      description: "Read a page (the local file, else the server's copy) by slug or path, inside a provenance banner.",
      inputSchema: pageRef,
      annotations: { readOnlyHint: true },
    },
    (args) => guarded(() => readPage(ctx, args)),
  );

  server.registerTool(
    'kr_list_pages',
    {
      title: 'List pages',
      description: 'The pages in .kr/ with title, tags and summary; optionally only one type or one tag.',
      inputSchema: { type: z.string().optional().describe('concept, entity, analysis or source'), tag: z.string().optional() },
      annotations: { readOnlyHint: true },
    },
    (args) => guarded(() => listPages(ctx, args)),
  );

  server.registerTool(
    'kr_search',
    {
      title: 'Search pages',
      description: 'Full-text search of the repository on the server (words, "phrases", prefix*, -excluded), best first, with snippets.',
      inputSchema: {
        query: z.string().min(1),
        type: z.string().optional().describe('only pages of this type'),
        tag: z.string().optional().describe('only pages with this tag'),
        limit: z.number().int().min(1).max(100).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    (args) => guarded(() => search(ctx, args)),
  );

  server.registerTool(
    'kr_history',
    {
      title: 'History',
      description: "Commits that touched a page (slug or path), newest first; without a page, the repository's commits.",
      inputSchema: { ...pageRef, limit: z.number().int().min(1).max(500).optional() },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const c = await ctx.connect();
        if (!args.slug && !args.path) {
          const t = await c.api.timeline(c.repo, args.limit ?? 20);
          if (t.commits.length === 0) return 'No commits yet.';
          return cleanText(t.commits.map((x) => `${sha8(x.sha)}  ${x.time}  ${x.email}  ${x.message}\n    ${x.paths.join('\n    ')}`).join('\n'));
        }
        const path = await pathOf(c.project, args);
        const h = await c.api.history(c.repo, path, args.limit ?? 20);
        if (h.commits.length === 0) return `${path}: no commits on the server yet.`;
        return cleanText([`${path}:`, ...h.commits.map((x) => `${sha8(x.sha)}  ${x.time}  ${authorOf(x)}  ${x.message}`)].join('\n'));
      }),
  );

  server.registerTool(
    'kr_diff',
    {
      title: 'Section diff of a page',
      description:
        'Section-by-section diff of a page: between two commits (default: its last change), with blame (who introduced each heading), or local=true: your file against the server copy.',
      inputSchema: {
        ...pageRef,
        from: z.string().optional().describe('older commit sha'),
        to: z.string().optional().describe('newer commit sha'),
        blame: z.boolean().optional(),
        local: z.boolean().optional().describe('compare your local file with the server copy (not with from/to/blame)'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        if (args.local && (args.from !== undefined || args.to !== undefined || args.blame)) {
          throw new Error('local=true compares your file with the server\'s current copy; it cannot be combined with from, to or blame');
        }
        const c = await ctx.connect();
        const path = await pathOf(c.project, args);
        let d: SectionDiff;
        let fromLabel: string;
        let toLabel: string;
        if (args.local) {
          const local = await c.project.read(path);
          if (!local) throw new Error(`no local file for ${path}`);
          const server = await c.api.page(c.repo, path);
          d = diffPages(server?.content ?? '', local.text, { from_sha: server?.sha ?? '', to_sha: '' });
          fromLabel = server ? `server ${sha8(server.sha)}` : 'not yet on the server';
          toLabel = 'your file';
        } else {
          try {
            d = await c.api.diff(c.repo, path, { from: args.from, to: args.to, blame: args.blame });
          } catch (e) {
            if (!(e instanceof ApiError) || e.status !== 400 || e.serverError !== NO_PARENT || args.from !== undefined) throw e;
            const first = await firstCommitDiff(c.api, c.repo, path, args.to, args.blame);
            if (!first) throw e;
            d = first;
          }
          fromLabel = d.from_sha === '' ? '(empty page)' : sha8(d.from_sha);
          toLabel = sha8(d.to_sha);
        }
        const cleaned = cleanDiff(d);
        const text = renderDiff(cleaned.value, { path, fromLabel, toLabel, showUnchanged: args.blame }, PLAIN);
        const note = removalNote(cleaned, 'this diff');
        return wrapPage(note ? `${text}\n${note}` : text, { path, repo: c.repo, source: 'a section diff (lines with + and - are page text)' }).text;
      }),
  );

  server.registerTool(
    'kr_evolution',
    {
      title: 'Evolution of a page',
      description: 'How a page changed, commit by commit, section by section (newest first).',
      inputSchema: { ...pageRef, limit: z.number().int().min(1).max(200).optional(), blame: z.boolean().optional() },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const c = await ctx.connect();
        const path = await pathOf(c.project, args);
        const res = cleanDiff(await c.api.evolution(c.repo, path, { limit: args.limit, blame: args.blame }));
        if (res.value.entries.length === 0) return `${path}: no commits on the server yet.`;
        const lines = [path];
        for (const e of res.value.entries) {
          lines.push(`${sha8(e.commit.sha)}  ${e.commit.time}  ${authorOf(e.commit)}  ${e.commit.message}`);
          const s = summaryLines(e.diff, PLAIN, '    ');
          lines.push(...(s.length ? s : ['    no section changes']));
        }
        if (res.value.truncated) lines.push('(older entries left out by the server; ask with a lower limit)');
        const note = removalNote(res, 'this history');
        return cleanText(note ? `${lines.join('\n')}\n${note}` : lines.join('\n'));
      }),
  );
}

export { indexOf };
