/** Shared pieces: data loading, error and empty states. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever `deps` change; a stale answer never overwrites a newer one. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
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
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** A readable sentence for any failure; the API's own `error` text is kept as it is. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 0) return e.message;
    const hint =
      e.status === 401
        ? ' Sign in again.'
        : e.status === 403
          ? ' You do not have access to this.'
          : e.status === 429
            ? ' Too many requests: wait a moment and try again.'
            : '';
    return `${capitalise(e.message)} (HTTP ${e.status}).${hint}`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function ErrorMessage({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
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
