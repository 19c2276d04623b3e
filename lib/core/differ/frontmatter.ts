/**
 * Frontmatter diff (docs/concepts.md "Section-aware diff"; each entry is `{"field", "from"?, "to"?}`).
 *
 * Where each field lands:
 *  - a field only in the new page → `added` `{field, to: <whole value>}`;
 *  - a field only in the old page → `removed` `{field, from: <whole value>}`;
 *  - a field whose value is a list on both sides → set semantics: order and repeats are ignored; each member
 *    only in the new list → `added` `{field, to: <member>}`, each member only in the old list → `removed`
 *    `{field, from: <member>}`; never `changed`. Members are compared structurally, so this holds for lists
 *    of strings (tags) and equally for lists of numbers or of mappings;
 *  - any other field in both pages whose value differs → `changed` `{field, from, to}` (scalars, mappings,
 *    and a list on one side with a non-list on the other). Values compare structurally, with mapping key
 *    order ignored (YAML mappings are unordered).
 * `from`/`to` are present exactly when that side has the value, so a field that was `null` shows `from: null`.
 * Order: fields in the new page's order, then fields only in the old page in its order; members in list
 * order (new list for `added`, old list for `removed`).
 */
import type { Frontmatter } from '../page/parse.ts';

export interface FieldChange {
  field: string;
  from?: unknown;
  to?: unknown;
}

export interface FrontmatterDiff {
  changed: FieldChange[];
  added: FieldChange[];
  removed: FieldChange[];
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

export function diffFrontmatter(a: Frontmatter, b: Frontmatter): FrontmatterDiff {
  const out: FrontmatterDiff = { changed: [], added: [], removed: [] };
  for (const field of Object.keys(b)) {
    const to = b[field];
    if (!hasOwn(a, field)) {
      out.added.push({ field, to });
      continue;
    }
    const from = a[field];
    if (Array.isArray(from) && Array.isArray(to)) {
      const oldMembers = memberMap(from);
      const newMembers = memberMap(to);
      for (const [id, member] of newMembers) if (!oldMembers.has(id)) out.added.push({ field, to: member });
      for (const [id, member] of oldMembers) if (!newMembers.has(id)) out.removed.push({ field, from: member });
    } else if (canonical(from) !== canonical(to)) {
      out.changed.push({ field, from, to });
    }
  }
  for (const field of Object.keys(a)) {
    if (!hasOwn(b, field)) out.removed.push({ field, from: a[field] });
  }
  return out;
}

/** Distinct members of a list by structural identity, first occurrence kept, in list order. */
function memberMap(list: readonly unknown[]): Map<string, unknown> {
  const m = new Map<string, unknown>();
  for (const item of list) {
    const id = canonical(item);
    if (!m.has(id)) m.set(id, item);
  }
  return m;
}

/**
 * A canonical string for JSON-like data: strings quoted, numbers by value (NaN and ±Infinity distinct from
 * null, -0 equal to 0), mapping keys sorted. Frontmatter depth is capped by the parser.
 */
export function canonical(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Object.is(v, -0) ? '0' : String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      break;
    default:
      return `?${typeof v}:${String(v)}`;
  }
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  const keys = Object.keys(v).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonical((v as Record<string, unknown>)[k])).join(',') + '}';
}
