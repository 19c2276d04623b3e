/**
 * Writing pages in the browser: the editor view (#/repo/<id>/edit/<path>) and the new-page form
 * (#/repo/<id>/new).
 *
 * The frontmatter's title, type, tags and summary are form fields, the body is edited in CodeMirror
 * (codemirror.ts, loaded on demand; a plain text area stands in if it cannot load), with a preview. Save is
 * one push of the page with `parent_sha` (the page's last commit when the edit started) and
 * `merge: "sections"`: the server merges a stale edit with what changed since, and what it cannot merge
 * comes back as conflicts, shown side by side (ConflictPanel) to take theirs, keep mine or edit, then saved
 * on top of the page as it now is. A new page is pushed with a parent that names no commit, so a page that
 * appeared at its path meanwhile is a conflict, never overwritten.
 *
 * Every change is kept as a draft in the browser (drafts.ts) with the commit it started from: a reload offers
 * it back, leaving the tab with unsaved changes asks first, and a draft saved later is merged, not forced.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Api, Conflict, PageSummary } from './api.ts';
import { pageMeta, pageName, showTime } from './content.ts';
import { clearDraft, loadDraft, saveDraft, type Draft } from './drafts.ts';
import { modelOf, newPageModel, textOf, type EditModel, type FieldKey } from './fields.ts';
import { Markdown } from './markdown.tsx';
import { conflictItems, resolvePage, type Choice, type ConflictItem } from './resolve.ts';
import { href } from './route.ts';
import { rememberMeta } from './titles.ts';
import { ConfirmButton, Crumbs, ErrorMessage, Loading, errorText, setFlash, shortSha, useLoad } from './ui.tsx';
import { PAGE_TYPES, isValidSlug, pagePathFor, typeOfPath } from '../../lib/page/parse.ts';

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

function FieldsForm({ model, onField }: { model: EditModel; onField: (k: FieldKey, v: string) => void }) {
  if (model.mode === 'raw') {
    return (
      <p class="note">
        The frontmatter could not be read ({model.problem}): the page is edited as one text, frontmatter included. Fix it and the
        fields come back.
      </p>
    );
  }
  const types = [...PAGE_TYPES] as string[];
  if (model.fields.type && !types.includes(model.fields.type)) types.push(model.fields.type);
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
          <option value="">(none)</option>
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

// ---------------------------------------------------------------- the edit view

interface Loaded {
  /** The page's text and last commit; null for a page that does not exist yet. */
  page: { text: string; sha: string } | null;
  pages: PageSummary[];
}

export function EditView({ api, repo, path, title }: { api: Api; repo: string; path: string; title?: string }) {
  // A fresh editor per page: nothing of another page's edit lingers.
  return <Editor key={`${repo}\n${path}`} api={api} repo={repo} path={path} title={title} />;
}

function Editor({ api, repo, path, title }: { api: Api; repo: string; path: string; title?: string }) {
  // The pages list first: a page that is not there is new, and is never asked for (no 404).
  const loaded = useLoad<Loaded>(async () => {
    const pages = await api.pages(repo);
    const page = pages.some((p) => p.path === path) ? await api.page(repo, path) : null;
    return { page, pages };
  }, [api, repo, path]);
  const server = api.baseUrl;
  const [model, setModel] = useState<EditModel>();
  const [start, setStart] = useState('');
  const [parentSha, setParentSha] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [pendingDraft, setPendingDraft] = useState<Draft | null>(null);
  const [message, setMessage] = useState('');
  const [tab, setTab] = useState<'write' | 'preview'>('write');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [conflict, setConflict] = useState<Conflict>();
  const [draftRefused, setDraftRefused] = useState(false);

  // The page as loaded, and any draft of it kept in this browser.
  useEffect(() => {
    const d = loaded.data;
    if (!d) return;
    const initial = d.page ? modelOf(d.page.text) : newPageModel(typeOfPath(path) ?? '', title ?? '');
    setModel(initial);
    setStart(textOf(initial));
    setParentSha(d.page?.sha ?? null);
    setVersion((v) => v + 1);
    const draft = loadDraft(server, repo, path);
    if (draft && draft.text !== textOf(initial)) setPendingDraft(draft);
    else if (draft) clearDraft(server, repo, path);
  }, [loaded.data]);

  const text = model ? textOf(model) : '';
  const dirty = model !== undefined && text !== start;

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
      if (!dirty) clearDraft(server, repo, path);
      else setDraftRefused(!saveDraft(server, repo, path, { text, parentSha, savedAt: Date.now() }));
    };
    clearTimeout(pending.current.timer);
    pending.current = { write, timer: setTimeout(flushDraft, DRAFT_DELAY_MS) };
  }, [text, parentSha, pendingDraft]);
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
  const ctx = useMemo(() => ({ repo, path, pages: pageSet }), [repo, path, pageSet]);
  const isNew = loaded.data !== undefined && loaded.data.page === null && parentSha === null;
  const name = model?.fields.title.trim() || pageName(path);

  const save = async (content: string, parent: string | null) => {
    setBusy(true);
    setError(undefined);
    try {
      const saved = modelOf(content);
      const commitMessage = message.trim() || `${isNew ? 'Create' : 'Edit'} ${(saved.mode === 'fields' && saved.fields.title.trim()) || pageName(path)}`;
      const answer = await api.push(repo, [{ path, content, parent_sha: parent ?? NEW_PAGE_PARENT }], commitMessage);
      if (!answer.ok) {
        const c = answer.body.conflicts.find((x) => x.path === path) ?? answer.body.conflicts[0];
        if (c) setConflict(c);
        else setError('The server refused the save without saying why (HTTP 409).');
        return;
      }
      const pushed = answer.body.pushed.find((p) => p.path === path);
      pending.current = {};
      clearDraft(server, repo, path);
      dirtyRef.current = false;
      if (pushed?.merged) {
        const merged = pushed.content ? decode(pushed.content) : content;
        rememberMeta(server, repo, path, pushed.sha, merged);
        setFlash(`Saved. Changes made meanwhile (up to ${shortSha(pushed.merged_with ?? '')}) were merged with yours, section by section.`);
      } else {
        if (pushed && !pushed.unchanged) rememberMeta(server, repo, path, pushed.sha, content);
        setFlash(pushed?.unchanged ? 'Nothing to save: the page already says exactly this.' : isNew ? 'Page created.' : 'Saved.');
      }
      location.hash = href({ name: 'page', repo, path });
    } catch (e) {
      setError(`Not saved: ${errorText(e)} Your changes are kept in this browser.`);
    } finally {
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
    saveDraft(server, repo, path, { text: resolved, parentSha: parent, savedAt: Date.now() });
    setConflict(undefined);
    void save(resolved, parent);
  };

  const restore = (d: Draft) => {
    const m = modelOf(d.text);
    setModel(m);
    setParentSha(d.parentSha);
    setVersion((v) => v + 1);
    setPendingDraft(null);
  };
  const discard = async () => {
    clearDraft(server, repo, path);
    pending.current = {};
    dirtyRef.current = false;
    setPendingDraft(null);
    return true;
  };

  const crumbs = (
    <Crumbs
      items={[
        { label: 'Repositories', to: '#/' },
        { label: repo, to: href({ name: 'repo', repo }) },
        ...(loaded.data?.page ? [{ label: pageMeta(loaded.data.page.text).title ?? pageName(path), to: href({ name: 'page', repo, path }) }] : []),
        { label: isNew ? 'New page' : 'Edit' },
      ]}
    />
  );
  const back = loaded.data?.page ? href({ name: 'page', repo, path }) : href({ name: 'repo', repo });

  return (
    <section class="editor">
      {crumbs}
      <h1 tabIndex={-1}>{isNew ? `New page: ${name}` : `Edit ${name}`}</h1>
      <p class="meta">
        <code>{path}</code>
      </p>
      <ErrorMessage message={loaded.error} />
      {loaded.loading && !loaded.data && <Loading what="the page" />}
      {pendingDraft && model && (
        <DraftQuestion draft={pendingDraft} currentSha={loaded.data?.page?.sha ?? null} onRestore={() => restore(pendingDraft)} onDiscard={discard} />
      )}
      {model && !pendingDraft && conflict && (
        <ConflictPanel conflict={conflict} mine={text} busy={busy} onSave={saveResolved} onBack={() => setConflict(undefined)} />
      )}
      {model && !pendingDraft && !conflict && (
        <form onSubmit={submit} onKeyDown={(e) => (e.ctrlKey || e.metaKey) && e.key === 's' && submit(e)}>
          <FieldsForm model={model} onField={(k, v) => setModel((m) => m && { ...m, fields: { ...m.fields, [k]: v } })} />
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
                what={`to ${path}`}
                question="Discard your unsaved changes? The page stays as it is on the server."
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

function DraftQuestion({ draft, currentSha, onRestore, onDiscard }: { draft: Draft; currentSha: string | null; onRestore: () => void; onDiscard: () => Promise<boolean> }) {
  const when = showTime(new Date(draft.savedAt).toISOString());
  const moved = draft.parentSha !== currentSha;
  return (
    <div class="card draft" role="region" aria-labelledby="draft-h">
      <h2 id="draft-h" class="flush">
        Unsaved changes from {when}
      </h2>
      <p>This browser kept changes to this page that were never saved.</p>
      {moved && currentSha !== null && (
        <p class="note">
          The page has changed since (it is now at <code>{shortSha(currentSha)}</code>): saving merges your changes with it section by
          section, and shows side by side anything that cannot be merged.
        </p>
      )}
      {moved && currentSha === null && draft.parentSha !== null && <p class="note">The page has been deleted since: saving creates it again.</p>}
      <div class="row">
        <button type="button" class="primary" onClick={onRestore}>
          Restore draft
        </button>
        <ConfirmButton label="Discard draft" what="" question="Discard these unsaved changes for good?" confirmLabel="Yes, discard" onConfirm={onDiscard} />
      </div>
    </div>
  );
}

// ---------------------------------------------------------------- new page

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

export function NewPageView({ api, repo, type: initialType, slug: initialSlug }: { api: Api; repo: string; type?: string; slug?: string }) {
  const pages = useLoad(() => api.pages(repo), [api, repo]);
  const [type, setType] = useState<string>(PAGE_TYPES.includes(initialType as never) ? initialType! : 'concept');
  const [slug, setSlug] = useState(initialSlug ?? '');
  const [slugTouched, setSlugTouched] = useState(initialSlug !== undefined);
  const [title, setTitle] = useState('');
  const [error, setError] = useState<string>();
  const validSlug = isValidSlug(slug);
  const path = validSlug ? pagePathFor(type as (typeof PAGE_TYPES)[number], slug) : null;
  const exists = path !== null && (pages.data ?? []).some((p) => p.path === path);

  const submit = (ev: Event) => {
    ev.preventDefault();
    if (!validSlug || !path) {
      setError(slug.trim() === '' ? 'Give the page a slug: its file name.' : `“${slug}” cannot be a slug: use letters, digits and "-", no "/".`);
      return;
    }
    if (exists) {
      setError(`A page already lives at ${path}.`);
      return;
    }
    if (!pages.data) {
      setError('The repository’s pages are still loading: try again in a moment.');
      return;
    }
    location.hash = href({ name: 'edit', repo, path, title: title.trim() || undefined });
  };

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'New page' }]} />
      <h1 tabIndex={-1}>New page in {repo}</h1>
      <ErrorMessage message={pages.error} />
      <form class="card" onSubmit={submit} noValidate>
        <div class="field">
          <label for="new-type">Type</label>
          <select id="new-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
            {PAGE_TYPES.map((t) => (
              <option key={t} value={t}>
                {TYPE_LABELS[t]}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="new-title">Title</label>
          <input
            id="new-title"
            class="wide"
            value={title}
            autoComplete="off"
            onInput={(e) => {
              const v = (e.target as HTMLInputElement).value;
              setTitle(v);
              if (!slugTouched) setSlug(slugOf(v));
            }}
          />
        </div>
        <div class="field">
          <label for="new-slug">Slug</label>
          <input
            id="new-slug"
            class="wide mono"
            value={slug}
            autoComplete="off"
            spellcheck={false}
            aria-describedby="new-path"
            aria-invalid={slug !== '' && !validSlug ? 'true' : undefined}
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
              'Its file name: letters, digits and "-", e.g. decision-log.'
            )}
          </p>
        </div>
        <ErrorMessage message={error} />
        <div class="row">
          <button type="submit" class="primary">
            Write the page
          </button>
          <a href={href({ name: 'repo', repo })}>Cancel</a>
        </div>
      </form>
    </section>
  );
}
