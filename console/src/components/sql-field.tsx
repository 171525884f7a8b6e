import { SqlEditor } from './sql-editor';

/**
 * A step's SQL in the SQL editor (labelled "SQL", the connection's dialect and completion of its tables
 * and columns), with the API's message for it beside it.
 */
export function SqlField({
  id,
  value,
  onInput,
  error,
  connectionId,
}: {
  id: string;
  value: string;
  onInput: (sql: string) => void;
  error?: string;
  connectionId?: string;
}) {
  return (
    <>
      <SqlEditor
        id={id}
        label="SQL"
        rows={4}
        value={value}
        onChange={onInput}
        connectionId={connectionId || undefined}
        invalid={!!error}
        describedBy={error ? `${id}-error` : undefined}
      />
      {error && (
        <span id={`${id}-error`} class="field-error">
          {error}
        </span>
      )}
    </>
  );
}
