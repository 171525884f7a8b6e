import { useState } from 'preact/hooks';
import { type ApiError, api, ok } from '../api/client';
import { ConnectionSelect, useConnections } from '../components/connection-select';
import { fieldErrors } from '../components/field-errors';
import { FormActions } from '../components/form-actions';
import { ErrorAlert, useLoad } from '../components/load';
import { SqlField } from '../components/sql-field';
import { TextField } from '../components/text-field';
import { submitWith, useSubmit } from '../components/use-submit';
import { isAdmin, type Me, useMe } from '../me';
import { ScheduleFields, type ScheduleForm, scheduleConfigOf, scheduleFormOf } from './workflow-schedule';

/** A workflow as the API returns it (GET /workflows/{id}). */
export interface WorkflowRecord {
  id: string;
  name: string;
  description: string;
  connectionId: string | null;
  triggerType: string;
  triggerConfig: string | null;
  isActive: boolean;
  draftRevision: number;
  publishedVersion: number | null;
  hasUnpublishedChanges: boolean;
  /** The creator's user id: the creator and admins may change, publish, deactivate or delete it. */
  createdBy: string;
  updatedAt: string;
  steps: {
    id: string;
    name: string;
    query: string;
    stopIfEmpty: boolean;
    order: number;
    connectionId: string | null;
  }[];
  actions: { id: string; type: string; config: string; order: number }[];
}

const MAX_STEPS = 5;
const MAX_ACTIONS = 10;
const METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] as const;
const BODY_MODES = [
  ['JSON', 'JSON'],
  ['RAW', 'Text'],
  ['FORM_URLENCODED', 'Form (URL-encoded)'],
  ['NONE', 'No body'],
] as const;

interface StepForm {
  key: number;
  name: string;
  connectionId: string;
  query: string;
  stopIfEmpty: boolean;
}
interface WebhookForm {
  key: number;
  type: 'WEBHOOK';
  url: string;
  method: string;
  bodyMode: string;
  body: string;
  credentialId: string;
  /** The stored configuration's other settings (headers, retries, timeout…), sent back unchanged. */
  rest: Record<string, unknown>;
}
interface EmailForm {
  key: number;
  type: 'EMAIL';
  to: string;
  cc: string;
  subject: string;
  body: string;
  attachCsv: boolean;
  includeTable: boolean;
  rest: Record<string, unknown>;
}
type ActionForm = WebhookForm | EmailForm;
interface Form {
  name: string;
  description: string;
  trigger: 'MANUAL' | 'SCHEDULE';
  schedule: ScheduleForm;
  steps: StepForm[];
  actions: ActionForm[];
}

let nextKey = 1;
const newStep = (connectionId = ''): StepForm => ({
  key: nextKey++,
  name: '',
  connectionId,
  query: '',
  stopIfEmpty: false,
});
const newWebhook = (rest: Record<string, unknown> = {}): WebhookForm => ({
  key: nextKey++,
  type: 'WEBHOOK',
  url: '',
  method: 'POST',
  bodyMode: 'JSON',
  body: '{"rows": {{query_1.rows}}}',
  credentialId: '',
  rest,
});
const newEmail = (rest: Record<string, unknown> = {}): EmailForm => ({
  key: nextKey++,
  type: 'EMAIL',
  to: '',
  cc: '',
  subject: 'Results of {{workflow.name}}',
  body: '{{query_1.table}}',
  attachCsv: true,
  includeTable: false,
  rest,
});

function parseObject(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

const list = (v: unknown) => (Array.isArray(v) ? v.join(', ') : typeof v === 'string' ? v : '');

/** The builder's form of a stored workflow (or an empty one). */
function formOf(w?: WorkflowRecord): Form {
  if (!w)
    return {
      name: '',
      description: '',
      trigger: 'MANUAL',
      schedule: scheduleFormOf(null),
      steps: [newStep()],
      actions: [],
    };
  return {
    name: w.name,
    description: w.description,
    trigger: w.triggerType === 'SCHEDULE' ? 'SCHEDULE' : 'MANUAL',
    schedule: scheduleFormOf(w.triggerConfig),
    steps: w.steps.map((s) => ({
      key: nextKey++,
      name: s.name,
      connectionId: s.connectionId ?? w.connectionId ?? '',
      query: s.query,
      stopIfEmpty: s.stopIfEmpty,
    })),
    actions: w.actions.map((a): ActionForm => {
      const { url, method, bodyMode, bodyTemplate, credentialId, ...rest } = parseObject(a.config);
      if (a.type === 'WEBHOOK')
        return {
          ...newWebhook(rest),
          url: String(url ?? ''),
          method: String(method ?? 'POST'),
          bodyMode: String(bodyMode ?? 'JSON'),
          body: typeof bodyTemplate === 'string' ? bodyTemplate : '',
          credentialId: typeof credentialId === 'string' ? credentialId : '',
        };
      const { to, cc, subject, body, attachCsv, includeTable, ...others } = parseObject(a.config);
      return {
        ...newEmail(others),
        to: list(to),
        cc: list(cc),
        subject: String(subject ?? ''),
        body: String(body ?? ''),
        attachCsv: attachCsv === true,
        includeTable: includeTable === true,
      };
    }),
  };
}

const addresses = (s: string) =>
  s
    .split(/[,;\s]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/** The API body (WorkflowCreate; the same fields make a draft change). */
function bodyOf(f: Form) {
  const connectionId = f.steps.find((s) => s.connectionId)?.connectionId ?? null;
  return {
    name: f.name,
    description: f.description,
    connectionId,
    triggerType: f.trigger,
    ...(f.trigger === 'SCHEDULE' ? { triggerConfig: scheduleConfigOf(f.schedule) } : {}),
    steps: f.steps.map((s, order) => ({
      query: s.query,
      ...(s.name.trim() ? { name: s.name } : {}),
      stopIfEmpty: s.stopIfEmpty,
      order,
      connectionId: s.connectionId || null,
    })),
    actions: f.actions.map((a, order) => ({
      type: a.type,
      order,
      config:
        a.type === 'WEBHOOK'
          ? {
              version: 2,
              ...a.rest,
              url: a.url.trim(),
              method: a.method,
              bodyMode: a.bodyMode,
              bodyTemplate: a.bodyMode === 'NONE' ? null : a.body,
              credentialId: a.credentialId || null,
            }
          : {
              ...a.rest,
              to: addresses(a.to),
              cc: addresses(a.cc),
              subject: a.subject,
              body: a.body,
              attachCsv: a.attachCsv,
              includeTable: a.includeTable,
            },
    })),
  };
}

const mayPickCredentials = (me: Me | null) =>
  isAdmin(me) && !!me && (me.scopes.includes('*') || me.scopes.includes('workflow_credentials'));

/**
 * The workflow builder: name, query steps (connection and SQL), delivery actions (webhook or e-mail),
 * the trigger (by hand or a schedule with its time zone). Creates the workflow (POST, an inactive draft)
 * or saves a draft change of `existing` (PATCH with the draft revision it was read at); publishing is
 * the workflow page's. The API's validation messages appear beside their fields.
 */
export function WorkflowForm({
  existing,
  onSaved,
  onCancel,
}: {
  existing?: WorkflowRecord;
  onSaved: (w: WorkflowRecord) => void;
  onCancel?: () => void;
}) {
  const [f, setF] = useState<Form>(() => formOf(existing));
  const [error, setError] = useState<ApiError | null>(null);
  const errors = fieldErrors(error);
  const me = useMe();
  const connections = useConnections();
  const pick = mayPickCredentials(me);
  const credentials = useLoad(
    () =>
      pick
        ? ok(api.GET('/workflow-credentials', { params: { query: { pageSize: 100 } } }))
        : Promise.resolve(null),
    [pick],
  );
  const prefix = existing ? `wf-${existing.id}` : 'wf-new';
  // Updates from the latest form (the SQL editor may report several changes before the next render).
  const setStep = (i: number, s: Partial<StepForm>) =>
    setF((old) => ({ ...old, steps: old.steps.map((x, j) => (j === i ? { ...x, ...s } : x)) }));
  const setAction = (i: number, a: Partial<WebhookForm> | Partial<EmailForm>) =>
    setF((old) => ({
      ...old,
      actions: old.actions.map((x, j) => (j === i ? ({ ...x, ...a } as ActionForm) : x)),
    }));
  const save = useSubmit(async () => {
    setError(null);
    try {
      const body = bodyOf(f);
      const saved = existing
        ? await ok(
            api.PATCH('/workflows/{id}', {
              params: { path: { id: existing.id } },
              body: { ...body, expectedDraftRevision: existing.draftRevision },
            }),
          )
        : await ok(api.POST('/workflows', { body }));
      onSaved(saved as WorkflowRecord);
    } catch (err) {
      setError(err as ApiError);
      // The first field the API named gets the focus (the alert below says what went wrong overall).
      setTimeout(() => document.querySelector<HTMLElement>(`#${prefix}-form [aria-invalid="true"]`)?.focus());
    }
  });
  // A message for the field or for a part of it (`actions.0.config.to.1`: the second address).
  const under = (path: string) =>
    errors[path] ?? Object.entries(errors).find(([k]) => k.startsWith(`${path}.`))?.[1];
  const fieldError = (path: string, id: string) =>
    errors[path] && (
      <span id={`${id}-error`} class="field-error">
        {errors[path]}
      </span>
    );
  const invalid = (path: string, id: string) =>
    errors[path] ? { 'aria-invalid': true as const, 'aria-describedby': `${id}-error` } : {};

  return (
    <form id={`${prefix}-form`} class="stack builder" onSubmit={submitWith(save.run)}>
      <TextField
        id={`${prefix}-name`}
        label="Name"
        value={f.name}
        onInput={(name) => setF({ ...f, name })}
        error={errors.name}
        required
      />
      <TextField
        id={`${prefix}-description`}
        label="Description"
        value={f.description}
        onInput={(description) => setF({ ...f, description })}
        error={errors.description}
      />

      <h3>Steps</h3>
      <p class="muted">
        Each step runs one read query; later steps and the actions can use its rows as{' '}
        <code>{'{{query_1.rows}}'}</code>, <code>{'{{query_1.row_count}}'}</code> (1 is the step’s number).
      </p>
      {errors.steps && <p class="field-error">{errors.steps}</p>}
      {f.steps.map((s, i) => {
        const id = `${prefix}-step-${s.key}`;
        return (
          <fieldset key={s.key} class="step">
            <legend>Step {i + 1}</legend>
            <TextField
              id={`${id}-name`}
              label="Step name"
              value={s.name}
              onInput={(name) => setStep(i, { name })}
              error={errors[`steps.${i}.name`]}
            />
            <ConnectionSelect
              id={`${id}-connection`}
              value={s.connectionId}
              connections={connections.data}
              onChange={(connectionId) => setStep(i, { connectionId })}
            />
            {fieldError(`steps.${i}.connectionId`, `${id}-connection`) ||
              (i === 0 && fieldError('connectionId', `${id}-connection`))}
            <SqlField
              id={`${id}-sql`}
              connectionId={s.connectionId}
              value={s.query}
              onInput={(query) => setStep(i, { query })}
              error={errors[`steps.${i}.query`]}
            />
            <label class="check">
              <input
                type="checkbox"
                checked={s.stopIfEmpty}
                onChange={(e) => setStep(i, { stopIfEmpty: e.currentTarget.checked })}
              />{' '}
              Stop here when this step returns no rows (no later step or action runs)
            </label>
            {f.steps.length > 1 && (
              <button
                type="button"
                class="link"
                onClick={() => setF({ ...f, steps: f.steps.filter((_, j) => j !== i) })}
                aria-label={`Remove step ${i + 1}`}
              >
                Remove step
              </button>
            )}
          </fieldset>
        );
      })}
      {f.steps.length < MAX_STEPS && (
        <p>
          <button
            type="button"
            class="secondary"
            onClick={() => setF({ ...f, steps: [...f.steps, newStep(f.steps.at(-1)?.connectionId)] })}
          >
            Add step
          </button>
        </p>
      )}

      <h3>Actions</h3>
      <p class="muted">
        What a run delivers: a request to a webhook (public HTTPS on port 443) or an e-mail. Templates may use{' '}
        <code>{'{{query_1.rows}}'}</code>, <code>{'{{query_1.row_count}}'}</code>,{' '}
        <code>{'{{workflow.name}}'}</code> and <code>{'{{run.id}}'}</code>; e-mail bodies also{' '}
        <code>{'{{query_1.table}}'}</code>.
      </p>
      {errors.actions && <p class="field-error">{errors.actions}</p>}
      {f.actions.length === 0 && <p class="muted">No actions: runs only record their query results.</p>}
      {f.actions.map((a, i) => {
        const id = `${prefix}-action-${a.key}`;
        const at = (k: string) => `actions.${i}.config.${k}`;
        return (
          <fieldset key={a.key} class="action">
            <legend>Action {i + 1}</legend>
            <div class="field">
              <label for={`${id}-type`}>Action type</label>
              <select
                id={`${id}-type`}
                value={a.type}
                onChange={(e) => {
                  const type = e.currentTarget.value;
                  setF({
                    ...f,
                    actions: f.actions.map((x, j) =>
                      j === i ? (type === 'EMAIL' ? newEmail() : newWebhook()) : x,
                    ),
                  });
                }}
              >
                <option value="WEBHOOK">Webhook</option>
                <option value="EMAIL">E-mail</option>
              </select>
            </div>
            {a.type === 'WEBHOOK' ? (
              <>
                <TextField
                  id={`${id}-url`}
                  label="URL"
                  type="url"
                  value={a.url}
                  onInput={(url) => setAction(i, { url })}
                  error={errors[at('url')]}
                />
                <div class="field">
                  <label for={`${id}-method`}>Method</label>
                  <select
                    id={`${id}-method`}
                    value={a.method}
                    onChange={(e) => setAction(i, { method: e.currentTarget.value })}
                  >
                    {METHODS.map((m) => (
                      <option key={m}>{m}</option>
                    ))}
                  </select>
                </div>
                <div class="field">
                  <label for={`${id}-mode`}>Body format</label>
                  <select
                    id={`${id}-mode`}
                    value={a.bodyMode}
                    onChange={(e) => setAction(i, { bodyMode: e.currentTarget.value })}
                    {...invalid(at('bodyMode'), `${id}-mode`)}
                  >
                    {BODY_MODES.map(([v, label]) => (
                      <option key={v} value={v}>
                        {label}
                      </option>
                    ))}
                  </select>
                  {fieldError(at('bodyMode'), `${id}-mode`)}
                </div>
                {a.bodyMode !== 'NONE' && (
                  <div class="field">
                    <label for={`${id}-body`}>Body</label>
                    <textarea
                      id={`${id}-body`}
                      class="code"
                      rows={4}
                      value={a.body}
                      onInput={(e) => setAction(i, { body: e.currentTarget.value })}
                      {...invalid(at('bodyTemplate'), `${id}-body`)}
                    />
                    {fieldError(at('bodyTemplate'), `${id}-body`)}
                  </div>
                )}
                {pick ? (
                  <div class="field">
                    <label for={`${id}-credential`}>Credential</label>
                    <select
                      id={`${id}-credential`}
                      value={a.credentialId}
                      onChange={(e) => setAction(i, { credentialId: e.currentTarget.value })}
                      {...invalid(at('credentialId'), `${id}-credential`)}
                    >
                      <option value="">None</option>
                      {(credentials.data ?? []).map((c) => (
                        <option key={c.id} value={c.id}>
                          {c.name} ({c.kind}; {c.allowedHosts.join(', ')})
                        </option>
                      ))}
                    </select>
                    {fieldError(at('credentialId'), `${id}-credential`)}
                    <ErrorAlert error={credentials.error} />
                  </div>
                ) : (
                  a.credentialId && (
                    <p class="muted">This action sends a credential an admin chose; it is kept as it is.</p>
                  )
                )}
              </>
            ) : (
              <>
                <TextField
                  id={`${id}-to`}
                  label="Recipients (comma-separated)"
                  value={a.to}
                  onInput={(to) => setAction(i, { to })}
                  error={under(at('to'))}
                />
                <TextField
                  id={`${id}-cc`}
                  label="Cc (comma-separated)"
                  value={a.cc}
                  onInput={(cc) => setAction(i, { cc })}
                  error={under(at('cc'))}
                />
                <TextField
                  id={`${id}-subject`}
                  label="Subject"
                  value={a.subject}
                  onInput={(subject) => setAction(i, { subject })}
                  error={errors[at('subject')]}
                />
                <div class="field">
                  <label for={`${id}-message`}>Message (Markdown)</label>
                  <textarea
                    id={`${id}-message`}
                    rows={4}
                    value={a.body}
                    onInput={(e) => setAction(i, { body: e.currentTarget.value })}
                    {...invalid(at('body'), `${id}-message`)}
                  />
                  {fieldError(at('body'), `${id}-message`)}
                </div>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={a.attachCsv}
                    onChange={(e) => setAction(i, { attachCsv: e.currentTarget.checked })}
                  />{' '}
                  Attach the rows as CSV
                </label>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={a.includeTable}
                    onChange={(e) => setAction(i, { includeTable: e.currentTarget.checked })}
                  />{' '}
                  Include the rows as a table in the message
                </label>
              </>
            )}
            <button
              type="button"
              class="link"
              onClick={() => setF({ ...f, actions: f.actions.filter((_, j) => j !== i) })}
              aria-label={`Remove action ${i + 1}`}
            >
              Remove action
            </button>
          </fieldset>
        );
      })}
      {f.actions.length < MAX_ACTIONS && (
        <p>
          <button
            type="button"
            class="secondary"
            onClick={() => setF({ ...f, actions: [...f.actions, newWebhook()] })}
          >
            Add action
          </button>
        </p>
      )}

      <h3>Trigger</h3>
      <fieldset>
        <legend>When it runs</legend>
        <label class="check">
          <input
            type="radio"
            name={`${prefix}-trigger`}
            checked={f.trigger === 'MANUAL'}
            onChange={() => setF({ ...f, trigger: 'MANUAL' })}
          />{' '}
          Only when run by hand
        </label>
        <label class="check">
          <input
            type="radio"
            name={`${prefix}-trigger`}
            checked={f.trigger === 'SCHEDULE'}
            onChange={() => setF({ ...f, trigger: 'SCHEDULE' })}
          />{' '}
          On a schedule
        </label>
      </fieldset>
      {f.trigger === 'SCHEDULE' && (
        <ScheduleFields
          prefix={prefix}
          value={f.schedule}
          onChange={(schedule) => setF({ ...f, schedule })}
          errors={errors}
        />
      )}
      {errors.triggerConfig && <p class="field-error">{errors.triggerConfig}</p>}

      <ErrorAlert error={error} />
      <FormActions label="Save" busy={save.busy} onCancel={onCancel} />
    </form>
  );
}
