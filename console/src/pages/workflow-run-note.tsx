import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ErrorAlert } from '../components/load';
import { useSubmit } from '../components/use-submit';
import { type Action, runNoteText } from './workflow-run-text';

interface PreviewAnswer {
  status: string;
  wouldRunActions: boolean;
  actionsConfigured: number;
  steps: { name: string; status: string; rowCount: number; error: string | null }[];
}

/**
 * The note by "Run now" (a run of the draft delivers its actions for real, as POST /workflows/{id}/run
 * does) and a Preview button: the draft's steps run, nothing is sent and no run is stored
 * (POST /workflows/{id}/preview).
 */
export function RunNote({
  workflow: w,
  id,
}: {
  workflow: { id: string; isActive: boolean; hasUnpublishedChanges: boolean; actions: Action[] };
  /** The id the "Run now" button points at with aria-describedby. */
  id: string;
}) {
  const [preview, setPreview] = useState<PreviewAnswer | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const previewing = useSubmit(async () => {
    setError(null);
    setPreview(null);
    try {
      setPreview(
        (await ok(api.POST('/workflows/{id}/preview', { params: { path: { id: w.id } } }))) as PreviewAnswer,
      );
    } catch (err) {
      setError(err as ApiError);
    }
  });
  return (
    <>
      <p id={id} class="muted">
        {runNoteText(w)}{' '}
        <button type="button" class="secondary" onClick={() => previewing.run()} disabled={previewing.busy}>
          Preview
        </button>
      </p>
      <ErrorAlert error={error} />
      {preview && (
        <section aria-label="Preview" role="status">
          <p>
            Preview: {preview.status}; nothing was sent.{' '}
            {preview.actionsConfigured
              ? preview.wouldRunActions
                ? `A run would send ${preview.actionsConfigured === 1 ? 'its action' : `its ${preview.actionsConfigured} actions`}.`
                : 'A run would send nothing (a step stops it).'
              : ''}
          </p>
          <ul>
            {preview.steps.map((s) => (
              <li key={s.name}>
                {s.name}: {s.status}, {s.rowCount} row{s.rowCount === 1 ? '' : 's'}
                {s.error ? ` (${s.error})` : ''}
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
