/**
 * A page as the editor holds it: the frontmatter's title, type, tags and summary as form fields, and the
 * markdown body as text. Turning the model back into a page changes only what was edited: the frontmatter
 * block is kept byte for byte while its four fields are untouched, and otherwise edited key by key in place
 * (yaml's document model: other keys, their order and comments stay). A page whose frontmatter cannot be read
 * is edited as a whole text.
 */
import { Document, isCollection, parseDocument } from 'yaml';
import { normalizeText, parseFrontmatterYaml, type Frontmatter } from '../../lib/core/page/parse.ts';

export const FIELD_KEYS = ['title', 'type', 'tags', 'summary'] as const;
export type FieldKey = (typeof FIELD_KEYS)[number];
export type Fields = Record<FieldKey, string>;

export const EMPTY_FIELDS: Fields = { title: '', type: '', tags: '', summary: '' };

export interface EditModel {
  /** `fields`: frontmatter fields plus body; `raw`: the whole text (its frontmatter could not be read). */
  mode: 'fields' | 'raw';
  fields: Fields;
  /** The markdown after the frontmatter (raw mode: the whole text). */
  body: string;
  /** The frontmatter block as it was (between the `---` lines); null when the page had none. */
  fmRaw: string | null;
  /** The fields as the page had them, to tell what was edited. */
  original: Fields;
  /** Fields whose value is not text (a tag list of mappings, a number…): shown, not editable, kept. */
  locked: FieldKey[];
  /** The frontmatter's other keys, kept as they are. */
  otherKeys: string[];
  /** Why the frontmatter cannot be edited as fields (raw mode). */
  problem?: string;
}

const FENCE = /^---[ \t]*$/;

/** A scalar frontmatter value as text; undefined for anything else. */
function scalarText(v: unknown): string | undefined {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function tagsText(v: unknown): string | undefined {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) {
    const items = v.map(scalarText);
    return items.every((t): t is string => t !== undefined && !t.includes(',')) ? items.join(', ') : undefined;
  }
  const one = scalarText(v);
  return one !== undefined && !one.includes(',') ? one : undefined;
}

/** `"a, b,, a"` → `["a", "b"]`. */
export function splitTags(text: string): string[] {
  return [...new Set(text.split(',').map((t) => t.trim()).filter((t) => t !== ''))];
}

export function modelOf(input: string): EditModel {
  const text = normalizeText(input);
  const lines = text.split('\n');
  const raw = (problem: string): EditModel => ({
    mode: 'raw',
    fields: { ...EMPTY_FIELDS },
    body: text,
    fmRaw: null,
    original: { ...EMPTY_FIELDS },
    locked: [],
    otherKeys: [],
    problem,
  });
  if (!FENCE.test(lines[0] ?? '')) {
    return { mode: 'fields', fields: { ...EMPTY_FIELDS }, body: text, fmRaw: null, original: { ...EMPTY_FIELDS }, locked: [], otherKeys: [] };
  }
  const close = lines.findIndex((l, i) => i > 0 && FENCE.test(l));
  if (close < 0) return raw('the frontmatter opened by --- is never closed');
  const fmRaw = lines.slice(1, close).join('\n');
  const parsed = parseFrontmatterYaml(fmRaw);
  if (!parsed.ok) return raw(parsed.error);
  const fm: Frontmatter = parsed.value;
  const fields = { ...EMPTY_FIELDS };
  const locked: FieldKey[] = [];
  for (const key of FIELD_KEYS) {
    const v = key === 'tags' ? tagsText(fm[key]) : scalarText(fm[key]);
    if (v === undefined) locked.push(key);
    else fields[key] = v;
  }
  return {
    mode: 'fields',
    fields,
    body: lines.slice(close + 1).join('\n'),
    fmRaw,
    original: { ...fields },
    locked,
    otherKeys: Object.keys(fm).filter((k) => !(FIELD_KEYS as readonly string[]).includes(k)),
  };
}

const same = (key: FieldKey, a: string, b: string) =>
  key === 'tags' ? splitTags(a).join('\n') === splitTags(b).join('\n') : a.trim() === b.trim();

/** The page text the model stands for. */
export function textOf(m: EditModel): string {
  if (m.mode === 'raw') return m.body;
  const edited = FIELD_KEYS.filter((k) => !m.locked.includes(k) && !same(k, m.fields[k], m.original[k]));
  if (m.fmRaw !== null && edited.length === 0) return `---\n${m.fmRaw === '' ? '' : `${m.fmRaw}\n`}---\n${m.body}`;
  const doc = m.fmRaw !== null ? parseDocument(m.fmRaw, { uniqueKeys: false, resolveKnownTags: false }) : new Document({});
  if (doc.contents === null) doc.contents = doc.createNode({});
  // A new block lists type first, as the client's page templates do.
  for (const key of m.fmRaw !== null ? edited : (['type', 'title', 'tags', 'summary'] as const)) {
    const value = m.fields[key].trim();
    if (key === 'tags') {
      const tags = splitTags(value);
      if (tags.length === 0) {
        doc.delete(key);
        continue;
      }
      const node = doc.createNode(tags);
      const before = doc.get(key, true);
      // A list written inline (`[a, b]`), or a new one, is written inline.
      if (isCollection(node) && (before === undefined || (isCollection(before) && before.flow))) node.flow = true;
      doc.set(key, node);
    } else if (value === '') doc.delete(key);
    else doc.set(key, value);
  }
  const yaml = doc.toString({ lineWidth: 0, flowCollectionPadding: false }).replace(/\n$/, '');
  if (m.fmRaw === null && (yaml === '{}' || yaml === '')) return m.body;
  return `---\n${yaml === '{}' ? '' : `${yaml}\n`}---\n${m.body}`;
}

/** A new page's model: its type and title set, no body yet. */
export function newPageModel(type: string, title: string): EditModel {
  const m = modelOf('');
  m.fields = { ...EMPTY_FIELDS, type, title };
  return m;
}
