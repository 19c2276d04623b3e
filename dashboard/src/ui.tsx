/** Shared pieces: data loading, error and empty states. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText } from './api.ts';
import type { Commit } from '../../schema/wire/common.ts';
import { showTime } from './content.ts';

export { errorText };
import type { LiveState } from './live.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` whenever `deps` change; a stale answer never overwrites a newer one. While `when` is false
 * nothing is asked and the state stays loading (a view that waits for its live events to start, live.ts).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], when = true): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!when) return;
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (e: unknown) => live && setState({ error: errorText(e), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick, when]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** A failure as shown: its sentence, and for a 402 the plan's upgrade page (an http(s) URL only). */
export interface Problem {
  text: string;
  upgradeUrl?: string;
}

export function problemOf(e: unknown): Problem {
  const upgradeUrl = e instanceof ApiError ? e.upgradeUrl : undefined;
  return upgradeUrl ? { text: errorText(e), upgradeUrl } : { text: errorText(e) };
}

export function ErrorMessage({ message, upgradeUrl }: { message: string | undefined; upgradeUrl?: string }) {
  if (!message) return null;
  return (
    <p class="error" role="alert">
      {message}
      {upgradeUrl && (
        <>
          {' '}
          <a href={upgradeUrl}>Upgrade your plan</a>
        </>
      )}
    </p>
  );
}

/** A sentence for the next view to show (after a save, a deletion), taken once. */
let flash: string | undefined;

export function setFlash(text: string): void {
  flash = text;
}

export function takeFlash(): string | undefined {
  const t = flash;
  flash = undefined;
  return t;
}

/** The flash left for this view, read once when it first renders. */
export function useFlash(): string | undefined {
  const [text] = useState(takeFlash);
  return text;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function shortSha(sha: string): string {
  return sha.slice(0, 7);
}

/** The breadcrumb trail at the top of every view; the last item is the current page. */
export function Crumbs({ items }: { items: { label: string; to?: string }[] }) {
  return (
    <nav class="crumbs" aria-label="Breadcrumb">
      <ol>
        {items.map((it, i) => (
          <li key={i}>{it.to ? <a href={it.to}>{it.label}</a> : <span aria-current="page">{it.label}</span>}</li>
        ))}
      </ol>
    </nav>
  );
}

/** How long after a confirm question opens a click with no key or pointer down on its button is ignored. */
const STRAY_CLICK_MS = 400;

/**
 * A button that asks before it acts: the first press shows the question with a confirm and a cancel button
 * (focus moves to the confirm button; Escape or Cancel returns it). No window.confirm.
 */
export function ConfirmButton(props: {
  /** Visible text of the first button ("Revoke") and what it acts on, for screen readers ("invite key x"). */
  label: string;
  what: string;
  question: ComponentChildren;
  confirmLabel: string;
  /** Resolves true when the thing is gone (the caller moves focus), false when it failed (focus comes back here). */
  onConfirm: () => Promise<boolean>;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const startRef = useRef<HTMLButtonElement>(null);
  const returnFocus = useRef(false);
  // The key press that opened the question must not also answer it: focus moves to the confirm button while
  // that key may still be producing its click (on a busy machine the browser's activation can land after
  // the move). A click on the confirm button counts when a key or pointer went down on it first, or once
  // the question has been shown for a moment (assistive technology may click without either).
  const openedAt = useRef(0);
  const armed = useRef(false);
  // A layout effect, so the focus moves in the same task as the question appears: a key pressed at once
  // (Escape, Enter) reaches the confirm button, never the page body the first button left behind.
  useLayoutEffect(() => {
    if (asking) {
      openedAt.current = performance.now();
      armed.current = false;
      confirmRef.current?.focus();
    } else if (returnFocus.current) {
      returnFocus.current = false;
      startRef.current?.focus();
    }
  }, [asking]);
  const cancel = () => {
    returnFocus.current = true;
    setAsking(false);
  };
  if (!asking) {
    return (
      <button type="button" ref={startRef} onClick={() => setAsking(true)}>
        {props.label}
        <span class="sr-only"> {props.what}</span>
      </button>
    );
  }
  return (
    <div
      class="confirm"
      role="group"
      aria-label={`${props.label} ${props.what}`}
      onKeyDown={(e) => {
        if (e.key === 'Escape') cancel();
      }}
    >
      <p class="hint">
        {props.question}
      </p>
      <div class="row">
        <button
          type="button"
          class="primary"
          ref={confirmRef}
          disabled={busy}
          onKeyDown={(e) => {
            if (e.key === 'Enter' || e.key === ' ') armed.current = true;
          }}
          onPointerDown={() => {
            armed.current = true;
          }}
          onClick={async () => {
            if (!armed.current && performance.now() - openedAt.current < STRAY_CLICK_MS) return;
            setBusy(true);
            let done = false;
            try {
              done = await props.onConfirm();
            } finally {
              returnFocus.current = !done;
              setBusy(false);
              setAsking(false);
            }
          }}
        >
          {props.confirmLabel}
          <span class="sr-only"> {props.what}</span>
        </button>
        <button type="button" onClick={cancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </div>
  );
}


/**
 * How a view's live events stand, when that needs saying: a stream interrupted (and being opened again) or
 * stopped for good, with the reason; `hint` is said while the stream is live.
 */
export function LiveNote({ live, hint }: { live: LiveState; hint?: string }) {
  if (live.status === 'stopped') {
    return (
      <p class="note live-note" role="status">
        Live updates stopped. {live.reason}
      </p>
    );
  }
  if (live.status === 'retrying') {
    return (
      <p class="hint live-note" role="status">
        Live updates paused. {live.reason} Reconnecting…
      </p>
    );
  }
  if (live.status === 'live' && hint) return <p class="hint live-note">{hint}</p>;
  return null;
}

/** When and by whom a commit was made. */
export function Change({ c }: { c: Commit }) {
  return (
    <span class="change">
      <time dateTime={c.time}>{showTime(c.time)}</time> by {c.author}
    </span>
  );
}
