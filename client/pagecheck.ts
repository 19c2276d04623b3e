/**
 * Checks on a page's text before it is pushed. A page whose frontmatter does not parse is still
 * pushed — the server keeps any text — but the user is told which file and which line, because until it is
 * fixed every diff of the page is a whole-file diff (`parse_fallback`).
 */
import { parseDocument } from 'yaml';
import { parsePage } from '../lib/core/page/parse.ts';

export interface FrontmatterTrouble {
  /** 1-based line of the page file where the trouble is. */
  line: number;
  /** What is wrong, in words. */
  problem: string;
}

/** Drops yaml's own position (`at line 2, column 1:`): it counts from the block, not from the file. */
const withoutPosition = (message: string): string =>
  message
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .trim();

/**
 * Why the page's frontmatter block is unusable, and where; null when it parses or when the page simply has
 * none (a page without a `---` first line is not broken).
 */
export function frontmatterTrouble(text: string): FrontmatterTrouble | null {
  const page = parsePage(text);
  if (page.frontmatter !== null) return null;
  const problem = page.frontmatterProblem;
  if (problem === undefined || problem === 'missing') return null;
  if (problem === 'unterminated') {
    return { line: 1, problem: 'the "---" line that opens the frontmatter is never closed by another "---" line' };
  }
  // The block starts on the file's second line.
  let line = 2;
  let detail = page.frontmatterError ?? 'the frontmatter is not a YAML mapping';
  if (problem === 'invalid' && page.frontmatterRaw !== null) {
    try {
      const doc = parseDocument(page.frontmatterRaw, { prettyErrors: true, uniqueKeys: true, logLevel: 'silent', resolveKnownTags: false });
      const first = doc.errors[0];
      if (first?.linePos) {
        const blockLines = page.frontmatterRaw.split('\n').length;
        line = 1 + Math.min(first.linePos[0].line, blockLines);
        detail = `invalid YAML: ${withoutPosition(first.message)}`;
      }
    } catch {
      // the parser's own message stays
    }
  }
  return { line, problem: detail };
}
