import { createHash } from 'node:crypto';
import type { AuthContext } from '../auth/context';
import type { assertReadOnlyAt } from '../dashboards/connection';
import { AppError, isAppError, validationError } from '../platform/errors';
import { newId } from '../platform/ids';
import { type ActionType, credentialIdsOf, parseActionConfig } from './actions';
import type { WorkflowCreate } from './api';
import { parseScheduleConfig } from './schedule';
import type { ActionDef, Definition, StepDef } from './store';

/**
 * The largest definition (draft or published version) as JSON: it lives in one DynamoDB item
 * (400 KB including attribute names), so five steps of 100,000 characters do not all fit.
 */
export const MAX_DEFINITION_BYTES = 300_000;

type StepInput = WorkflowCreate['steps'][number];
type ActionInput = NonNullable<WorkflowCreate['actions']>[number];

const issue = (path: string, message: string, code = 'invalid_value') => ({ path, message, code });
const invalid = (message: string, path: string, code?: string) =>
  validationError(message, { issues: [issue(path, message, code)] });

/** Stable JSON (sorted object keys) so that equal definitions hash equally after a store round trip. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

/** Hash of what a run would execute (ids included: they name actions in attempts). */
export const definitionHash = (d: Definition) => createHash('sha256').update(canonicalJson(d)).digest('hex');

/** Every connection the definition uses. */
export const connectionsOf = (d: Definition) => [
  ...new Set(
    [d.connectionId, ...d.steps.map((s) => s.connectionId)].filter((c): c is string => typeof c === 'string'),
  ),
];

export const credentialsOf = (d: Definition) => [
  ...new Set(d.actions.flatMap((a) => credentialIdsOf(a.type as ActionType, a.config))),
];

/**
 * Builds and validates steps: unique orders (default: array position), sorted by order, names default to
 * `query_N`; each step has a connection (its own or the workflow's) that the caller can use (404 with
 * details.path otherwise, as for every saved connection reference) and one read statement for it
 * (400 READ_ONLY_VIOLATION naming the field). Step ids are kept for steps at the same position.
 */
export async function buildSteps(
  ctx: AuthContext,
  inputs: StepInput[],
  workflowConnectionId: string | null,
  previous: StepDef[] = [],
): Promise<StepDef[]> {
  const queryBytes = inputs.reduce((n, s) => n + Buffer.byteLength(s.query, 'utf8'), 0);
  if (queryBytes > MAX_DEFINITION_BYTES)
    throw validationError(
      `The step queries total ${queryBytes} bytes; a workflow holds at most ${MAX_DEFINITION_BYTES}.`,
      {
        issues: [issue('body.steps', `queries larger than ${MAX_DEFINITION_BYTES} bytes in all`, 'too_big')],
      },
    );
  const seen = new Map<number, number>();
  const withOrder = inputs.map((s, i) => {
    const order = s.order ?? i;
    if (seen.has(order))
      throw invalid(`Step order ${order} is used twice.`, `body.steps.${i}.order`, 'duplicate');
    seen.set(order, i);
    return { s, i, order };
  });
  withOrder.sort((a, b) => a.order - b.order);
  // Lazily: the connection layer and the SQL guard are needed to save steps, not to read workflows.
  const { assertReadOnlyAt, connectionForSave } = await import('../dashboards/connection');
  const types = new Map<string, Promise<{ type: Parameters<typeof assertReadOnlyAt>[0] }>>();
  const out: StepDef[] = [];
  for (const [pos, { s, i, order }] of withOrder.entries()) {
    const connectionId = s.connectionId ?? null;
    const effective = connectionId ?? workflowConnectionId;
    if (!effective)
      throw invalid(
        'This step has no connection: set the workflow connectionId or the step connectionId.',
        `body.steps.${i}.connectionId`,
        'required',
      );
    const path = connectionId ? `body.steps.${i}.connectionId` : 'body.connectionId';
    let conn = types.get(effective);
    if (!conn) {
      conn = connectionForSave(ctx, effective, path);
      types.set(effective, conn);
    }
    const { type } = await conn;
    await assertReadOnlyAt(type, s.query, `body.steps.${i}.query`);
    out.push({
      id: previous[pos]?.id ?? newId(),
      name: s.name ?? `query_${pos + 1}`,
      query: s.query,
      stopIfEmpty: s.stopIfEmpty ?? false,
      order,
      connectionId,
    });
  }
  return out;
}

/** Validates every action config through the actions module (`parseActionConfig`), unique orders. */
export async function buildActions(
  orgId: string,
  inputs: ActionInput[],
  previous: ActionDef[] = [],
): Promise<ActionDef[]> {
  const seen = new Set<number>();
  const out: ActionDef[] = [];
  for (const [i, a] of inputs.entries()) {
    const order = a.order ?? i;
    if (seen.has(order))
      throw invalid(`Action order ${order} is used twice.`, `body.actions.${i}.order`, 'duplicate');
    seen.add(order);
    const config = await parseActionConfig(orgId, a.type, a.config, `body.actions.${i}.config`);
    const same = previous.find((p) => p.order === order && p.type === a.type);
    out.push({ id: same?.id ?? newId(), type: a.type, config, order });
  }
  return out.sort((a, b) => a.order - b.order);
}

export function parseTriggerConfig(raw: unknown) {
  if (raw === undefined || raw === null) return null;
  return parseScheduleConfig(raw, 'body.triggerConfig');
}

export function assertDefinitionSize(d: Definition): void {
  const bytes = Buffer.byteLength(JSON.stringify(d), 'utf8');
  if (bytes > MAX_DEFINITION_BYTES) {
    const actionBytes = Buffer.byteLength(JSON.stringify(d.actions), 'utf8');
    const field = actionBytes * 2 > bytes ? 'body.actions' : 'body.steps';
    throw validationError(
      `The workflow definition is ${bytes} bytes of JSON; at most ${MAX_DEFINITION_BYTES} fit (shorten the ${field === 'body.actions' ? 'action templates' : 'step queries'}).`,
      { issues: [issue(field, `definition larger than ${MAX_DEFINITION_BYTES} bytes`, 'too_big')] },
    );
  }
}

/** A re-thrown AppError with `details.path` set (for checks that do not name the field themselves). */
export function atPath(e: unknown, path: string): unknown {
  if (!isAppError(e)) return e;
  const details = e.details && typeof e.details === 'object' ? { path, ...e.details } : { path };
  return new AppError(e.status, e.code, e.message, details, e.headers);
}
