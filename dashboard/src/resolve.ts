/**
 * Resolving a save that the server could not merge (a 409 with `conflicting`, docs/api.md "Pages", the push route's "Section merge"): the
 * parts it names — frontmatter keys, the preamble, sections — shown three ways (base: the page where the
 * edit started; theirs: the page now; mine: the edit), one choice per part (take theirs, keep mine, or an
 * edited text), and the resolved page built from them.
 *
 * The resolved page is the same three-way merge the server runs (lib/core/differ/merge.ts), on inputs adjusted so
 * that every choice wins: in the base each conflicting part becomes theirs (so theirs "did not change" it),
 * and in mine it becomes the choice. Everything that merged cleanly merges exactly as on the server, and the
 * chosen parts land where the merge puts them. A page that is not a page on any side (no frontmatter), or a
 * conflict without a base, is one part: the whole text.
 */
import { parse as parseYaml, parseDocument, stringify, type Document } from 'yaml';
import { MERGE_FRONTMATTER, MERGE_PREAMBLE, mergePages } from '../../lib/core/differ/merge.ts';
import { normalizeText, parseFrontmatterYaml, parsePage, type Frontmatter } from '../../lib/core/page/parse.ts';

export interface ConflictItem {
  /** Unique among the items. */
  id: string;
  /** A frontmatter key, the frontmatter block as written (`block`: YAML between the fences), a body part, or the whole page. */
  kind: 'field' | 'block' | 'part' | 'whole';
  /** `frontmatter`, `frontmatter.<key>`, `_preamble` or a heading (`## Decision`); '' for the whole page. */
  name: string;
  /** Which occurrence of a repeated heading (0: the first). */
  occurrence: number;
  /** What people read: `Field “tags”`, `Section “Decision”`, … */
  label: string;
  /** The part in each version; null where that version does not have it. */
  base: string | null;
  theirs: string | null;
  mine: string | null;
}

export type Choice = { take: 'theirs' } | { take: 'mine' } | { take: 'edit'; text: string };

/** One part of a page body: the preamble or a section, keyed by heading and occurrence. */
interface Part {
  key: string;
  name: string;
  heading: string | null;
  body: string;
}

interface Split {
  fm: Frontmatter | null;
  fmRaw: string | null;
  parts: Part[];
}

const partKey = (name: string, n: number) => `${name}\u0000${n}`;

function split(text: string): Split {
  const p = parsePage(text);
  const parts: Part[] = [];
  if (p.preamble !== '') parts.push({ key: partKey(MERGE_PREAMBLE, 0), name: MERGE_PREAMBLE, heading: null, body: p.preamble });
  const seen = new Map<string, number>();
  for (const s of p.sections) {
    const n = seen.get(s.heading) ?? 0;
    seen.set(s.heading, n + 1);
    parts.push({ key: partKey(s.heading, n), name: s.heading, heading: s.heading, body: s.body });
  }
  return { fm: p.frontmatter, fmRaw: p.frontmatterRaw, parts };
}

function compose(fmYaml: string, parts: Part[]): string {
  const head = `---\n${fmYaml === '' ? '' : `${fmYaml}\n`}---\n`;
  const body = parts.map((p) => (p.heading === null ? p.body : p.body === '' ? p.heading : `${p.heading}\n${p.body}`)).join('\n\n');
  return head + (body === '' ? '' : `${body}\n`);
}

/** The frontmatter block with keys set (`{v}`) or removed (undefined), as YAML without fences. */
function withKeys(fmRaw: string | null, changes: Map<string, { v: unknown } | undefined>): string {
  if (changes.size === 0) return fmRaw ?? '';
  const doc: Document = parseDocument(fmRaw ?? '', { uniqueKeys: false, resolveKnownTags: false });
  if (doc.contents === null) doc.contents = doc.createNode({});
  for (const [key, value] of changes) {
    if (value === undefined) doc.delete(key);
    else doc.set(key, doc.createNode(value.v));
  }
  const yaml = doc.toString({ lineWidth: 0 }).replace(/\n$/, '');
  return yaml === '{}' ? '' : yaml;
}

const yamlOf = (fm: Frontmatter | null, key: string): string | null =>
  fm && Object.hasOwn(fm, key) ? stringify(fm[key], { lineWidth: 0 }).replace(/\n$/, '') : null;

const findPart = (s: Split, key: string) => s.parts.find((p) => p.key === key);

function setPart(parts: Part[], key: string, part: Part | null): void {
  const at = parts.findIndex((p) => p.key === key);
  if (part === null) {
    if (at >= 0) parts.splice(at, 1);
  } else if (at >= 0) parts[at] = part;
  else parts.push(part);
}

function partLabel(name: string, n: number): string {
  if (name === MERGE_PREAMBLE) return 'Text before the first section';
  const title = name.replace(/^##\s*/, '');
  return n === 0 ? `Section “${title}”` : `Section “${title}” (occurrence ${n + 1})`;
}

/** Whether the three versions are resolved as one whole text (see the module comment). */
function wholeText(base: string | null, theirs: string, mine: string, conflicting: string[] | undefined): boolean {
  if (base === null || !conflicting || conflicting.length === 0) return true;
  return [base, theirs, mine].some((t) => parsePage(t).frontmatter === null);
}

/**
 * The parts to decide. `base` is the page where the edit started ('' when it did not exist there; null when
 * unknown), `conflicting` the server's list (absent when it could not try a merge).
 */
export function conflictItems(base: string | null, theirs: string, mine: string, conflicting: string[] | undefined): ConflictItem[] {
  if (wholeText(base, theirs, mine, conflicting)) {
    return [{ id: 'whole', kind: 'whole', name: '', occurrence: 0, label: 'The whole page', base, theirs, mine }];
  }
  const b = split(base!);
  const t = split(theirs);
  const o = split(mine);
  const items: ConflictItem[] = [];
  for (const name of conflicting!) {
    if (name === MERGE_FRONTMATTER) {
      items.push({ id: name, kind: 'block', name, occurrence: 0, label: 'The frontmatter block (comments, key order or formatting)', base: b.fmRaw, theirs: t.fmRaw, mine: o.fmRaw });
      continue;
    }
    if (name.startsWith('frontmatter.')) {
      const key = name.slice('frontmatter.'.length);
      items.push({ id: name, kind: 'field', name, occurrence: 0, label: `Field “${key}”`, base: yamlOf(b.fm, key), theirs: yamlOf(t.fm, key), mine: yamlOf(o.fm, key) });
      continue;
    }
    const count = Math.max(...[b, t, o].map((s) => s.parts.filter((p) => p.name === name).length), 1);
    const found: ConflictItem[] = [];
    for (let n = 0; n < count; n++) {
      const key = partKey(name, n);
      const [vb, vt, vo] = [b, t, o].map((s) => findPart(s, key)?.body ?? null);
      const item: ConflictItem = { id: key, kind: 'part', name, occurrence: n, label: partLabel(name, n), base: vb!, theirs: vt!, mine: vo! };
      if (vt !== vo) found.push(item);
    }
    if (found.length === 0) {
      const key = partKey(name, 0);
      found.push({ id: key, kind: 'part', name, occurrence: 0, label: partLabel(name, 0), base: findPart(b, key)?.body ?? null, theirs: findPart(t, key)?.body ?? null, mine: findPart(o, key)?.body ?? null });
    }
    for (const item of found) items.push(item);
  }
  return items;
}

export type Resolution = { ok: true; text: string } | { ok: false; error: string };

/** The resolved page, from one choice per item (every item needs one). */
export function resolvePage(base: string | null, theirs: string, mine: string, items: ConflictItem[], choices: ReadonlyMap<string, Choice>): Resolution {
  for (const item of items) if (!choices.has(item.id)) return { ok: false, error: `Choose what to keep for ${item.label}.` };
  const whole = items.find((i) => i.kind === 'whole');
  if (whole) {
    const c = choices.get(whole.id)!;
    return { ok: true, text: c.take === 'theirs' ? theirs : c.take === 'mine' ? mine : normalizeText(c.text) };
  }
  const b = split(base!);
  const t = split(theirs);
  const o = split(mine);
  const fmBase = new Map<string, { v: unknown } | undefined>();
  const fmMine = new Map<string, { v: unknown } | undefined>();
  const partsBase = [...b.parts];
  const partsMine = [...o.parts];
  // The block as written, when it is an item: in the base it becomes theirs, in mine the choice.
  let blockBase: string | undefined;
  let blockMine: string | undefined;
  for (const item of items) {
    const c = choices.get(item.id)!;
    if (item.kind === 'block') {
      blockBase = t.fmRaw ?? '';
      if (c.take === 'edit') {
        blockMine = normalizeText(c.text).replace(/^---[ \t]*\n/, '').replace(/\n---[ \t]*\n?$/, '').replace(/\s+$/, '');
        const parsed = parseFrontmatterYaml(blockMine);
        if (!parsed.ok) return { ok: false, error: `${item.label}: not a YAML mapping (${parsed.error}).` };
      } else blockMine = (c.take === 'theirs' ? t.fmRaw : o.fmRaw) ?? '';
      continue;
    }
    if (item.kind === 'field') {
      const key = item.name.slice('frontmatter.'.length);
      const side = (s: Split) => (s.fm && Object.hasOwn(s.fm, key) ? { v: s.fm[key] } : undefined);
      fmBase.set(key, side(t));
      if (c.take === 'edit') {
        if (c.text.trim() === '') fmMine.set(key, undefined);
        else {
          try {
            fmMine.set(key, { v: parseYaml(c.text) as unknown });
          } catch (e) {
            return { ok: false, error: `${item.label}: the value is not valid YAML (${(e as Error).message.split('\n')[0]}).` };
          }
        }
      } else fmMine.set(key, side(c.take === 'theirs' ? t : o));
      continue;
    }
    const key = partKey(item.name, item.occurrence);
    const heading = item.name === MERGE_PREAMBLE ? null : item.name;
    const theirsPart = findPart(t, key);
    setPart(partsBase, key, theirsPart ? { ...theirsPart } : null);
    const body = c.take === 'theirs' ? (theirsPart?.body ?? null) : c.take === 'mine' ? (findPart(o, key)?.body ?? null) : normalizeText(c.text).replace(/\s+$/, '');
    setPart(partsMine, key, body === null ? null : { key, name: item.name, heading, body });
  }
  // With the block an item, the base's block is theirs as written (its keys hold theirs' values already).
  const baseYaml = blockBase !== undefined ? blockBase : withKeys(b.fmRaw, fmBase);
  const mineYaml = withKeys(blockMine !== undefined ? blockMine : o.fmRaw, fmMine);
  const merged = mergePages(compose(baseYaml, partsBase), theirs, compose(mineYaml, partsMine));
  if (!merged.clean) return { ok: false, error: `These parts still conflict: ${merged.conflicting.join(', ')}. Edit them, or edit the whole page.` };
  return { ok: true, text: merged.text };
}
