/**
 * One page: its content (rendered, or raw), frontmatter, history with merged marks, the pages that link to it,
 * deleting it, and a notice when it changes on the server meanwhile (live events).
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { Commit } from '../../schema/wire/common.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import { pageName, showTime, showValue, splitFrontmatter, stringList } from './content.ts';
import { changesSince, nameList, useRepoEvents, type PushEventData } from './live.ts';
import { loadDraft } from './drafts.ts';
import { Markdown } from './markdown.tsx';
import { href } from './route.ts';
import { rememberMeta, type PageMeta } from './titles.ts';
import { Change, ConfirmButton, Crumbs, Empty, ErrorMessage, LiveNote, Loading, errorText, setFlash, shortSha, useFlash, useLoad } from './ui.tsx';

export function PageView({ api, repo, path }: { api: Api; repo: string; path: string }) {
  // A fresh view per page: the loaded media and the raw toggle of another page do not carry over.
  return <Page key={`${repo}\n${path}`} api={api} repo={repo} path={path} />;
}

/** Whether a push event names `path` (or may, among the paths it left out), and what it did to it. */
function touches(d: PushEventData, path: string): PushEventData['paths'][number]['status'] | 'maybe' | null {
  return d.paths.find((p) => p.path === path)?.status ?? (d.more ? 'maybe' : null);
}

/**
 * A page, live: it is read once the repository's event stream is open, and a push that changes it meanwhile
 * is announced (ChangedOnServer) with a link to the diff from the version shown to the new one.
 */
function Page({ api, repo, path }: { api: Api; repo: string; path: string }) {
  // The pushes that changed this page since the view opened, oldest first.
  const [changes, setChanges] = useState<PushEventData[]>([]);
  const deleting = useRef(false);
  const live = useRepoEvents(api, repo, {
    push: (d) => {
      if (deleting.current) return; // this view's own deletion: it leaves the page
      const status = touches(d, path);
      if (status === 'maybe') {
        // The push listed 200 paths and counted the rest: whether this page is among them, its history says.
        api.history(repo, path, 1).then(
          ({ commits: h }) => h[0]?.sha === d.sha && setChanges((c) => [...c, d]),
          () => undefined,
        );
      } else if (status) setChanges((c) => [...c, d]);
    },
  });
  const page = useLoad(() => api.readPage(repo, path), [api, repo, path, live.epoch], live.ready);
  const pages = useLoad(async () => (await api.pages(repo)).pages, [api, repo, live.epoch]);
  const history = useLoad(async () => (await api.history(repo, path, 200)).commits, [api, repo, path, live.epoch], live.ready);
  const merges = useMergedCommits(api, repo, path, history.data, changes);
  const [raw, setRaw] = useState(false);
  const [copied, setCopied] = useState<string>();
  const [deleteError, setDeleteError] = useState<string>();
  const flash = useFlash();
  const parsed = useMemo(() => (page.data ? splitFrontmatter(page.data.content) : null), [page.data]);
  const meta = useMemo<PageMeta>(
    () => (page.data ? rememberMeta(api.baseUrl, repo, path, page.data.sha, page.data.content) : {}),
    [api, repo, path, page.data],
  );
  // Links resolve against the pages at head; until they are known (or if they cannot be), against none.
  const pageSet = useMemo(() => (pages.data || pages.error ? new Set((pages.data ?? []).map((p) => p.path)) : null), [pages.data, pages.error]);
  const ctx = useMemo(() => (pageSet ? { repo, path, pages: pageSet } : undefined), [repo, path, pageSet]);
  const draft = useMemo(() => loadDraft(api.baseUrl, repo, path), [api, repo, path]);

  const copy = async () => {
    const link = location.href;
    try {
      await navigator.clipboard.writeText(link);
      setCopied('Link copied.');
    } catch {
      setCopied(`Copy this link: ${link}`);
    }
  };

  const remove = async (): Promise<boolean> => {
    if (!page.data) return false;
    setDeleteError(undefined);
    deleting.current = true;
    try {
      const answer = await api.push(repo, { message: `Delete ${meta.title ?? pageName(path)}`, merge: 'sections', files: [{ path, delete: true, parent_sha: page.data.sha }] });
      if (!answer.ok) {
        const c = answer.data.conflicts[0];
        setDeleteError(
          `Not deleted: the page changed since you opened it${c ? ` (it is now at ${shortSha(c.current_sha)})` : ''}. Reload it, read the change, and delete it then if you still want to.`,
        );
        deleting.current = false;
        return false;
      }
      setFlash(`Deleted ${path}.`);
      location.hash = href({ name: 'repo', repo });
      return true;
    } catch (e) {
      deleting.current = false;
      setDeleteError(`Not deleted: ${errorText(e)}`);
      return false;
    }
  };

  // What changed on the server since the version shown (everything, when the page was not there).
  const settled = page.data !== undefined || page.error !== undefined;
  const pending = settled ? changesSince(changes, page.data?.sha ?? null) : [];
  const showNew = () => {
    page.reload();
    history.reload();
  };

  const commits = history.data ?? [];
  const title = meta.title ?? pageName(path);
  return (
    <section>
      <Crumbs
        items={[
          { label: 'Repositories', to: '#/' },
          { label: repo, to: href({ name: 'repo', repo }) },
          { label: title },
        ]}
      />
      <h1 tabIndex={-1}>{page.data || page.error ? title : pageName(path)}</h1>
      {meta.summary && <p class="summary lead">{meta.summary}</p>}
      <p class="meta">
        <code>{path}</code>
      </p>
      {flash && (
        <p class="ok" role="status">
          {flash}
        </p>
      )}
      <LiveNote live={live} />
      {pending.length > 0 && <ChangedOnServer repo={repo} path={path} shown={page.data?.sha ?? null} pending={pending} onShow={showNew} />}
      {draft && (
        <p class="note">
          You have unsaved changes to this page in this browser (from {showTime(new Date(draft.savedAt).toISOString())}).{' '}
          <a href={href({ name: 'edit', repo, path })}>Continue editing</a>
        </p>
      )}
      <div class="toolbar" role="group" aria-label="Page view">
        <button type="button" aria-pressed={!raw} onClick={() => setRaw(false)}>
          Rendered
        </button>
        <button type="button" aria-pressed={raw} onClick={() => setRaw(true)}>
          Raw
        </button>
        <button type="button" onClick={copy}>
          Copy link
        </button>
        {page.data && (
          <a class="button" href={href({ name: 'edit', repo, path })}>
            Edit
          </a>
        )}
        {commits.length > 1 && <a href={href({ name: 'diff', repo, path })}>Last change</a>}
        {commits.length > 0 && <a href={href({ name: 'evolution', repo, path })}>Evolution</a>}
      </div>
      {copied && (
        <p class="ok" role="status">
          {copied}
        </p>
      )}
      <ErrorMessage message={page.error} />
      {page.loading && !page.data && <Loading what="the page" />}
      {page.data && parsed && (
        <>
          {parsed.frontmatterError && <p class="error">The frontmatter could not be read: {parsed.frontmatterError}</p>}
          {parsed.frontmatter && Object.keys(parsed.frontmatter).length > 0 && (
            <div class="scroll">
              <table class="frontmatter">
                <caption>Frontmatter</caption>
                <tbody>
                  {Object.entries(parsed.frontmatter).map(([k, v]) => (
                    <tr key={k}>
                      <th scope="row">{k}</th>
                      <td>{showValue(v)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {raw ? (
            <pre class="raw" aria-label="Raw page text">
              <code>{page.data.content}</code>
            </pre>
          ) : parsed.body.trim() === '' ? (
            <Empty>This page has no text besides its frontmatter.</Empty>
          ) : !ctx ? (
            <Loading what="the page's links" />
          ) : (
            <Markdown text={parsed.body} ctx={ctx} />
          )}
        </>
      )}

      <LinkedFrom api={api} repo={repo} path={path} sha={page.data?.sha} />

      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ErrorMessage message={history.error} />
        {history.loading && !history.data && <Loading what="history" />}
        {history.data && commits.length === 0 && <Empty>No commit has touched this page.</Empty>}
        {commits.length > 0 && (
          <ol class="list history">
            {commits.map((c, i) => {
              const prev = commits[i + 1];
              return (
                <li key={c.sha}>
                  <a class="title" href={href({ name: 'diff', repo, path, from: prev?.sha, to: c.sha })}>
                    {c.message}
                  </a>
                  <div class="meta">
                    <code title={c.sha}>{shortSha(c.sha)}</code>
                    <Change c={c} />
                    {prev ? <span>changed the page</span> : <span>created the page</span>}
                    {merges.has(c.sha) && (
                      <span class="badge merged" title="Written on top of changes made meanwhile, merged section by section">
                        merged
                      </span>
                    )}
                  </div>
                </li>
              );
            })}
          </ol>
        )}
        {commits.some((c) => merges.has(c.sha)) && (
          <p class="hint">Merged: the change was saved on top of changes made meanwhile, and merged with them section by section.</p>
        )}
      </section>

      {page.data && (
        <section aria-labelledby="delete-h" class="danger">
          <h2 id="delete-h">Delete this page</h2>
          <p class="hint">Deleting is a commit like any other: the page stays in the history, and can be written again.</p>
          <ErrorMessage message={deleteError} />
          <ConfirmButton
            label="Delete page"
            what={path}
            question={`Delete ${path}? It disappears from the repository at once (its history stays).`}
            confirmLabel="Yes, delete"
            onConfirm={remove}
          />
        </section>
      )}
    </section>
  );
}

/**
 * A push changed the page shown: who, and a link to the diff from the version shown to the new one (a page
 * that was missing, or is now deleted, has no such diff), and a button to show the new version.
 */
function ChangedOnServer(props: { repo: string; path: string; shown: string | null; pending: PushEventData[]; onShow: () => void }) {
  const { repo, path, shown, pending } = props;
  const last = pending[pending.length - 1]!;
  const deleted = last.paths.find((p) => p.path === path)?.status === 'deleted';
  const by = nameList(pending.map((c) => c.author || c.email));
  const merged = pending.some((c) => c.merged?.includes(path));
  const what = deleted ? 'This page was deleted on the server' : shown === null ? 'This page is now on the server' : 'This page changed on the server';
  return (
    <div class="note changed" role="status">
      <p class="flush">
        {what} (by {by}){merged ? ', merged section by section with changes made meanwhile' : ''}.
      </p>
      {!deleted && (
        <div class="row">
          {shown !== null && <a href={href({ name: 'diff', repo, path, from: shown, to: last.sha })}>See what changed</a>}
          <button type="button" class="inline-action" onClick={props.onShow}>
            Show the new version
          </button>
        </div>
      )}
    </div>
  );
}

/** Activity events read, newest first, looking for a page's merges: the feed keeps its newest 1,000. */
const MERGE_SCAN = [100, 400, 500];
/** Seconds an activity event may be recorded before its commit's time (clocks of one server; a margin). */
const CLOCK_SLACK_S = 60;

/**
 * The commits of a page's history that a section merge wrote, by their `sha` in the activity feed (a push's
 * `detail.merged` names the pages it merged), plus those announced live. The feed is read back only as far as
 * the oldest commit shown; merges older than the feed's retention, or pushed with the legacy key, are not known.
 */
function useMergedCommits(api: Api, repo: string, path: string, commits: Commit[] | undefined, live: PushEventData[]): Set<string> {
  const found = useLoad(async () => {
    const shas = new Set<string>();
    if (!commits || commits.length === 0) return shas;
    const oldest = Date.parse(commits[commits.length - 1]!.time) / 1000 - CLOCK_SLACK_S;
    let offset = 0;
    for (const limit of MERGE_SCAN) {
      const { events, total } = await api.activity(repo, { limit, offset });
      for (const e of events) if (e.action === 'push' && e.sha && stringList(e.detail?.merged).includes(path)) shas.add(e.sha);
      offset += events.length;
      const last = events[events.length - 1];
      if (!last || offset >= total || last.created_at < oldest) break;
    }
    return shas;
  }, [api, repo, path, commits]);
  return useMemo(() => {
    const all = new Set(found.data);
    for (const d of live) if (d.merged?.includes(path)) all.add(d.sha);
    return all;
  }, [found.data, live, path]);
}

/** The pages that link here, from the links route (docs/api.md "Links between pages"); `sha`: the version shown. */
function LinkedFrom({ api, repo, path, sha }: { api: Api; repo: string; path: string; sha: string | undefined }) {
  const links = useLoad<LinksResponse | null>(async () => (sha === undefined ? null : api.links(repo, path)), [api, repo, path, sha]);
  const data = links.data;
  if (sha === undefined) return null;
  const more = data?.incoming_more ?? 0;
  return (
    <section aria-labelledby="linked-h" class="linked">
      <h2 id="linked-h">Linked from</h2>
      <ErrorMessage message={links.error} />
      {links.loading && !data && <Loading what="the pages that link here" />}
      {data && data.incoming.length === 0 && <Empty>No page links here.</Empty>}
      {data && data.incoming.length > 0 && (
        <ul class="list" aria-label="Pages that link here">
          {data.incoming.map((l) => (
            <li key={l.path}>
              <a class="title" href={href({ name: 'page', repo, path: l.path })}>
                {l.title || pageName(l.path)}
              </a>
              <div class="meta">
                <code>{l.path}</code>
              </div>
            </li>
          ))}
        </ul>
      )}
      {more > 0 && (
        <p class="hint">
          And {more} more {more === 1 ? 'page links' : 'pages link'} here: the first {data!.incoming.length} by path are listed.
        </p>
      )}
    </section>
  );
}
