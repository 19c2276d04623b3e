/**
 * The common shape of frontmatter read without the YAML library: top-level `key: value` lines whose values
 * are plain words, simply quoted strings, flow lists of those (`tags: [a, b]`) or block lists of those
 * (`- a` lines under `key:`). That is what nearly every page has, and the full YAML parser costs a third
 * of a millisecond per page (a tenth of a one-page push's time on the event loop, where the search index
 * parses the page).
 *
 * The answer is exactly what the YAML path (parseFrontmatterYaml: YAML 1.2 core schema, then plain data)
 * gives, or null — "not this simple shape, ask YAML" — for anything else: any character or form with a
 * meaning of its own (comments, anchors, tags, escapes, flow mappings, nesting, multi-line scalars, tabs),
 * any plain value the core schema would read as other than a string (null, booleans, numbers), and
 * duplicate or special keys. test/page-parse.test.ts holds it to the YAML path on generated documents.
 */

/** A key the core schema reads as this same string, and that is an ordinary property name. */
const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** Plain words the core schema reads as null or booleans, not strings (as keys, their property names differ). */
const NOT_STRINGS = new Set(['null', 'Null', 'NULL', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE']);
/**
 * A plain scalar that is surely a string: starts with a letter or `_` (so never a number, `.inf`, or an
 * indicator) and holds only letters, digits, spaces and punctuation without meaning in a block or flow
 * plain scalar. `'` is allowed inside (not first); `:`, `#`, `,` and brackets are not.
 */
const PLAIN = /^[\p{L}_][\p{L}\p{N}_ .\/()'+\-&?!=;@%*~]*$/u;
/** An ISO date: a string in the core schema (it has no timestamps). */
const DATE = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;
/** Simply quoted: no quote or backslash inside, and no control, line-separator or byte-order-mark character. */
const DOUBLE_QUOTED = /^"([^"\\\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*)"$/;
const SINGLE_QUOTED = /^'([^'\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*)'$/;

/** Without surrounding spaces (only spaces: YAML keeps a carriage return, and a tab is left to it). */
function trimSpaces(text: string): string {
  let a = 0;
  let b = text.length;
  while (a < b && text.charCodeAt(a) === 32) a++;
  while (b > a && text.charCodeAt(b - 1) === 32) b--;
  return text.slice(a, b);
}

/** A scalar value in block context, or undefined when it is not surely a string. */
function scalar(text: string): string | undefined {
  const v = trimSpaces(text);
  if (v === '') return undefined;
  const q = DOUBLE_QUOTED.exec(v) ?? SINGLE_QUOTED.exec(v);
  if (q) return q[1]!.includes('  ') || q[1]!.trim() !== q[1] ? undefined : q[1]!;
  if (DATE.test(v)) return v;
  if (!PLAIN.test(v) || NOT_STRINGS.has(v) || v.includes('  ')) return undefined;
  return v;
}

/** A flow list item: a scalar without commas (they separate items). */
function flowItems(text: string): string[] | undefined {
  const v = trimSpaces(text);
  if (!v.startsWith('[') || !v.endsWith(']')) return undefined;
  const inner = v.slice(1, -1);
  if (trimSpaces(inner) === '') return [];
  const items: string[] = [];
  for (const part of inner.split(',')) {
    const item = scalar(part);
    if (item === undefined) return undefined;
    items.push(item);
  }
  return items;
}

/** The frontmatter's data when it has the simple shape described above; null to ask the YAML parser. */
export function parseSimpleFrontmatter(raw: string, maxNodes: number): Record<string, string | string[] | null> | null {
  const lines = raw.split('\n');
  const out: Record<string, string | string[] | null> = {};
  let nodes = 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return null;
    const key = line.slice(0, colon);
    if (!KEY.test(key) || NOT_STRINGS.has(key) || key === '__proto__' || Object.hasOwn(out, key)) return null;
    const rest = line.slice(colon + 1);
    if (trimSpaces(rest) === '') {
      if (rest !== '') return null;
      // `key:` then `- item` lines (all at one indentation), or nothing: null.
      const items: string[] = [];
      let indent: string | null = null;
      while (i + 1 < lines.length) {
        const m = /^( *)- (.*)$/.exec(lines[i + 1]!);
        if (!m) break;
        if (indent === null) indent = m[1]!;
        else if (m[1] !== indent) return null;
        const item = scalar(m[2]!);
        if (item === undefined) return null;
        items.push(item);
        i++;
      }
      out[key] = indent === null ? null : items;
      nodes += 1 + items.length;
    } else {
      if (rest[0] !== ' ') return null;
      if (trimSpaces(rest).startsWith('[')) {
        const items = flowItems(rest);
        if (items === undefined) return null;
        out[key] = items;
        nodes += 1 + items.length;
      } else {
        const value = scalar(rest);
        if (value === undefined) return null;
        out[key] = value;
        nodes += 1;
      }
    }
    if (nodes > maxNodes) return null;
  }
  return out;
}
