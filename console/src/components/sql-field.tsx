/**
 * A step's SQL, labelled "SQL", with the API's message for it beside it. (A plain text area until the
 * console's SQL editor component is in; `connectionId` is for its completion.)
 */
export function SqlField({
  id,
  value,
  onInput,
  error,
}: {
  id: string;
  value: string;
  onInput: (sql: string) => void;
  error?: string;
  connectionId?: string;
}) {
  return (
    <div class="field">
      <label for={id}>SQL</label>
      <textarea
        id={id}
        class="code"
        rows={4}
        spellcheck={false}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      />
      {error && (
        <span id={`${id}-error`} class="field-error">
          {error}
        </span>
      )}
    </div>
  );
}
