/**
 * Writing pages in the browser: the editor view (#/repo/<id>/edit/<path>) and the new-page form
 * (#/repo/<id>/new).
 *
 * The frontmatter's title, type, tags and summary are form fields, the body is edited in CodeMirror
 * (codemirror.ts, loaded on demand; a plain text area stands in if it cannot load), with a preview. Save is
 * one push of the page with `parent_sha` (the page's last commit when the edit started) and
 * `merge: "sections"`: the server merges a stale edit with what changed since, and what it cannot merge
 * comes back as conflicts, shown side by side (ConflictPanel) to take theirs, keep mine or edit, then saved
 * on top of the page as it now is. A page deleted meanwhile is never brought back by a save: the editor says
 * who deleted it (DeletedPanel) and creates it again only when asked to. A new page is pushed with a parent
 * that names no commit, so a page that appeared at its path meanwhile is a conflict, never overwritten.
 *
 * Every change is kept as a draft in the browser (drafts.ts) with the commit it started from: a reload offers
 * it back, leaving the tab with unsaved changes asks first, and a draft saved later is merged, not forced.
 *
 * While a page is edited, the repository's live events (live.ts) tell when someone else changes it: the editor
 * says so, with a link to the diff, and that saving will merge.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { Commit } from '../../schema/wire/common.ts';
import type { Conflict, PageInfo } from '../../schema/wire/sync.ts';
import { pageMeta, pageName, showTime } from './content.ts';
import { clearDraft, loadDraft, saveDraft, type Draft } from './drafts.ts';
import { changesSince, nameList, useRepoEvents, type PushEventData } from './live.ts';
import { modelOf, newPageModel, textOf, type EditModel, type FieldKey } from './fields.ts';
import { Markdown } from './markdown.tsx';
import { conflictItems, resolvePage, type Choice, type ConflictItem } from './resolve.ts';
import { href } from './route.ts';
import { rememberMeta } from './titles.ts';
import { ConfirmButton, Crumbs, ErrorMessage, Loading, errorText, setFlash, shortSha, useLoad } from './ui.tsx';
import { PAGE_TYPES, isValidSlug, pagePathFor, typeOfPath } from '../../lib/core/page/parse.ts';

/** The parent a new page is pushed with: it names no commit, so an existing page at the path conflicts. */
export const NEW_PAGE_PARENT = '0'.repeat(40);
/** How long typing pauses before the draft is written (it is also written when the tab hides or closes). */
const DRAFT_DELAY_MS = 300;

const TYPE_LABELS: Record<string, string> = { concept: 'Concept', entity: 'Entity', analysis: 'Analysis', source: 'Source' };

const decode = (b64: string): string => new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

// ---------------------------------------------------------------- the text editor

type EditorModule = typeof import('./codemirror.ts');
let editorModule: Promise<EditorModule> | undefined;

/**
 * The body's editor: CodeMirror once its chunk has loaded, a text area before that or if it fails. `text`
 * flows in only when `version` changes (a restored draft, a resolved page): typing never re-renders it.
 */
function BodyEditor({ text, version, label, onChange }: { text: string; version: number; label: string; onChange: (t: string) => void }) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<import('./codemirror.ts').PageEditor | null>(null);
  const [state, setState] = useState<'loading' | 'ready' | 'failed'>('loading');
  const latest = useRef({ text, onChange });
  latest.current = { text, onChange };

  useEffect(() => {
    let live = true;
    editorModule ??= import('./codemirror.ts');
    editorModule.then(
      (m) => {
        if (!live || !host.current) return;
        editor.current = m.mountEditor(host.current, latest.current.text, label, (t) => latest.current.onChange(t));
        setState('ready');
      },
      () => {
        editorModule = undefined;
        if (live) setState('failed');
      },
    );
    return () => {
      live = false;
      editor.current?.destroy();
      editor.current = null;
    };
  }, []);
  useEffect(() => {
    editor.current?.setText(text);
  }, [version]);

  return (
    <>
      {state === 'loading' && <Loading what="the editor" />}
      {state === 'failed' ? (
        <textarea class="plain-editor" aria-label={label} value={text} spellcheck onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)} />
      ) : (
        <div ref={host} class="cm-host" />
      )}
    </>
  );
}

// ---------------------------------------------------------------- fields

function FieldsForm({ model, onField, requireType }: { model: EditModel; onField: (k: FieldKey, v: string) => void; requireType?: boolean }) {
  if (model.mode === 'raw') {
    return (
      <p class="note">
        The frontmatter could not be read ({model.problem}): the page is edited as one text, frontmatter included. Fix it and the
        fields come back.
      </p>
    );
  }
  const types = [...PAGE_TYPES] as string[];
  if (model.fields.type && !types.includes(model.fields.type) && !requireType) types.push(model.fields.type);
  const locked = (k: FieldKey) => model.locked.includes(k);
  return (
    <fieldset class="card fields">
      <legend>Frontmatter</legend>
      <div class="field">
        <label for="f-title">Title</label>
        <input id="f-title" class="wide" value={model.fields.title} disabled={locked('title')} onInput={(e) => onField('title', (e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="f-type">Type</label>
        <select id="f-type" value={model.fields.type} disabled={locked('type')} onChange={(e) => onField('type', (e.target as HTMLSelectElement).value)}>
          {!requireType && <option value="">(none)</option>}
          {types.map((t) => (
            <option key={t} value={t}>
              {TYPE_LABELS[t] ?? t}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-tags">Tags</label>
        <input
          id="f-tags"
          class="wide"
          value={model.fields.tags}
          disabled={locked('tags')}
          aria-describedby="f-tags-hint"
          onInput={(e) => onField('tags', (e.target as HTMLInputElement).value)}
        />
        <p class="hint" id="f-tags-hint">
          Separated by commas.
        </p>
      </div>
      <div class="field">
        <label for="f-summary">Summary</label>
        <textarea id="f-summary" class="wide" rows={2} value={model.fields.summary} disabled={locked('summary')} onInput={(e) => onField('summary', (e.target as HTMLTextAreaElement).value)} />
      </div>
      {model.locked.length > 0 && (
        <p class="hint">
          {model.locked.join(', ')}: not plain text in this page's frontmatter, so left as {model.locked.length === 1 ? 'it is' : 'they are'}.
        </p>
      )}
      {model.otherKeys.length > 0 && <p class="hint">Other fields, kept as they are: {model.otherKeys.join(', ')}.</p>}
    </fieldset>
  );
}

// ---------------------------------------------------------------- conflicts

function Side({ title, text }: { title: string; text: string | null }) {
  return (
    <div class="side">
      <h4>{title}</h4>
      {text === null ? <p class="hint">(not there)</p> : text === '' ? <p class="hint">(empty)</p> : <pre>{text}</pre>}
    </div>
  );
}

/**
 * A save the server could not merge: each conflicting part with the page where the edit started, the page
 * now, and the edit, side by side, and a choice for each; then the resolved page is saved on top of the page
 * now (`current_sha`).
 */
function ConflictPanel(props: {
  conflict: Conflict;
  mine: string;
  busy: boolean;
  onSave: (text: string, parentSha: string) => void;
  onBack: () => void;
}) {
  const { conflict, mine } = props;
  const theirs = useMemo(() => decode(conflict.current_content), [conflict]);
  const base = useMemo(() => (conflict.ancestor_content !== undefined ? decode(conflict.ancestor_content) : conflict.conflicting ? '' : null), [conflict]);
  const items = useMemo(() => conflictItems(base, theirs, mine, conflict.conflicting), [base, theirs, mine, conflict]);
  const [choices, setChoices] = useState<Map<string, Choice>>(() => new Map());
  const [error, setError] = useState<string>();
  const heading = useRef<HTMLHeadingElement>(null);
  useLayoutEffect(() => {
    setChoices(new Map());
    heading.current?.focus();
  }, [conflict]);

  const choose = (item: ConflictItem, c: Choice) => setChoices((old) => new Map(old).set(item.id, c));
  const save = () => {
    const r = resolvePage(base, theirs, mine, items, choices);
    if (!r.ok) {
      setError(r.error);
      return;
    }
    setError(undefined);
    props.onSave(r.text, conflict.current_sha);
  };

  return (
    <section class="conflict" aria-labelledby="conflict-h">
      <h2 id="conflict-h" ref={heading} tabIndex={-1}>
        This page changed while you were editing it
      </h2>
      <p>
        The page is now at <code>{shortSha(conflict.current_sha)}</code>.{' '}
        {items[0]?.kind === 'whole'
          ? 'Your version and the one on the server could not be merged part by part: choose one, or edit the page into one.'
          : `Your changes merged with it except ${items.length === 1 ? 'one part' : `${items.length} parts`}: choose for each what to keep. The rest keeps both sides' changes.`}
      </p>
      {items.map((item) => {
        const c = choices.get(item.id);
        const name = `choice-${item.id}`;
        const editId = `edit-${items.indexOf(item)}`;
        return (
          <fieldset key={item.id} class="card conflict-item">
            <legend>{item.label}</legend>
            <div class="sides">
              {base !== null && <Side title="Before (where you started)" text={item.base} />}
              <Side title="Theirs (on the server now)" text={item.theirs} />
              <Side title="Yours" text={item.mine} />
            </div>
            <div class="row choices" role="radiogroup" aria-label={`What to keep for ${item.label}`}>
              <label class="choice">
                <input type="radio" name={name} checked={c?.take === 'theirs'} onChange={() => choose(item, { take: 'theirs' })} /> Take theirs
              </label>
              <label class="choice">
                <input type="radio" name={name} checked={c?.take === 'mine'} onChange={() => choose(item, { take: 'mine' })} /> Keep mine
              </label>
              <label class="choice">
                <input
                  type="radio"
                  name={name}
                  checked={c?.take === 'edit'}
                  onChange={() => choose(item, { take: 'edit', text: item.mine ?? item.theirs ?? '' })}
                />{' '}
                Edit
              </label>
            </div>
            {c?.take === 'edit' && (
              <div class="field">
                <label for={editId}>Your text for {item.label}</label>
                <textarea
                  id={editId}
                  class="wide mono"
                  rows={Math.min(16, Math.max(4, c.text.split('\n').length + 1))}
                  value={c.text}
                  onInput={(e) => choose(item, { take: 'edit', text: (e.target as HTMLTextAreaElement).value })}
                />
              </div>
            )}
          </fieldset>
        );
      })}
      <ErrorMessage message={error} />
      <div class="row">
        <button type="button" class="primary" onClick={save} disabled={props.busy}>
          Save the resolved page
        </button>
        <button type="button" onClick={props.onBack} disabled={props.busy}>
          Back to editing
        </button>
      </div>
    </section>
  );
}

/**
 * A save refused because the page was deleted on the server after the version the edit started from: who
 * deleted it and in which commit, and the choice to create it again from this edit (pushed on top of the
 * deletion, so that it is a deliberate act) or to go back to editing. Nothing is re-created by itself.
 */
function DeletedPanel(props: { api: Api; repo: string; path: string; conflict: Conflict; busy: boolean; onRecreate: (parentSha: string) => void; onBack: () => void }) {
  const { conflict } = props;
  const heading = useRef<HTMLHeadingElement>(null);
  const [by, setBy] = useState<string | null>(null);
  useLayoutEffect(() => {
    heading.current?.focus();
  }, [conflict]);
  useEffect(() => {
    let live = true;
    setBy(null);
    props.api.history(props.repo, props.path, 20).then(
      ({ commits }) => {
        const c = commits.find((x) => x.sha === conflict.current_sha);
        if (live && c) setBy(c.author || c.email);
      },
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [conflict]);
  return (
    <section class="conflict" aria-labelledby="deleted-h">
      <h2 id="deleted-h" ref={heading} tabIndex={-1}>
        This page was deleted while you were editing it
      </h2>
      <p>
        It was deleted on the server{by ? ` by ${by}` : ''} in <code>{shortSha(conflict.current_sha)}</code>, after the version your changes
        started from. Nothing was saved, and the page stays deleted unless you create it again. Your changes are kept in this browser.
      </p>
      <div class="row">
        <button type="button" class="primary" onClick={() => props.onRecreate(conflict.current_sha)} disabled={props.busy}>
          Re-create page
        </button>
        <button type="button" onClick={props.onBack} disabled={props.busy}>
          Back to editing
        </button>
      </div>
    </section>
  );
}

// ---------------------------------------------------------------- the edit view

interface Loaded {
  /** The page's text and last commit; null for a page that does not exist yet. */
  page: { content: string; sha: string } | null;
  pages: PageInfo[];
}

/** Where a new page's draft is kept: a key no page path can be (a page path never starts with "/"). */
const NEW_DRAFT = '/new';

export function EditView({ api, repo, path, title }: { api: Api; repo: string; path: string; title?: string }) {
  // A fresh editor per page: nothing of another page's edit lingers.
  return <Editor key={`${repo}\n${path}`} api={api} repo={repo} path={path} title={title} />;
}

/** A new page: its type, slug and title, and its text, created with one push (the path from the layout). */
export function NewPageView({ api, repo, type, slug }: { api: Api; repo: string; type?: string; slug?: string }) {
  return <Editor key={`${repo}\nnew\n${type ?? ''}\n${slug ?? ''}`} api={api} repo={repo} path={null} newType={type} newSlug={slug} />;
}

/** A title as a slug: lower case, words joined by "-", only what a slug may hold. */
export function slugOf(title: string): string {
  return title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80);
}

/** The layout path of a new page, or why there is none. */
function newPath(type: string, slug: string): { path: string } | { problem: string } {
  if (!(PAGE_TYPES as readonly string[]).includes(type)) return { problem: 'Pick the page’s type.' };
  if (slug.trim() === '') return { problem: 'Give the page a slug: its file name.' };
  if (!isValidSlug(slug)) return { problem: `“${slug}” cannot be a slug: use letters, digits and "-", no "/".` };
  return { path: pagePathFor(type as (typeof PAGE_TYPES)[number], slug) };
}

/**
 * `path`: the page edited (a page not there yet is created at it); null: a new page, whose path follows the
 * type and slug picked here.
 */
function Editor(props: { api: Api; repo: string; path: string | null; title?: string; newType?: string; newSlug?: string }) {
  const { api, repo } = props;
  const creating = props.path === null;
  // Pushes by others that changed the page since the editor opened, oldest first (none while saving: the
  // save's own push is not news).
  const [changes, setChanges] = useState<PushEventData[]>([]);
  const saving = useRef(false);
  const live = useRepoEvents(
    api,
    repo,
    {
      push: (d) => {
        if (!saving.current && d.paths.some((p) => p.path === props.path)) setChanges((c) => [...c, d]);
      },
    },
    !creating,
  );
  // The pages list first: a page that is not there is new, and is never asked for (no 404). Read once the
  // live events are open, so that no change falls between the two.
  const loaded = useLoad<Loaded>(
    async () => {
      const { pages } = await api.pages(repo);
      const page = props.path !== null && pages.some((p) => p.path === props.path) ? await api.readPage(repo, props.path) : null;
      return { page, pages };
    },
    [api, repo, props.path],
    live.ready,
  );
  // Events may have been missed (live.ts): the page's last commit says whether it changed meanwhile.
  useEffect(() => {
    if (live.epoch === 0 || props.path === null) return;
    let current = true;
    api.history(repo, props.path, 1).then(
      ({ commits: h }) => current && h[0] && setChanges((c) => (c.some((x) => x.sha === h[0]!.sha) ? c : [...c, changeOf(repo, props.path!, h[0]!)])),
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [live.epoch]);
  const server = api.baseUrl;
  const [model, setModel] = useState<EditModel>();
  const [start, setStart] = useState('');
  const [parentSha, setParentSha] = useState<string | null>(null);
  const [slug, setSlug] = useState(props.newSlug ?? '');
  const [slugTouched, setSlugTouched] = useState(props.newSlug !== undefined);
  const [version, setVersion] = useState(0);
  const [pendingDraft, setPendingDraft] = useState<Draft | null>(null);
  const [message, setMessage] = useState('');
  const [tab, setTab] = useState<'write' | 'preview'>('write');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [conflict, setConflict] = useState<Conflict>();
  const [draftRefused, setDraftRefused] = useState(false);
  const draftKey = props.path ?? NEW_DRAFT;

  const target = creating ? (model ? newPath(model.fields.type, slug) : { problem: '' }) : { path: props.path! };
  const path = 'path' in target ? target.path : null;
  const exists = creating && path !== null && (loaded.data?.pages ?? []).some((p) => p.path === path);

  // The page as loaded, and any draft of it kept in this browser.
  useEffect(() => {
    const d = loaded.data;
    if (!d) return;
    const type = creating ? (PAGE_TYPES.includes(props.newType as never) ? props.newType! : 'concept') : (typeOfPath(props.path!) ?? '');
    const initial = d.page ? modelOf(d.page.content) : newPageModel(type, props.title ?? '');
    setModel(initial);
    setStart(textOf(initial));
    setParentSha(d.page?.sha ?? null);
    setVersion((v) => v + 1);
    const draft = loadDraft(server, repo, draftKey);
    // A new page's draft is offered whatever slug this link brings: never overwritten unasked.
    if (draft && (draft.text !== textOf(initial) || (creating && (draft.slug ?? '') !== (props.newSlug ?? '')))) setPendingDraft(draft);
    else if (draft) clearDraft(server, repo, draftKey);
  }, [loaded.data]);

  const text = model ? textOf(model) : '';
  const dirty = model !== undefined && (text !== start || (creating && slug !== (props.newSlug ?? '')));

  // The draft follows every change, a moment after typing pauses, and at once when the tab hides or closes.
  const pending = useRef<{ timer?: ReturnType<typeof setTimeout>; write?: () => void }>({});
  const flushDraft = () => {
    clearTimeout(pending.current.timer);
    pending.current.write?.();
    pending.current = {};
  };
  useEffect(() => {
    if (!model || pendingDraft) return;
    const write = () => {
      if (!dirty) clearDraft(server, repo, draftKey);
      else setDraftRefused(!saveDraft(server, repo, draftKey, { text, parentSha, savedAt: Date.now(), ...(creating ? { slug } : {}) }));
    };
    clearTimeout(pending.current.timer);
    pending.current = { write, timer: setTimeout(flushDraft, DRAFT_DELAY_MS) };
  }, [text, parentSha, pendingDraft, slug]);
  useEffect(() => {
    const onHide = () => flushDraft();
    const onLeave = (e: BeforeUnloadEvent) => {
      flushDraft();
      if (!dirtyRef.current) return;
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('pagehide', onHide);
    window.addEventListener('beforeunload', onLeave);
    return () => {
      window.removeEventListener('pagehide', onHide);
      window.removeEventListener('beforeunload', onLeave);
      flushDraft();
    };
  }, []);
  const dirtyRef = useRef(false);
  dirtyRef.current = dirty && !busy;

  const pageSet = useMemo(() => new Set((loaded.data?.pages ?? []).map((p) => p.path)), [loaded.data]);
  const ctx = useMemo(() => ({ repo, path: path ?? '', pages: pageSet }), [repo, path, pageSet]);
  const isNew = creating || (loaded.data !== undefined && loaded.data.page === null && parentSha === null);
  const name = model?.fields.title.trim() || (path ? pageName(path) : 'a new page');

  const save = async (content: string, parent: string | null, recreate = false) => {
    if (!path) {
      setError('problem' in target ? target.problem : 'The page has no path yet.');
      return;
    }
    if (exists && parent === null) {
      setError(`A page already lives at ${path}: pick another slug, or edit that page.`);
      return;
    }
    setBusy(true);
    saving.current = true;
    setError(undefined);
    try {
      const saved = modelOf(content);
      const commitMessage = message.trim() || `${isNew ? 'Create' : 'Edit'} ${(saved.mode === 'fields' && saved.fields.title.trim()) || pageName(path)}`;
      const answer = await api.push(repo, { message: commitMessage, merge: 'sections', files: [{ path, content, parent_sha: parent ?? NEW_PAGE_PARENT }] });
      if (!answer.ok) {
        const c = answer.data.conflicts.find((x) => x.path === path) ?? answer.data.conflicts[0];
        if (c) setConflict(c);
        else setError('The server refused the save without saying why (HTTP 409).');
        return;
      }
      const pushed = answer.data.pushed.find((p) => p.path === path);
      pending.current = {};
      clearDraft(server, repo, draftKey);
      dirtyRef.current = false;
      if (pushed?.merged) {
        const merged = pushed.content ? decode(pushed.content) : content;
        rememberMeta(server, repo, path, pushed.sha, merged);
        setFlash(`Saved. Changes made meanwhile (up to ${shortSha(pushed.merged_with ?? '')}) were merged with yours, section by section.`);
      } else {
        if (pushed && !pushed.unchanged) rememberMeta(server, repo, path, pushed.sha, content);
        setFlash(pushed?.unchanged ? 'Nothing to save: the page already says exactly this.' : recreate ? 'Page created again.' : isNew ? 'Page created.' : 'Saved.');
      }
      location.hash = href({ name: 'page', repo, path });
    } catch (e) {
      setError(`Not saved: ${errorText(e)} Your changes are kept in this browser.`);
    } finally {
      saving.current = false;
      setBusy(false);
    }
  };

  const submit = (ev: Event) => {
    ev.preventDefault();
    if (!model || busy) return;
    flushDraft();
    void save(text, parentSha);
  };

  const saveResolved = (resolved: string, parent: string) => {
    // The resolved page is the edit from now on, started from the page as it is now.
    const m = modelOf(resolved);
    setModel(m);
    setParentSha(parent);
    setVersion((v) => v + 1);
    saveDraft(server, repo, draftKey, { text: resolved, parentSha: parent, savedAt: Date.now(), ...(creating ? { slug } : {}) });
    setConflict(undefined);
    void save(resolved, parent);
  };

  const recreate = (deletion: string) => {
    // The edit is now based on the deletion: pushed on top of it, the page exists again.
    setParentSha(deletion);
    saveDraft(server, repo, draftKey, { text, parentSha: deletion, savedAt: Date.now(), ...(creating ? { slug } : {}) });
    setConflict(undefined);
    void save(text, deletion, true);
  };

  const restore = (d: Draft) => {
    setModel(modelOf(d.text));
    setParentSha(d.parentSha);
    if (creating && d.slug !== undefined) {
      setSlug(d.slug);
      setSlugTouched(true);
    }
    setVersion((v) => v + 1);
    setPendingDraft(null);
  };
  const discard = async () => {
    clearDraft(server, repo, draftKey);
    pending.current = {};
    dirtyRef.current = false;
    setPendingDraft(null);
    return true;
  };

  const onField = (k: FieldKey, v: string) => {
    setModel((m) => m && { ...m, fields: { ...m.fields, [k]: v } });
    if (creating && k === 'title' && !slugTouched) setSlug(slugOf(v));
  };

  const back = loaded.data?.page && props.path ? href({ name: 'page', repo, path: props.path }) : href({ name: 'repo', repo });
  const crumbs = (
    <Crumbs
      items={[
        { label: 'Repositories', to: '#/' },
        { label: repo, to: href({ name: 'repo', repo }) },
        ...(loaded.data?.page && props.path ? [{ label: pageMeta(loaded.data.page.content).title ?? pageName(props.path), to: back }] : []),
        { label: isNew ? 'New page' : 'Edit' },
      ]}
    />
  );

  return (
    <section class="editor">
      {crumbs}
      <h1 tabIndex={-1}>{creating ? `New page in ${repo}` : isNew ? `New page: ${name}` : `Edit ${name}`}</h1>
      {!creating && (
        <p class="meta">
          <code>{props.path}</code>
        </p>
      )}
      <ErrorMessage message={loaded.error} />
      {loaded.loading && !loaded.data && <Loading what={creating ? 'the repository’s pages' : 'the page'} />}
      {pendingDraft && model && (
        <DraftQuestion
          draft={pendingDraft}
          currentSha={loaded.data?.page?.sha ?? null}
          isNew={creating}
          onRestore={() => restore(pendingDraft)}
          onDiscard={discard}
        />
      )}
      {model && !pendingDraft && props.path !== null && (
        <ChangedWhileEditing
          repo={repo}
          path={props.path}
          from={parentSha}
          pending={changesSince(changes, parentSha)}
          dirty={dirty}
          onTakeNew={() => loaded.reload()}
        />
      )}
      {model && !pendingDraft && conflict && path !== null && conflict.deleted && (
        <DeletedPanel api={api} repo={repo} path={path} conflict={conflict} busy={busy} onRecreate={recreate} onBack={() => setConflict(undefined)} />
      )}
      {model && !pendingDraft && conflict && !conflict.deleted && (
        <ConflictPanel conflict={conflict} mine={text} busy={busy} onSave={saveResolved} onBack={() => setConflict(undefined)} />
      )}
      {model && !pendingDraft && !conflict && (
        <form onSubmit={submit} noValidate onKeyDown={(e) => (e.ctrlKey || e.metaKey) && e.key === 's' && submit(e)}>
          <FieldsForm model={model} onField={onField} requireType={creating} />
          {creating && (
            <div class="card field">
              <label for="new-slug">Slug</label>
              <input
                id="new-slug"
                class="wide mono"
                value={slug}
                autoComplete="off"
                spellcheck={false}
                aria-describedby="new-path"
                aria-invalid={slug !== '' && !isValidSlug(slug) ? 'true' : undefined}
                onInput={(e) => {
                  setSlugTouched(true);
                  setSlug((e.target as HTMLInputElement).value.trim());
                }}
              />
              <p class="hint" id="new-path">
                {path ? (
                  <>
                    The page will be <code>{path}</code>
                    {exists && (
                      <>
                        {' '}
                        — which already exists: <a href={href({ name: 'edit', repo, path })}>edit it</a>
                      </>
                    )}
                    .
                  </>
                ) : (
                  'Its file name: letters, digits and "-", e.g. decision-log. The type picks the folder.'
                )}
              </p>
            </div>
          )}
          <div class="toolbar" role="group" aria-label="Editor view">
            <button type="button" aria-pressed={tab === 'write'} onClick={() => setTab('write')}>
              Write
            </button>
            <button type="button" aria-pressed={tab === 'preview'} onClick={() => setTab('preview')}>
              Preview
            </button>
          </div>
          <div hidden={tab !== 'write'}>
            <BodyEditor
              text={model.body}
              version={version}
              label={model.mode === 'raw' ? 'Page text (Markdown, with its frontmatter)' : 'Page text (Markdown)'}
              onChange={(body) => setModel((m) => m && { ...m, body })}
            />
          </div>
          {tab === 'preview' && (
            <div class="preview card">
              {model.mode === 'fields' && model.fields.title.trim() && <p class="preview-title">{model.fields.title}</p>}
              {model.mode === 'fields' && model.fields.summary.trim() && <p class="summary">{model.fields.summary}</p>}
              {model.body.trim() === '' ? <p class="empty">Nothing to preview yet.</p> : <Markdown text={model.body} ctx={ctx} label="Preview" />}
            </div>
          )}
          <div class="field">
            <label for="commit-message">Describe the change (optional)</label>
            <input
              id="commit-message"
              class="wide"
              maxLength={500}
              value={message}
              placeholder={`${isNew ? 'Create' : 'Edit'} ${name}`}
              onInput={(e) => setMessage((e.target as HTMLInputElement).value)}
            />
          </div>
          <ErrorMessage message={error} />
          {draftRefused && <p class="note">This browser would not keep a draft (its storage is full or off): save before you leave.</p>}
          <div class="row actions">
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Saving…' : isNew ? 'Create page' : 'Save'}
            </button>
            <a href={back}>Cancel</a>
            {dirty && (
              <ConfirmButton
                label="Discard changes"
                what={path ? `to ${path}` : 'to the new page'}
                question={isNew ? 'Discard this new page? Nothing of it has been saved.' : 'Discard your unsaved changes? The page stays as it is on the server.'}
                confirmLabel="Yes, discard"
                onConfirm={async () => {
                  await discard();
                  location.hash = back;
                  return true;
                }}
              />
            )}
          </div>
          <p class="hint" aria-live="polite">
            {dirty ? 'Unsaved changes are kept in this browser until you save or discard them.' : 'No unsaved changes.'}
          </p>
        </form>
      )}
    </section>
  );
}

/** A commit of the page's history as a push event naming the page (what the editor knows after missed events). */
function changeOf(repo: string, path: string, c: Commit): PushEventData {
  return { repo_id: repo, sha: c.sha, author: c.author, email: c.email, time: c.time, message: c.message, paths: [{ path, status: 'modified' }] };
}

/**
 * Someone else changed the page being edited: who, a link to the diff from the version the edit started from,
 * and what saving will do. With no unsaved changes, the editor can start again from the new version.
 */
function ChangedWhileEditing(props: { repo: string; path: string; from: string | null; pending: PushEventData[]; dirty: boolean; onTakeNew: () => void }) {
  const { repo, path, from, pending, dirty } = props;
  if (pending.length === 0) return null;
  const last = pending[pending.length - 1]!;
  const deleted = last.paths.find((p) => p.path === path)?.status === 'deleted';
  const by = nameList(pending.map((c) => c.author || c.email));
  return (
    <div class="note changed" role="status">
      <p class="flush">
        {deleted ? 'This page was deleted on the server' : from === null ? 'This page was created on the server' : 'This page changed on the server'} (by {by})
        since you started editing.{' '}
        {dirty
          ? deleted
            ? 'Saving will ask whether to create it again from your version.'
            : 'Saving will merge your changes with it, section by section, and show side by side anything that cannot be merged.'
          : deleted
            ? ''
            : 'You have no unsaved changes: start again from the new version.'}
      </p>
      {!deleted && (
        <div class="row">
          {from !== null && <a href={href({ name: 'diff', repo, path, from, to: last.sha })}>See what changed</a>}
          {!dirty && (
            <button type="button" class="inline-action" onClick={props.onTakeNew}>
              Edit the new version
            </button>
          )}
        </div>
      )}
    </div>
  );
}

function DraftQuestion(props: { draft: Draft; currentSha: string | null; isNew: boolean; onRestore: () => void; onDiscard: () => Promise<boolean> }) {
  const { draft, currentSha } = props;
  const when = showTime(new Date(draft.savedAt).toISOString());
  const moved = !props.isNew && draft.parentSha !== currentSha;
  return (
    <div class="card draft" role="region" aria-labelledby="draft-h">
      <h2 id="draft-h" class="flush">
        Unsaved changes from {when}
      </h2>
      <p>{props.isNew ? 'This browser kept a new page that was never created.' : 'This browser kept changes to this page that were never saved.'}</p>
      {moved && currentSha !== null && (
        <p class="note">
          The page has changed since (it is now at <code>{shortSha(currentSha)}</code>): saving merges your changes with it section by
          section, and shows side by side anything that cannot be merged.
        </p>
      )}
      {moved && currentSha === null && draft.parentSha !== null && <p class="note">The page has been deleted since: saving asks whether to create it again.</p>}
      <div class="row">
        <button type="button" class="primary" onClick={props.onRestore}>
          Restore draft
        </button>
        <ConfirmButton label="Discard draft" what="" question="Discard these unsaved changes for good?" confirmLabel="Yes, discard" onConfirm={props.onDiscard} />
      </div>
    </div>
  );
}
