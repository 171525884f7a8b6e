import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';

/**
 * A list page's "New …" button (`title`, when `canCreate`) and the section with the form it opens and
 * closes (`id`). The form is drawn by `children` with `saved(status)`, which closes it and says `status`,
 * and `cancel`; either way the focus goes back to the button. `listed` false (one record's own page)
 * shows neither.
 */
export function NewItem({
  id,
  title,
  listed,
  canCreate,
  children,
}: {
  id: string;
  title: string;
  listed: boolean;
  canCreate: boolean;
  children: (form: { saved: (status: string) => void; cancel: () => void }) => ComponentChildren;
}) {
  const [creating, setCreating] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const button = useRef<HTMLButtonElement>(null);
  const close = () => {
    setCreating(false);
    button.current?.focus();
  };
  return (
    <>
      {listed && canCreate && (
        <p>
          <button
            type="button"
            ref={button}
            aria-expanded={creating}
            aria-controls={id}
            onClick={() => {
              setCreating(!creating);
              setStatus(null);
            }}
          >
            {title}
          </button>
        </p>
      )}
      {listed && creating && (
        <section id={id} aria-labelledby={`${id}-title`} class="card-form">
          <h2 id={`${id}-title`}>{title}</h2>
          {children({
            saved: (said) => {
              setStatus(said);
              close();
            },
            cancel: close,
          })}
        </section>
      )}
      {status && <p role="status">{status}</p>}
    </>
  );
}
