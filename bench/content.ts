/**
 * Deterministic page content for the benchmark: markdown pages with YAML frontmatter and `## ` sections,
 * built from a seeded generator so every run (and the git reference) sees the same bytes.
 */

/** mulberry32: small, fast, seeded. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

const WORDS = (
  'service repository page section decision context status owner review deploy cache index commit branch ' +
  'history latency budget migration schema client server token session invite member activity pull push ' +
  'diff blame evolution frontmatter heading paragraph outline summary risk mitigation rollout metric alert ' +
  'runbook incident timeline backlog milestone estimate dependency interface contract storage durable lock ' +
  'queue worker request response header payload version release note design tradeoff option consequence'
).split(' ');

const HEADINGS = [
  'Context', 'Decision', 'Status', 'Consequences', 'Alternatives', 'Rollout', 'Risks', 'Open questions',
  'Background', 'Design', 'Interfaces', 'Testing', 'Operations', 'Metrics', 'Timeline', 'References',
];

/** A sentence of 8–16 words from the benchmark's vocabulary. */
export function sentence(rng: Rng): string {
  const n = rng.int(8, 16);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(rng.pick(WORDS));
  const s = words.join(' ');
  return `${s[0]!.toUpperCase()}${s.slice(1)}.`;
}

export interface PageSection {
  heading: string;
  lines: string[];
}

/** A page kept as a model so that later revisions can change one line of one section. */
export class PageModel {
  revision = 0;
  constructor(
    readonly title: string,
    readonly tags: string[],
    readonly intro: string,
    readonly sections: PageSection[],
  ) {}

  render(): string {
    const out = ['---', `title: ${this.title}`, 'type: note', `tags: [${this.tags.join(', ')}]`, '---', '', `# ${this.title}`, '', this.intro, ''];
    for (const s of this.sections) {
      out.push(`## ${s.heading}`, '', ...s.lines, '');
    }
    return out.join('\n');
  }

  /** A new revision: one line of one section rewritten (section chosen by `k`). */
  touch(rng: Rng, k: number): string {
    this.revision++;
    const s = this.sections[k % this.sections.length]!;
    const j = rng.int(0, s.lines.length - 1);
    s.lines[j] = `Revision ${this.revision}: ${sentence(rng)}`;
    return this.render();
  }

  /** A new revision that adds a section (blame then attributes it to this revision). */
  addSection(rng: Rng, heading: string): string {
    this.revision++;
    this.sections.push({ heading, lines: [sentence(rng), sentence(rng)] });
    return this.render();
  }
}

/**
 * A page of `minBytes`–`maxBytes` of markdown (approximately; the text is cut at line boundaries) with
 * `minSections`–`maxSections` sections.
 */
export function makePage(rng: Rng, title: string, opts: { minBytes?: number; maxBytes?: number; minSections?: number; maxSections?: number } = {}): PageModel {
  const target = rng.int(opts.minBytes ?? 2048, opts.maxBytes ?? 3968);
  const nSections = rng.int(opts.minSections ?? 4, opts.maxSections ?? 8);
  const headings = [...HEADINGS].sort(() => rng.next() - 0.5).slice(0, nSections);
  const page = new PageModel(title, [rng.pick(WORDS), rng.pick(WORDS)], sentence(rng), headings.map((h) => ({ heading: h, lines: [sentence(rng)] })));
  // Grow sections round-robin until the page reaches its target size.
  let i = 0;
  while (Buffer.byteLength(page.render()) < target) {
    page.sections[i % nSections]!.lines.push(sentence(rng));
    i++;
  }
  return page;
}
