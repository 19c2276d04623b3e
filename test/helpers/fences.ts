/**
 * Reads an answer of the agent tool server the way its fences are meant to be read (mcp/safety.ts): a
 * start line `<<<kr-page N>>>` / `<<<kr-data N>>>` outside any fence opens one, and only the exact end line
 * with the same kind and nonce closes it. Throws on a fence that is never closed.
 */
export interface Fence {
  kind: 'page' | 'data';
  nonce: string;
  /** The lines between the start and the end line. */
  body: string;
}

export function splitFences(text: string): { outside: string; fences: Fence[] } {
  const outside: string[] = [];
  const fences: Fence[] = [];
  let open: { kind: 'page' | 'data'; nonce: string; lines: string[] } | null = null;
  for (const line of text.split('\n')) {
    if (open === null) {
      const m = /^<<<kr-(page|data) ([0-9a-f]{16})>>>$/.exec(line);
      if (m) open = { kind: m[1] as 'page' | 'data', nonce: m[2]!, lines: [] };
      else outside.push(line);
    } else if (line === `<<<end kr-${open.kind} ${open.nonce}>>>`) {
      fences.push({ kind: open.kind, nonce: open.nonce, body: open.lines.join('\n') });
      open = null;
    } else open.lines.push(line);
  }
  if (open) throw new Error(`fence ${open.kind} ${open.nonce} is never closed`);
  return { outside: outside.join('\n'), fences };
}
