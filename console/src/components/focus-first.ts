import { useLayoutEffect, useRef } from 'preact/hooks';

/**
 * A form's ref: the form's first input takes the focus once it is drawn (a new or edit form opening),
 * unless the focus is already inside the form. Done as the form is committed (a layout effect), not after
 * the next paint: a field the user clicks or types into as the form appears keeps the focus (an effect
 * after paint took it back to the first field, and the typing went there).
 */
export function useFocusFirst() {
  const form = useRef<HTMLFormElement>(null);
  useLayoutEffect(() => {
    const f = form.current;
    if (!f || f.contains(document.activeElement)) return;
    f.querySelector('input')?.focus();
  }, []);
  return form;
}
