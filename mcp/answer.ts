/**
 * What every tool of the agent tool server answers with (mcp/tools.ts, mcp/history-tools.ts): text of at
 * most MAX_ANSWER_CHARS characters (mcp/limits.ts), or an error result with the message; plus the pieces
 * the tools share (the page reference of their input schemas, fenced path lists, plain rendering).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { PAGE_TYPES } from '../lib/core/page/parse.ts';
import type { Paint } from '../client/output.ts';
import { capAnswer } from './limits.ts';
import { FencedToolError } from './pages.ts';
import { cleanText, fenceData, flat } from './safety.ts';

const plain = (s: string) => s;
/** The CLI's renderers without colour. */
export const PLAIN: Paint = { red: plain, green: plain, yellow: plain, cyan: plain, bold: plain, dim: plain };

export const sha8 = (sha: string): string => (sha === '' ? '(none)' : sha.slice(0, 8));

/** A tool's answer: text (at most MAX_ANSWER_CHARS characters; `hint` says how to read on). */
const ok = (text: string, hint: string): CallToolResult => ({ content: [{ type: 'text', text: capAnswer(text, hint) }] });

/** An error result: the message (already fenced for a FencedToolError, else sanitised). */
export const failure = (e: unknown): CallToolResult => ({
  content: [
    {
      type: 'text',
      text: capAnswer(`error: ${e instanceof FencedToolError ? e.message : cleanText(e instanceof Error ? e.message : String(e))}`, ''),
    },
  ],
  isError: true,
});

/** Runs a tool body; any exception becomes an error result. */
export async function guarded(hint: string, run: () => Promise<string>): Promise<CallToolResult> {
  try {
    return ok(await run(), hint);
  } catch (e) {
    return failure(e);
  }
}

/** ` none`, or the paths (of pages other people may have named) in a fence, one per line. */
export const pathList = (paths: readonly string[]): string => (paths.length ? `\n${fenceData(paths.map((p) => `  - ${flat(p, 600)}`))}` : ' none');

/** The input fields that name a page. */
export const pageRef = {
  slug: z.string().optional().describe('page slug, e.g. "decision-log" (looked up in the local .kr/ folders)'),
  path: z.string().optional().describe('or the page path, e.g. "wiki/concepts/decision-log.md"'),
  type: z.enum(PAGE_TYPES).optional().describe('page type, when the slug exists under several types'),
};
