/** A visible, in-page confirmation (never window.confirm): the question and two buttons. */
export function Confirm({
  question,
  action,
  onConfirm,
  onCancel,
}: {
  question: string;
  action: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <fieldset class="alert confirm">
      <legend>{question}</legend>
      <p>
        <button type="button" onClick={onConfirm}>
          {action}
        </button>{' '}
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </p>
    </fieldset>
  );
}
