/**
 * Human renderings of section diffs (server or local), evolution summaries and conflict summaries.
 * Everything that came from a page or the server passes through `clean` before reaching the terminal.
 *
 * One name for the text before the first `## ` heading in every view: {@link PREAMBLE_LABEL}. A new member
 * of a list-valued frontmatter field (a tag) reads as an added list item, not as a new field: the wire
 * format gives both as `{field, to}`, so the renderers are told which fields are lists
 * ({@link listFieldsOf}), and otherwise tell them apart as well as the diff allows.
 */
import { diffPages, parsePage, type SectionDiff, type SectionEntry, type FieldChange } from '../lib/core/differ/index.ts';
import type { Commit } from '../schema/wire/common.ts';
import { clean, shortSha, type Paint } from './output.ts';

const CONTEXT = 2;

/** How every view names the preamble entry (`_preamble` on the wire). */
export const PREAMBLE_LABEL = '(preamble)';

/** How a diff whose frontmatter does not parse names its one entry, the whole file (`_preamble` on the wire). */
export const WHOLE_FILE_LABEL = '(whole file)';

const headingLabel = (heading: string, fallback = false): string =>
  heading === '_preamble' ? (fallback ? WHOLE_FILE_LABEL : PREAMBLE_LABEL) : clean(heading);

/** The frontmatter fields whose value is a list in any of the given page texts. */
export function listFieldsOf(...texts: Array<string | undefined>): Set<string> {
  const out = new Set<string>();
  for (const t of texts) {
    if (t === undefined) continue;
    const fm = parsePage(t).frontmatter;
    if (fm) for (const [k, v] of Object.entries(fm)) if (Array.isArray(v)) out.add(k);
  }
  return out;
}

/**
 * The fields whose `added`/`removed` entries are list members: those known to be lists, and any field
 * that has both an added and a removed entry (a whole field cannot be both). A field whose entry carries a
 * list value is a whole new (or dropped) field.
 */
function memberFields(fm: SectionDiff['frontmatter'], lists: ReadonlySet<string> | undefined): Set<string> {
  const out = new Set<string>(lists ?? []);
  const added = new Set(fm.added.map((f) => f.field));
  for (const f of fm.removed) if (added.has(f.field)) out.add(f.field);
  const counts = new Map<string, number>();
  for (const f of [...fm.added, ...fm.removed]) counts.set(f.field, (counts.get(f.field) ?? 0) + 1);
  for (const [field, n] of counts) if (n > 1) out.add(field);
  return out;
}

const isMember = (f: FieldChange, members: ReadonlySet<string>, side: 'to' | 'from'): boolean => members.has(f.field) && !Array.isArray(f[side]);

/** Whether a diff has frontmatter entries that could be list members (worth learning the list fields). */
export const hasFieldAddsOrRemoves = (d: SectionDiff): boolean => d.frontmatter.added.length + d.frontmatter.removed.length > 0;

function value(v: unknown): string {
  if (v === undefined) return '(none)';
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? String(v);
  return clean(s.length > 80 ? s.slice(0, 77) + '...' : s);
}

const statusColour = (p: Paint, status: string): string =>
  status === 'added' ? p.green(status) : status === 'removed' ? p.red(status) : status === 'unchanged' ? p.dim(status) : p.yellow(status);

const who = (c: Commit): string => `${clean(c.author)} <${clean(c.email)}> ${shortSha(c.sha)} ${clean(c.time)}`;

/** The changed lines of a line diff with a little context; runs of unchanged lines become `…`. */
export function lineDiffLines(lineDiff: string | undefined, p: Paint, indent = '    '): string[] {
  if (!lineDiff) return [];
  const lines = lineDiff.split('\n');
  const keep = new Uint8Array(lines.length);
  lines.forEach((l, i) => {
    if (!l.startsWith('  ')) for (let j = Math.max(0, i - CONTEXT); j <= Math.min(lines.length - 1, i + CONTEXT); j++) keep[j] = 1;
  });
  const out: string[] = [];
  let skipped = false;
  lines.forEach((l, i) => {
    if (!keep[i]) {
      skipped = true;
      return;
    }
    if (skipped) out.push(indent + p.dim('…'));
    skipped = false;
    const text = indent + clean(l);
    out.push(l.startsWith('+ ') ? p.green(text) : l.startsWith('- ') ? p.red(text) : text);
  });
  if (skipped && out.length > 0) out.push(indent + p.dim('…'));
  return out;
}

function fieldLines(fm: SectionDiff['frontmatter'], p: Paint, lists?: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const members = memberFields(fm, lists);
  const line = (mark: string, f: FieldChange, body: string) => `  ${mark} ${clean(f.field)}: ${body}`;
  for (const f of fm.changed) out.push(p.yellow(line('~', f, `${value(f.from)} → ${value(f.to)}`)));
  for (const f of fm.added) {
    out.push(isMember(f, members, 'to') ? p.green(line('~', f, `added list item ${value(f.to)}`)) : p.green(line('+', f, `${value(f.to)} (new field)`)));
  }
  for (const f of fm.removed) {
    out.push(isMember(f, members, 'from') ? p.red(line('~', f, `removed list item ${value(f.from)}`)) : p.red(line('-', f, `${value(f.from)} (field removed)`)));
  }
  return out;
}

function entryHeader(e: SectionEntry, p: Paint, fallback = false): string {
  const heading = headingLabel(e.heading, fallback);
  let s = `${p.bold(heading)}  ${statusColour(p, e.status)}`;
  if (e.status === 'renamed' && e.old_heading) s += ` from ${clean(e.old_heading)}`;
  if (e.introduced_by) s += p.dim(`  [introduced by ${who(e.introduced_by)}]`);
  return s;
}

export interface RenderDiffOptions {
  path: string;
  fromLabel: string;
  toLabel: string;
  /** Print unchanged sections' headings too (they carry blame). */
  showUnchanged?: boolean;
  /** Frontmatter fields known to be lists ({@link listFieldsOf}). */
  listFields?: ReadonlySet<string>;
}

/** A SectionDiff as text: frontmatter changes, then each section with its changed lines. */
export function renderDiff(diff: SectionDiff, opts: RenderDiffOptions, p: Paint): string {
  const out: string[] = [p.bold(`${clean(opts.path)}  ${opts.fromLabel} → ${opts.toLabel}`)];
  if (diff.parse_fallback) out.push(p.dim('(frontmatter missing or unparseable on one side: whole-file diff)'));
  const fm = fieldLines(diff.frontmatter, p, opts.listFields);
  if (fm.length) out.push('frontmatter', ...fm);
  const entries = [...(diff.preamble ? [diff.preamble] : []), ...diff.sections];
  let changed = fm.length;
  for (const e of entries) {
    if (e.status === 'unchanged') {
      if (opts.showUnchanged) out.push(entryHeader(e, p, diff.parse_fallback));
      continue;
    }
    changed++;
    out.push(entryHeader(e, p, diff.parse_fallback), ...lineDiffLines(e.line_diff, p));
  }
  if (changed === 0) out.push(p.dim('no changes'));
  if (diff.truncated) out.push(p.dim('(diff shortened by the server to bound its work)'));
  return out.join('\n');
}

/** One line per changed section: `modified ## Decision`; list items as `tags[+"backups"]`. */
export function summaryLines(diff: SectionDiff, p: Paint, indent = '    ', lists?: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const fm = diff.frontmatter;
  const members = memberFields(fm, lists);
  const fields = [
    ...fm.changed.map((f) => `~${f.field}`),
    ...fm.added.map((f) => (isMember(f, members, 'to') ? `${f.field}[+${value(f.to)}]` : `+${f.field}`)),
    ...fm.removed.map((f) => (isMember(f, members, 'from') ? `${f.field}[-${value(f.from)}]` : `-${f.field}`)),
  ];
  if (fields.length) out.push(`${indent}${p.yellow('frontmatter'.padEnd(9))} ${clean(fields.join(' '))}`);
  for (const e of [...(diff.preamble ? [diff.preamble] : []), ...diff.sections]) {
    if (e.status === 'unchanged') continue;
    const heading = headingLabel(e.heading, diff.parse_fallback);
    const from = e.status === 'renamed' && e.old_heading ? ` (was ${clean(e.old_heading)})` : '';
    const blame = e.introduced_by ? p.dim(`  [${clean(e.introduced_by.author)} ${shortSha(e.introduced_by.sha)}]`) : '';
    out.push(`${indent}${statusColour(p, e.status).padEnd(9 + (statusColour(p, e.status).length - e.status.length))} ${heading}${from}${blame}`);
  }
  return out;
}

const entriesOf = (d: SectionDiff): SectionEntry[] => [...(d.preamble ? [d.preamble] : []), ...d.sections];

/**
 * What differs between our file and the server's, section by section. With the common ancestor each
 * difference is attributed: changed by you, on the server, or by both.
 */
export function conflictSummary(ours: string, theirs: string, ancestor: string | undefined, p: Paint): string[] {
  const both = diffPages(theirs, ours);
  const side = (d: SectionDiff | null) => {
    const m = new Map<string, string>();
    if (!d) return m;
    for (const e of entriesOf(d)) if (e.status !== 'unchanged') m.set(e.heading, e.status);
    for (const f of [...d.frontmatter.changed, ...d.frontmatter.added, ...d.frontmatter.removed]) m.set(`frontmatter ${f.field}`, 'changed');
    return m;
  };
  const mine = ancestor !== undefined ? side(diffPages(ancestor, ours)) : null;
  const server = ancestor !== undefined ? side(diffPages(ancestor, theirs)) : null;
  const label = (key: string, status: string): string => {
    const red = (t: string) => p.red(t.padEnd(22));
    if (mine && server) {
      const a = mine.has(key);
      const b = server.has(key);
      if (a && b) return red('changed by both');
      if (a) return 'changed by you'.padEnd(22);
      if (b) return 'changed on the server'.padEnd(22);
    }
    if (status === 'added') return 'only in your file'.padEnd(22);
    if (status === 'removed') return 'only on the server'.padEnd(22);
    if (status === 'renamed') return 'renamed in your file'.padEnd(22);
    return red('differs');
  };
  const out: string[] = [];
  if (both.parse_fallback) out.push(`    ${p.dim('(no usable frontmatter on one side: the whole file differs)')}`);
  const fields = new Set([...both.frontmatter.changed, ...both.frontmatter.added, ...both.frontmatter.removed].map((f) => f.field));
  for (const field of fields) out.push(`    ${label(`frontmatter ${field}`, 'modified')}  frontmatter: ${clean(field)}`);
  for (const e of entriesOf(both)) {
    if (e.status === 'unchanged') continue;
    out.push(`    ${label(e.heading, e.status)}  ${headingLabel(e.heading, both.parse_fallback)}`);
  }
  if (out.length === 0) out.push(`    ${p.dim('same content on both sides')}`);
  return out;
}
