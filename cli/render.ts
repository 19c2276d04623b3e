/**
 * Human renderings of section diffs (server or local), evolution summaries and conflict summaries.
 * Everything that came from a page or the server passes through `clean` before reaching the terminal.
 */
import { diffPages, type SectionDiff, type SectionEntry, type FieldChange } from '../lib/differ/index.ts';
import type { Commit } from '../schema/wire/common.ts';
import { clean, shortSha, type Paint } from './output.ts';

const CONTEXT = 2;

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

function fieldLines(fm: SectionDiff['frontmatter'], p: Paint): string[] {
  const out: string[] = [];
  const line = (mark: string, f: FieldChange, body: string) => `  ${mark} ${clean(f.field)}: ${body}`;
  for (const f of fm.changed) out.push(p.yellow(line('~', f, `${value(f.from)} → ${value(f.to)}`)));
  for (const f of fm.added) out.push(p.green(line('+', f, value(f.to))));
  for (const f of fm.removed) out.push(p.red(line('-', f, value(f.from))));
  return out;
}

function entryHeader(e: SectionEntry, p: Paint): string {
  const heading = e.heading === '_preamble' ? '(text before the first heading)' : clean(e.heading);
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
}

/** A SectionDiff as text: frontmatter changes, then each section with its changed lines. */
export function renderDiff(diff: SectionDiff, opts: RenderDiffOptions, p: Paint): string {
  const out: string[] = [p.bold(`${clean(opts.path)}  ${opts.fromLabel} → ${opts.toLabel}`)];
  if (diff.parse_fallback) out.push(p.dim('(frontmatter missing or unparseable on one side: whole-file diff)'));
  const fm = fieldLines(diff.frontmatter, p);
  if (fm.length) out.push('frontmatter', ...fm);
  const entries = [...(diff.preamble ? [diff.preamble] : []), ...diff.sections];
  let changed = fm.length;
  for (const e of entries) {
    if (e.status === 'unchanged') {
      if (opts.showUnchanged) out.push(entryHeader(e, p));
      continue;
    }
    changed++;
    out.push(entryHeader(e, p), ...lineDiffLines(e.line_diff, p));
  }
  if (changed === 0) out.push(p.dim('no changes'));
  if (diff.truncated) out.push(p.dim('(diff shortened by the server to bound its work)'));
  return out.join('\n');
}

/** One line per changed section: `modified ## Decision`. */
export function summaryLines(diff: SectionDiff, p: Paint, indent = '    '): string[] {
  const out: string[] = [];
  const fm = diff.frontmatter;
  const fields = [
    ...fm.changed.map((f) => `~${f.field}`),
    ...fm.added.map((f) => `+${f.field}`),
    ...fm.removed.map((f) => `-${f.field}`),
  ];
  if (fields.length) out.push(`${indent}${p.yellow('frontmatter'.padEnd(9))} ${clean(fields.join(' '))}`);
  for (const e of [...(diff.preamble ? [diff.preamble] : []), ...diff.sections]) {
    if (e.status === 'unchanged') continue;
    const heading = e.heading === '_preamble' ? '(preamble)' : clean(e.heading);
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
    const heading = e.heading === '_preamble' ? '(text before the first heading)' : clean(e.heading);
    out.push(`    ${label(e.heading, e.status)}  ${heading}`);
  }
  if (out.length === 0) out.push(`    ${p.dim('same content on both sides')}`);
  return out;
}
