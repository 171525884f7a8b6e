/**
 * A labelled text input with the API's validation message for it beside it (`aria-invalid`, and the
 * message named by `aria-describedby` as `<id>-error`).
 */
export function TextField({
  id,
  label,
  value,
  onInput,
  error,
  type = 'text',
  required,
}: {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
  error?: string;
  type?: 'text' | 'email' | 'password' | 'url';
  required?: boolean;
}) {
  const errorId = `${id}-error`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        {...({ type } as { type: 'text' })}
        value={value}
        required={required}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? errorId : undefined}
        autocomplete="off"
      />
      {error && (
        <span id={errorId} class="field-error">
          {error}
        </span>
      )}
    </div>
  );
}
