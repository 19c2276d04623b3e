/**
 * The MCP client configuration of a project (docs/agents.md "Setting up an agent client"): the files through which coding agents
 * start `kr mcp` in the project folder.
 *
 *   claude  .mcp.json            {"mcpServers": {"kr": {"command", "args"}}}   (Claude Code, and others
 *                                                                               that read .mcp.json)
 *   cursor  .cursor/mcp.json     the same shape
 *   codex   .codex/config.toml   [mcp_servers.kr] command/args, between marker comments
 *
 * The command is `kr mcp`, found on each person's PATH: these files are committed with the project, so they
 * name nothing of one machine (no absolute path of one checkout or installation), and never ask a registry
 * for a package (which `npx kr` would do where kr is not installed). Existing files are merged: other servers
 * and keys are kept; uninstall removes only kr's entry.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export const MCP_TOOLS = ['claude', 'cursor', 'codex'] as const;
export type McpTool = (typeof MCP_TOOLS)[number];

export const CONFIG_FILES: Record<McpTool, string> = {
  claude: '.mcp.json',
  cursor: join('.cursor', 'mcp.json'),
  codex: join('.codex', 'config.toml'),
};

const BEGIN = '# >>> kr mcp (written by "kr mcp install"; "kr mcp uninstall" removes it)';
const END = '# <<< kr mcp';

export interface ServerCommand {
  command: string;
  args: string[];
}

/** What the agents run: `kr mcp`, the same on every teammate's machine. */
export const serverCommand = (): ServerCommand => ({ command: 'kr', args: ['mcp'] });

const errno = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if (errno(e) === 'ENOENT') return null;
    throw e;
  }
}

async function readJson(file: string): Promise<Record<string, unknown> | null> {
  const text = await readText(file);
  if (text === null) return null;
  try {
    const v: unknown = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new Error(`${file} is not a JSON object: fix or remove it first`);
}

const tomlString = (s: string): string => JSON.stringify(s);

function tomlBlock(cmd: ServerCommand): string {
  return [BEGIN, '[mcp_servers.kr]', `command = ${tomlString(cmd.command)}`, `args = [${cmd.args.map(tomlString).join(', ')}]`, END].join('\n');
}

const blockRe = new RegExp(`${BEGIN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\s\\S]*?${END}\\n?`);

/** Whether the tool's file in `root` configures kr, and with which command. */
export async function installed(root: string, tool: McpTool): Promise<{ file: string; present: boolean; command?: ServerCommand }> {
  const file = join(root, CONFIG_FILES[tool]);
  if (tool === 'codex') {
    const text = await readText(file);
    const m = text?.match(blockRe);
    if (!m) return { file, present: Boolean(text && /^\[mcp_servers\.kr\]/m.test(text)) };
    const command = /command = (".*")/.exec(m[0])?.[1];
    const args = /args = \[(.*)\]/.exec(m[0])?.[1];
    return { file, present: true, command: command && args !== undefined ? { command: JSON.parse(command), args: JSON.parse(`[${args}]`) } : undefined };
  }
  const json = await readJson(file);
  const entry = (json?.mcpServers as Record<string, ServerCommand> | undefined)?.kr;
  return { file, present: entry !== undefined, command: entry };
}

/** Writes (or updates) kr's entry in the tool's configuration file; returns the file. */
export async function install(root: string, tool: McpTool, cmd: ServerCommand = serverCommand()): Promise<string> {
  const file = join(root, CONFIG_FILES[tool]);
  await mkdir(dirname(file), { recursive: true });
  if (tool === 'codex') {
    const text = (await readText(file)) ?? '';
    if (!blockRe.test(text) && /^\[mcp_servers\.kr\]/m.test(text)) throw new Error(`${file} already has an [mcp_servers.kr] table kr did not write: edit it by hand`);
    const block = tomlBlock(cmd) + '\n';
    const next = blockRe.test(text) ? text.replace(blockRe, block) : `${text}${text && !text.endsWith('\n') ? '\n' : ''}${text ? '\n' : ''}${block}`;
    await writeFile(file, next);
    return file;
  }
  const json = (await readJson(file)) ?? {};
  const servers = (json.mcpServers && typeof json.mcpServers === 'object' ? json.mcpServers : {}) as Record<string, unknown>;
  json.mcpServers = { ...servers, kr: { command: cmd.command, args: cmd.args } };
  await writeFile(file, JSON.stringify(json, null, 2) + '\n');
  return file;
}

/** Removes kr's entry (and the file, when nothing else is left in it); returns whether there was one. */
export async function uninstall(root: string, tool: McpTool): Promise<boolean> {
  const file = join(root, CONFIG_FILES[tool]);
  if (tool === 'codex') {
    const text = await readText(file);
    if (text === null || !blockRe.test(text)) return false;
    const next = text.replace(blockRe, '').replace(/\n{3,}/g, '\n\n').replace(/\n+$/, '\n');
    if (next.trim() === '') await rm(file);
    else await writeFile(file, next);
    return true;
  }
  const json = await readJson(file);
  const servers = json?.mcpServers as Record<string, unknown> | undefined;
  if (!json || !servers || !('kr' in servers)) return false;
  delete servers.kr;
  if (Object.keys(servers).length === 0) delete json.mcpServers;
  if (Object.keys(json).length === 0) await rm(file);
  else await writeFile(file, JSON.stringify(json, null, 2) + '\n');
  return true;
}
