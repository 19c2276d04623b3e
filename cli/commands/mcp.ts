/** `kr mcp` (the agent tool server over stdio), `kr mcp install|uninstall|status` (the agents' configuration). */
import { relative } from 'node:path';
import { usageError } from '../../client/errors.ts';
import { findProjectRoot, KR_DIR } from '../../client/project.ts';
import { clean, note, out, printJson } from '../../client/output.ts';
import { CONFIG_FILES, install, installed, MCP_TOOLS, uninstall, type McpTool } from '../../mcp/clients.ts';

/** `--tool` values: a comma-separated list of claude, cursor, codex. */
export function parseTools(raw: string | string[] | undefined, fallback: McpTool[]): McpTool[] {
  if (raw === undefined) return fallback;
  const names = (Array.isArray(raw) ? raw : [raw]).flatMap((r) => r.split(',')).map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(MCP_TOOLS as readonly string[]).includes(n)) throw usageError(`unknown --tool ${JSON.stringify(n)} (expected ${MCP_TOOLS.join(', ')})`);
  return [...new Set(names)] as McpTool[];
}

const projectRoot = async (): Promise<string> => (await findProjectRoot()) ?? process.cwd();
const shown = (file: string): string => relative(process.cwd(), file) || file;

/** `kr mcp`: serves the agent tool server on stdin/stdout. */
export async function serve(): Promise<void> {
  const { runStdio } = await import('../../mcp/server.ts');
  await runStdio();
}

/** Writes the configuration files of the given agents (default: .mcp.json); used by `kr init` too. */
export async function installConfig(opts: { tool?: string | string[]; json?: boolean; quiet?: boolean }): Promise<void> {
  const root = await projectRoot();
  const tools = parseTools(opts.tool, ['claude']);
  const files: string[] = [];
  for (const t of tools) files.push(await install(root, t));
  if (opts.json) return printJson({ installed: files });
  for (const f of files) out(`Wrote ${shown(f)}: coding agents started in this project run "kr mcp" (kr's tools: kr_status, kr_pull, kr_push, kr_read_page, ...).`);
  if (!opts.quiet && !(await findProjectRoot())) note(`(no ${KR_DIR}/ here yet: until "kr init", kr mcp starts dormant, with no tools)`);
}

export async function uninstallConfig(opts: { tool?: string | string[]; json?: boolean }): Promise<void> {
  const root = await projectRoot();
  const removed: string[] = [];
  for (const t of parseTools(opts.tool, [...MCP_TOOLS])) if (await uninstall(root, t)) removed.push(CONFIG_FILES[t]);
  if (opts.json) return printJson({ removed });
  out(removed.length ? `Removed kr from ${removed.join(', ')}.` : 'kr was not configured for any agent here.');
}

export async function status(opts: { json?: boolean }): Promise<void> {
  const root = await projectRoot();
  const rows = await Promise.all(MCP_TOOLS.map(async (t) => ({ tool: t, ...(await installed(root, t)) })));
  const project = await findProjectRoot();
  if (opts.json) return printJson({ project: project ?? null, agents: rows.map((r) => ({ tool: r.tool, file: r.file, configured: r.present, command: r.command ?? null })) });
  out(`Project folder: ${project ? `${project}/${KR_DIR}` : `none (kr mcp is dormant here: run "kr init")`}`);
  for (const r of rows) {
    // The command comes from a configuration file that may have come with the project: shown cleaned.
    const command = r.command ? `: ${clean(r.command.command)} ${r.command.args.map(clean).join(' ')}` : '';
    out(`  ${r.tool.padEnd(7)} ${clean(shown(r.file)).padEnd(20)} ${r.present ? `configured${command}` : 'not configured'}`);
  }
  if (!rows.some((r) => r.present)) note('("kr mcp install --tool claude|cursor|codex" writes one)');
}
