/** A secret the API returns once (a new key, a signing secret), in a status region with a select-all field. */
export function Once({ label, value }: { label: string; value: string }) {
  return (
    <div role="status" class="once">
      <p>{label} It is shown once; copy it now.</p>
      <input readOnly aria-label={label} value={value} onFocus={(e) => e.currentTarget.select()} />
    </div>
  );
}
