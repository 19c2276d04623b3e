/**
 * How much one answer of the agent tool server may hold (docs/agents.md "Limits and errors"): every tool result and resource is at
 * most {@link MAX_ANSWER_CHARS} characters. kr_read_page shows a page in windows of {@link PAGE_CHARS}
 * characters (`offset`, `section`); everything else that would pass the limit is cut by
 * {@link capAnswer}, which closes the fence it cuts into and says what was cut and how to read on.
 */
import { FENCE_START, fenceEnd, type FenceKind, type Shown } from './safety.ts';

/** The most characters one answer (tool result or resource) holds. */
export const MAX_ANSWER_CHARS = 100_000;

/** The most characters of a page one kr_read_page answer shows (its header and notes fit in the rest). */
export const PAGE_CHARS = 90_000;

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * Where to end a part of `text` that may hold at most `max` characters from `start`: after the last line
 * break of its final tenth when there is one, else at `start + max` (moved back off half a surrogate pair).
 */
function endOf(text: string, start: number, max: number): number {
  const limit = start + max;
  if (limit >= text.length) return text.length;
  const nl = text.lastIndexOf('\n', limit - 1);
  if (nl >= start && nl + 1 >= limit - Math.floor(max / 10)) return nl + 1;
  return isHigh(text.charCodeAt(limit - 1)) ? limit - 1 : limit;
}

/** The part of `text` from `offset` (moved back onto a whole character) of at most `max` characters. */
export function windowOf(text: string, offset: number, max: number = PAGE_CHARS): Shown {
  let start = Math.min(offset, text.length);
  if (start > 0 && start < text.length && isLow(text.charCodeAt(start)) && isHigh(text.charCodeAt(start - 1))) start--;
  return { start, end: endOf(text, start, max), total: text.length };
}

/**
 * `text` cut to at most `max` characters when longer: the fence that the cut falls in (a kr fence: see
 * mcp/safety.ts) is closed with its own end line, and a note says how long the answer was, where it was
 * cut, and `hint` (how to read on). The tool's fences are found from the start of the answer: a start line
 * outside any fence opens one, and only its exact end line closes it, so fence-like text inside a fence
 * (a page's) is taken for what it is.
 */
export function capAnswer(text: string, hint: string, max: number = MAX_ANSWER_CHARS): string {
  if (text.length <= max) return text;
  const reserve = 600 + hint.length;
  const cut = endOf(text, 0, Math.max(1, max - reserve));
  let open: { kind: FenceKind; nonce: string } | null = null;
  for (let pos = 0; pos < cut; ) {
    const nl = text.indexOf('\n', pos);
    const end = nl < 0 ? text.length : nl;
    if (end > cut) break;
    const line = text.slice(pos, end);
    if (open === null) {
      const m = FENCE_START.exec(line);
      if (m) open = { kind: m[1] as FenceKind, nonce: m[2]! };
    } else if (line === fenceEnd(open.kind, open.nonce)) open = null;
    pos = end + 1;
  }
  const head = text.slice(0, cut).replace(/\n$/, '');
  const out = [head];
  if (open) out.push(fenceEnd(open.kind, open.nonce));
  out.push(
    `[kr cut this answer: it has ${text.length} characters, more than the ${max} one answer may hold; ` +
      `the first ${head.length} are shown${open ? ' (kr closed the fence the cut fell in)' : ''}.${hint ? ` ${hint}` : ''}]`,
  );
  return out.join('\n');
}
