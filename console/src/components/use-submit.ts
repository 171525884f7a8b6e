import { useRef, useState } from 'preact/hooks';

/**
 * Wraps an action that writes (create, submit, approve…) so that it runs once at a time: a second click,
 * Enter or shortcut while the first is in flight does nothing. `busy` disables the button meanwhile.
 */
export function useSubmit<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  const running = useRef(false);
  const [busy, setBusy] = useState(false);
  const run = async (...args: A) => {
    if (running.current) return;
    running.current = true;
    setBusy(true);
    try {
      await action(...args);
    } finally {
      running.current = false;
      setBusy(false);
    }
  };
  return { run, busy };
}

/**
 * A form's submit handler: the browser loads no page, and `run` (a useSubmit's `run`) starts. Enter in a
 * field and the submit button both come here.
 */
export const submitWith =
  (run: () => unknown) =>
  (e: Event): void => {
    e.preventDefault();
    void run();
  };
