import type { AuthContext } from '../auth/context';
import { connectionForUse } from '../connections/execute';
import { isAppError } from '../platform/errors';
import { actionPublishProblems } from './actions';
import { type Definition, stepConnection } from './store';

export interface PublishIssue {
  path: string;
  message: string;
  code: string;
}

/** Exact warning strings (clients echo them in `acknowledgedWarnings`). */
export const WARNING_NO_STOP_IF_EMPTY =
  'No step has stopIfEmpty, so the actions run on every run, even when the queries return no rows.';
export const WARNING_NO_ACTIONS = 'No actions are configured: runs only record their query results.';
export const warningNoRowLimit = (position: number, name: string) =>
  `Step ${position} ("${name}") has no row limit (LIMIT, TOP, FETCH FIRST or a MongoDB limit); each run reads up to 1,000 rows from it.`;

/**
 * Whether a query bounds its rows itself: LIMIT n, TOP n, FETCH FIRST/NEXT, or a MongoDB JSON query
 * with `limit` / a `$limit` stage. A heuristic for a warning only (every run is capped at 1,000 rows
 * per step anyway).
 */
export function hasRowLimit(query: string): boolean {
  const text = query.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
  if (/\blimit\s+(\d+|\$\d+|\?|:\w+)/i.test(text)) return true;
  if (/\btop\s*\(?\s*\d+/i.test(text)) return true;
  if (/\bfetch\s+(first|next)\b/i.test(text)) return true;
  if (/"\$?limit"\s*:\s*\d+/.test(text)) return true;
  return false;
}

/**
 * decisions §8 publish checks. Errors (400): SCHEDULE without a valid triggerConfig, a step connection
 * the publisher cannot use (missing, not visible, or gone since it was saved), and the actions module's
 * errors (a webhook credential that is missing or whose allowedHosts lack the URL's host). Warnings
 * (422 until acknowledged): no stopIfEmpty while actions exist, no actions, a step without a row
 * limit, and the actions module's warnings.
 */
export async function publishProblems(
  ctx: AuthContext,
  d: Definition,
): Promise<{ errors: PublishIssue[]; warnings: string[] }> {
  const errors: PublishIssue[] = [];
  const warnings: string[] = [];
  if (d.triggerType === 'SCHEDULE' && !d.triggerConfig)
    errors.push({
      path: 'triggerConfig',
      message:
        'A SCHEDULE workflow needs a valid triggerConfig (a ScheduleConfig) before it can be published.',
      code: 'required',
    });
  const checked = new Map<string, Promise<string | null>>();
  for (const [i, s] of d.steps.entries()) {
    const connectionId = stepConnection(d, s);
    if (!connectionId) {
      errors.push({
        path: `steps.${i}.connectionId`,
        message: 'This step has no connection.',
        code: 'required',
      });
      continue;
    }
    let check = checked.get(connectionId);
    if (!check) {
      check = connectionForUse(ctx, connectionId).then(
        () => null,
        (e) => {
          if (isAppError(e) && e.status === 404)
            return 'The connection does not exist or cannot be used by you.';
          throw e;
        },
      );
      checked.set(connectionId, check);
    }
    const problem = await check;
    if (problem)
      errors.push({
        path: s.connectionId ? `steps.${i}.connectionId` : 'connectionId',
        message: `Step ${i + 1} ("${s.name}"): ${problem}`,
        code: 'not_found',
      });
    if (!hasRowLimit(s.query)) warnings.push(warningNoRowLimit(i + 1, s.name));
  }
  for (const [i, a] of d.actions.entries()) {
    const p = await actionPublishProblems(ctx.orgId, a.type, a.config);
    for (const message of p.errors) errors.push({ path: `actions.${i}.config`, message, code: 'publish' });
    warnings.push(...p.warnings);
  }
  if (!d.actions.length) warnings.push(WARNING_NO_ACTIONS);
  else if (!d.steps.some((s) => s.stopIfEmpty)) warnings.push(WARNING_NO_STOP_IF_EMPTY);
  return { errors, warnings: [...new Set(warnings)] };
}
