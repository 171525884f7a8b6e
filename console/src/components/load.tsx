import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/client';

/** Loads `fn` on mount and whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({
    loading: true,
  });
  const run = useCallback(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/**
 * An API error as the API said it (text, never markup), in an alert. `focus` moves the keyboard focus to
 * it when it appears (after an action whose button went away, the reader lands on what happened).
 */
export function ErrorAlert({
  error,
  id,
  focus,
  children,
}: {
  error?: Error | null;
  id?: string;
  focus?: boolean;
  children?: ComponentChildren;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focus && error) box.current?.focus();
  }, [focus, error]);
  if (!error) return null;
  return (
    <div role="alert" class="alert" id={id} ref={box} tabIndex={focus ? -1 : undefined}>
      <strong>{error instanceof ApiError ? error.code : 'Error'}</strong>: {error.message}
      {children}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p aria-busy="true" class="muted">
      Loading {what}…
    </p>
  );
}
