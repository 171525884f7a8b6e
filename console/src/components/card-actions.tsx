import { useEffect, useRef, useState } from 'preact/hooks';
import { Confirm } from './confirm';

/**
 * A card's editing state: `editing` while its edit form is open, and `editButton` for its Edit button,
 * which takes the focus back once the form closes (saved or cancelled) and Edit is drawn again.
 */
export function useEditing() {
  const [editing, setEditing] = useState(false);
  const editButton = useRef<HTMLButtonElement>(null);
  const wasEditing = useRef(false);
  useEffect(() => {
    if (!editing && wasEditing.current) editButton.current?.focus();
    wasEditing.current = editing;
  }, [editing]);
  return { editing, setEditing, editButton };
}

/**
 * A card's Edit and Delete buttons (named "Edit <name>", "Delete <name>"), shown to whom `mayChange` and
 * hidden while the card is edited (`edit`, its useEditing); Delete asks first, in place ("Delete <what>"),
 * then calls `onDelete`.
 */
export function CardActions({
  name,
  what,
  mayChange,
  edit,
  onDelete,
}: {
  name: string;
  what: string;
  mayChange: boolean;
  edit: ReturnType<typeof useEditing>;
  onDelete: () => void;
}) {
  const [deleting, setDeleting] = useState(false);
  return (
    <>
      {mayChange && !edit.editing && (
        <p class="card-actions">
          <button
            type="button"
            class="secondary"
            ref={edit.editButton}
            aria-label={`Edit ${name}`}
            onClick={() => edit.setEditing(true)}
          >
            Edit
          </button>{' '}
          <button
            type="button"
            class="secondary"
            aria-label={`Delete ${name}`}
            onClick={() => setDeleting(true)}
          >
            Delete
          </button>
        </p>
      )}
      {deleting && (
        <Confirm
          question={`Delete the ${what} “${name}”? This cannot be undone.`}
          action={`Delete ${what}`}
          onConfirm={onDelete}
          onCancel={() => setDeleting(false)}
        />
      )}
    </>
  );
}
