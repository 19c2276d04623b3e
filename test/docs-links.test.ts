/**
 * Every relative link of the project's own documentation (README.md and docs/*.md) leads somewhere: the
 * file or folder exists, and a `#anchor` names a heading of the page it points at, made the way GitHub makes
 * heading anchors (lowercase, punctuation dropped, spaces to '-', a repeated heading numbered -1, -2, …).
 * Links inside code (fenced blocks, `inline code`) are text, not links, and external links are not fetched.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parsePage } from '../lib/core/page/parse.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The text with fenced code blocks and inline code spans blanked out (line count kept). */
function withoutCode(text: string): string {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (m && m[1]![0] === fence[0] && m[1]!.length >= fence.length && line.trim() === m[1]) fence = null;
      out.push('');
    } else if (m) {
      fence = m[1]!;
      out.push('');
    } else {
      out.push(line.replace(/(`+)[\s\S]*?\1/g, ''));
    }
  }
  return out.join('\n');
}

/** GitHub's anchor for a heading's text. */
export function slug(heading: string): string {
  // Outside code spans a link shows its text and an HTML tag vanishes; a code span shows its text as it is.
  const text = heading
    .split(/(`+[^`]*?`+)/)
    .map((part, i) =>
      i % 2 === 1
        ? part.replace(/^`+|`+$/g, '')
        : part.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<\/?[A-Za-z][\w-]*[^>]*>/g, ''),
    )
    .join('')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors of a markdown page's headings (ATX headings outside code), numbered as GitHub numbers repeats. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length && line.trim() === f[1]) fence = null;
      continue;
    }
    if (f) {
      fence = f[1]!;
      continue;
    }
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Broken relative links of one page: `<target>: <why>`. */
export function brokenLinks(file: string, text: string, read: (path: string) => string | null, exists: (path: string) => boolean): string[] {
  const broken: string[] = [];
  const links = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
  for (const m of withoutCode(text).matchAll(links)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // external
    const hash = target.indexOf('#');
    const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    const path = pathPart === '' ? file : resolve(dirname(file), pathPart.split('?')[0]!);
    if (!exists(path)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor === null) continue;
    if (!path.endsWith('.md')) {
      broken.push(`${target}: an anchor into a file that is not markdown`);
      continue;
    }
    const page = read(path);
    if (page === null || !anchorsOf(page).has(anchor)) broken.push(`${target}: no heading with the anchor #${anchor}`);
  }
  return broken;
}

function docPages(): string[] {
  const docs = join(ROOT, 'docs');
  return [join(ROOT, 'README.md'), ...readdirSync(docs).filter((f) => f.endsWith('.md')).map((f) => join(docs, f))];
}

describe('documentation links', () => {
  it('anchors follow GitHub: lowercase, punctuation dropped, spaces to -, repeats numbered', () => {
    expect(slug('Users and tokens on Workers')).toBe('users-and-tokens-on-workers');
    expect(slug('Behind a reverse proxy: TLS, client addresses, CORS')).toBe('behind-a-reverse-proxy-tls-client-addresses-cors');
    expect(slug('Agents: `kr mcp`')).toBe('agents-kr-mcp');
    expect(slug('`GET /v1/repos/{id}/pages/<path>`')).toBe('get-v1reposidpagespath');
    expect(slug('Hosted build: billing')).toBe('hosted-build-billing');
    expect(slug('W7·page, a_b')).toBe('w7page-a_b');
    expect(slug('See [the API](api.md) <em>now</em>')).toBe('see-the-api-now');
    expect([...anchorsOf('# A\n## Measured\n```\n## Not a heading\n```\n### Measured\n')]).toEqual(['a', 'measured', 'measured-1']);
  });

  it('finds a missing file, a missing anchor, and leaves code and external links alone', () => {
    const pages: Record<string, string> = {
      '/d/a.md': '# A\n## Two words\n',
      '/d/b.md': [
        '[ok](a.md) [ok](a.md#two-words) [ok](#b) [ext](https://example.com/x#y) ![img](img/x.png)',
        '[gone](c.md) [bad anchor](a.md#three-words) [here](#nowhere)',
        '`[code](missing.md)`',
        '```',
        '[fenced](missing.md)',
        '```',
        '# B',
      ].join('\n'),
    };
    const files = new Set([...Object.keys(pages), '/d/img/x.png']);
    const broken = brokenLinks('/d/b.md', pages['/d/b.md']!, (p) => pages[p] ?? null, (p) => files.has(p));
    expect(broken).toEqual(['c.md: no such file', 'a.md#three-words: no heading with the anchor #three-words', '#nowhere: no heading with the anchor #nowhere']);
  });

  it('every relative link and #anchor in README.md and docs/*.md points at something', () => {
    const pages = docPages();
    expect(pages.map((p) => relative(ROOT, p))).toEqual(expect.arrayContaining(['README.md', 'docs/README.md', 'docs/self-hosting.md', 'docs/architecture.md']));
    const read = (p: string): string | null => (existsSync(p) ? readFileSync(p, 'utf8') : null);
    const broken = pages.flatMap((p) => brokenLinks(p, readFileSync(p, 'utf8'), read, existsSync).map((b) => `${relative(ROOT, p)}: ${b}`));
    expect(broken).toEqual([]);
  });

  it('docs/README.md lists every page of docs/', () => {
    const index = readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8');
    const listed = new Set([...withoutCode(index).matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]));
    const pages = readdirSync(join(ROOT, 'docs')).filter((f) => (f.endsWith('.md') && f !== 'README.md') || f === 'openapi.json');
    expect(pages.filter((p) => !listed.has(p))).toEqual([]);
  });

  it('README.md stays short, publishes the container on loopback, and its example page is a valid page', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThan(300);
    const runs = readme.split('\n').filter((l) => l.startsWith('docker run'));
    expect(runs.length).toBeGreaterThan(0);
    for (const l of runs) expect(l).toContain(' -p 127.0.0.1:8080:8080 ');
    const example = /```markdown\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(example.trimEnd().split('\n')).toHaveLength(10);
    const page = parsePage(example);
    expect(page.frontmatterProblem).toBeUndefined();
    expect(page.frontmatter).toMatchObject({ title: 'Decision log' });
    expect(page.sections.map((sec) => sec.heading)).toEqual(['## Storage', '## Open questions']);
  });
});
