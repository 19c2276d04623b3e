/**
 * Pages' titles and summaries for lists and headings. The pages route names each page with its last commit,
 * not its title, so the title comes from the page's own frontmatter: read once per (page, commit) and kept
 * for the tab (sessionStorage), since a page's text at a commit never changes. A list asks for at most
 * TITLE_READS pages it has not seen, a few at a time, so a large repository never spends the rate limit.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { pageMeta } from './content.ts';

export interface PageMeta {
  title?: string;
  summary?: string;
}

/** Unseen pages a list reads for their titles; the others show their file name. */
export const TITLE_READS = 60;
/** Pages read at once. */
const PARALLEL = 4;
/** Entries kept for the tab. */
const KEPT = 2000;
const STORE = 'kr.titles';

type Cache = Map<string, PageMeta>;
let cache: Cache | null = null;

const keyOf = (server: string, repo: string, path: string, sha: string) => JSON.stringify([server, repo, path, sha]);

function load(): Cache {
  if (cache) return cache;
  cache = new Map();
  try {
    const raw = sessionStorage.getItem(STORE);
    if (raw) for (const [k, v] of JSON.parse(raw) as [string, PageMeta][]) cache.set(k, v);
  } catch {
    // unreadable: start afresh
  }
  return cache;
}

function persist(): void {
  const c = load();
  while (c.size > KEPT) c.delete(c.keys().next().value!);
  try {
    sessionStorage.setItem(STORE, JSON.stringify([...c]));
  } catch {
    // full or unavailable: the memory copy still serves this tab
  }
}

/** Forgets every title and summary kept (signing out: they are the pages' own words). */
export function forgetMetas(): void {
  cache = new Map();
  try {
    sessionStorage.removeItem(STORE);
  } catch {
    // nothing kept
  }
}

/** Remembers what a page at a commit says about itself (the page view calls it with the text it read). */
export function rememberMeta(server: string, repo: string, path: string, sha: string, text: string): PageMeta {
  const m = pageMeta(text);
  const meta: PageMeta = {};
  if (m.title) meta.title = m.title;
  if (m.summary) meta.summary = m.summary;
  load().set(keyOf(server, repo, path, sha), meta);
  persist();
  return meta;
}

export function knownMeta(server: string, repo: string, path: string, sha: string): PageMeta | undefined {
  return load().get(keyOf(server, repo, path, sha));
}

/**
 * The titles and summaries of `pages` (path → meta), filled in as they arrive; pages beyond TITLE_READS unseen
 * ones, or whose read failed, are absent.
 */
export function usePageMetas(api: Api, repo: string, pages: { path: string; sha: string }[] | undefined): Map<string, PageMeta> {
  const [metas, setMetas] = useState<Map<string, PageMeta>>(() => new Map());
  useEffect(() => {
    if (!pages) return;
    let live = true;
    const known = new Map<string, PageMeta>();
    const wanted: { path: string; sha: string }[] = [];
    for (const p of pages) {
      const m = knownMeta(api.baseUrl, repo, p.path, p.sha);
      if (m) known.set(p.path, m);
      else if (wanted.length < TITLE_READS) wanted.push(p);
    }
    setMetas(new Map(known));
    let next = 0;
    const worker = async () => {
      while (live && next < wanted.length) {
        const p = wanted[next++]!;
        try {
          const { content: text, sha } = await api.readPage(repo, p.path);
          const meta = rememberMeta(api.baseUrl, repo, p.path, sha || p.sha, text);
          if (live) setMetas((old) => new Map(old).set(p.path, meta));
        } catch {
          // the file name stands in
        }
      }
    };
    for (let i = 0; i < PARALLEL; i++) void worker();
    return () => {
      live = false;
    };
  }, [api, repo, pages]);
  return metas;
}

/**
 * One page's meta (the diff and evolution views' headings): known, else read; undefined while unknown, or
 * when the page is not at head (it is never asked for then: no 404).
 */
export function usePageMeta(api: Api, repo: string, path: string): PageMeta | undefined {
  const [meta, setMeta] = useState<PageMeta>();
  useEffect(() => {
    let live = true;
    setMeta(undefined);
    (async () => {
      const at = (await api.pages(repo)).pages.find((p) => p.path === path);
      if (!at) return undefined;
      const known = knownMeta(api.baseUrl, repo, path, at.sha);
      if (known) return known;
      const { content: text, sha } = await api.readPage(repo, path);
      return rememberMeta(api.baseUrl, repo, path, sha || at.sha, text);
    })().then(
      (m) => live && setMeta(m),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [api, repo, path]);
  return meta;
}
