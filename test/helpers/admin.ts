/**
 * The server's admin command as an operator runs it on the host (`npm run admin -- …`): `node` with the tsx
 * loader on admin/main.ts, in the project root, with SERVICE_DATA_ROOT and nothing else of the test's own
 * SERVICE_/IDP_ environment.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../reliability/helpers/server-process.ts';

export const TSX_LOADER = pathToFileURL(join(PROJECT_ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node <args>` in the project root with the environment of an operator's shell. */
export function runNode(args: string[], env: Record<string, string>): Promise<Run> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(SERVICE_|IDP_|PORT$)/.test(k)) base[k] = v;
  }
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { ...base, TSX_TSCONFIG_PATH: join(PROJECT_ROOT, 'tsconfig.json'), NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** `npm run admin -- <args>` against `dataRoot`. */
export const runAdmin = (dataRoot: string, ...args: string[]): Promise<Run> =>
  runNode(['--import', TSX_LOADER, 'admin/main.ts', ...args], { SERVICE_DATA_ROOT: dataRoot });
