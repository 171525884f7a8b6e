import type { ComponentChildren } from 'preact';

/**
 * A form's last line: `children` (other buttons, such as Preview) first, the submit button (`label`,
 * disabled while `busy`), then Cancel when the form may be closed.
 */
export function FormActions({
  label,
  busy,
  onCancel,
  children,
}: {
  label: string;
  busy: boolean;
  onCancel?: () => void;
  children?: ComponentChildren;
}) {
  return (
    <p>
      {children}
      <button type="submit" disabled={busy}>
        {label}
      </button>
      {onCancel && (
        <>
          {' '}
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        </>
      )}
    </p>
  );
}
