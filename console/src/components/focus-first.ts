import { useEffect, useRef } from 'preact/hooks';

/** A form's ref: the form's first input takes the focus once it is drawn (a new or edit form opening). */
export function useFocusFirst() {
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    form.current?.querySelector('input')?.focus();
  }, []);
  return form;
}
