/**
 * Workflow actions (webhook and email): configuration rules, publish checks and delivery. The
 * workflows module (CRUD, runs, schedules) calls only what this file exports, and view.ts to show a
 * stored action (without loading these rules and the outbound module).
 */

import { getCredentialMeta } from '../../credentials/store';
import { checkDestination, checkUrl } from '../../outbound';
import { config as appConfig } from '../../platform/config';
import { validationError } from '../../platform/errors';
// Only the settings: the mail adapters (nodemailer, SES) and Markdown load with the first email.
import { mailUnavailable } from '../../platform/mail/settings';
import {
  type EmailActionConfig,
  EmailConfigSchema,
  LIMITS,
  secretQueryParameters,
  type WebhookActionConfig,
  WebhookConfigSchema,
} from './config';
import { highestStep, renderJson, sampleContext, type TemplateContext } from './template';
import type { ActionConfig, ActionType, DeliverInput, DeliverOutcome } from './types';

export type { EmailActionConfig, WebhookActionConfig } from './config';
export type {
  ActionAttempt,
  ActionConfig,
  ActionType,
  DeliverInput,
  DeliverOutcome,
  StepOutput,
} from './types';
export { sanitizeActionConfig } from './view';

type Issue = { path: string; message: string; code: string };

const fail = (issues: Issue[]) => validationError('Request validation failed.', { issues });

/**
 * Accepts an object or a JSON-encoded string; throws the 400 VALIDATION_ERROR with details naming
 * `${path}.<field>` (path e.g. 'body.actions.0.config'). Includes the outbound URL check at save time
 * (`checkUrl` + `checkDestination`) and the refusal of inline secret headers.
 */
export async function parseActionConfig(
  _orgId: string,
  type: ActionType,
  raw: unknown,
  path: string,
): Promise<ActionConfig> {
  let value = raw;
  if (typeof raw === 'string') {
    if (raw.length > LIMITS.rawConfig)
      throw fail([{ path, message: `at most ${LIMITS.rawConfig} characters`, code: 'too_big' }]);
    try {
      value = JSON.parse(raw);
    } catch {
      throw fail([
        { path, message: 'config is a JSON object or a JSON-encoded object string', code: 'invalid_json' },
      ]);
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw fail([
      { path, message: 'config is a JSON object or a JSON-encoded object string', code: 'invalid_type' },
    ]);

  if (type === 'EMAIL') {
    const r = EmailConfigSchema.safeParse(value);
    if (!r.success) throw fail(zodIssues(path, r.error.issues));
    return r.data;
  }
  if (type !== 'WEBHOOK')
    throw fail([
      {
        path: path.replace(/\.config$/, '.type'),
        message: 'type is EMAIL or WEBHOOK',
        code: 'invalid_value',
      },
    ]);

  const r = WebhookConfigSchema.safeParse(value);
  const issues: Issue[] = r.success ? [] : zodIssues(path, r.error.issues);
  const url = (value as { url?: unknown }).url;
  // The URL rules run even when other fields are wrong, so one answer lists every problem.
  if (typeof url === 'string' && !issues.some((i) => i.path === `${path}.url`)) {
    const problem = await urlProblem(url);
    if (problem) issues.push({ path: `${path}.url`, message: problem, code: 'custom' });
  }
  if (r.success && r.data.bodyMode === 'JSON' && r.data.bodyTemplate) {
    const problem = jsonTemplateProblem(r.data.bodyTemplate);
    if (problem) issues.push({ path: `${path}.bodyTemplate`, message: problem, code: 'custom' });
  }
  if (issues.length || !r.success) throw fail(issues);
  return r.data;
}

function zodIssues(path: string, issues: { path: PropertyKey[]; message: string; code: string }[]): Issue[] {
  return issues.map((i) => ({
    path: [path, ...i.path.map(String)].join('.'),
    message: i.code === 'unrecognized_keys' ? `unknown field: ${i.message}` : i.message,
    code: i.code,
  }));
}

async function urlProblem(url: string): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = checkUrl(url);
  } catch (e) {
    return `the URL is not allowed: ${(e as Error).message}`;
  }
  const secrets = secretQueryParameters(parsed);
  if (secrets.length)
    return `the URL carries a secret in its query string (${secrets.join(', ')}): use a credential instead`;
  try {
    await checkDestination(url);
  } catch (e) {
    return `the URL is not allowed: ${(e as Error).message}`;
  }
  return undefined;
}

/** A JSON-mode template must give valid JSON once its placeholders are filled in. */
function jsonTemplateProblem(template: string): string | undefined {
  try {
    JSON.parse(renderJson(template, sampleContext()));
    return undefined;
  } catch (e) {
    return `bodyMode JSON needs a template that is valid JSON once placeholders are filled in (${
      (e as Error).message
    }); write a bare {{query_1.rows}} for the array, "{{workflow.name}}" inside quotes for text`;
  }
}

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
};

/**
 * Publish-time problems of one action. Errors: the webhook's credential does not exist; the URL host
 * is not in the credential's allowedHosts; email cannot be sent in this runtime (AWS without an SES
 * identity). Warnings (exact strings, to be echoed in acknowledgedWarnings): see the README.
 */
export async function actionPublishProblems(
  orgId: string,
  type: ActionType,
  config: ActionConfig,
): Promise<{ errors: string[]; warnings: string[] }> {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (type === 'WEBHOOK') {
    const c = config as WebhookActionConfig;
    const host = hostOf(c.url);
    if (c.credentialId) {
      const meta = await getCredentialMeta(orgId, c.credentialId);
      if (!meta)
        errors.push(`The webhook to ${host} uses credential ${c.credentialId}, which does not exist.`);
      else if (!meta.allowedHosts.includes(host))
        errors.push(
          `The webhook host ${host} is not in the allowed hosts of credential "${meta.name}" (${meta.allowedHosts.join(', ')}).`,
        );
    }
    if (!c.critical)
      warnings.push(
        `The webhook to ${host} is not critical: when it fails the run ends PARTIAL_SUCCESS, not FAILED.`,
      );
    if (c.retry.maxAttempts === 1)
      warnings.push(`The webhook to ${host} is tried once: a temporary failure is not retried.`);
    if (c.bodyMode === 'NONE' && c.method !== 'GET' && c.method !== 'DELETE')
      warnings.push(
        `The webhook to ${host} sends ${c.method} without a body: no query results are delivered.`,
      );
  } else {
    const c = config as EmailActionConfig;
    const unavailable = mailUnavailable();
    if (unavailable) errors.push(unavailable);
    else if (appConfig().runtime === 'local' && !appConfig().SMTP_URL)
      warnings.push(
        'Email is written to the local outbox folder (.data/outbox), not sent: set SMTP_URL to send it.',
      );
    const usesResults = /\{\{\s*query_\d+\./.test(`${c.subject}${c.body}`) || c.includeTable || c.attachCsv;
    if (!usesResults)
      warnings.push(
        `The email "${c.subject}" includes no query results (no query placeholder, includeTable or attachCsv).`,
      );
    if (!c.critical)
      warnings.push(
        `The email "${c.subject}" is not critical: when it fails the run ends PARTIAL_SUCCESS, not FAILED.`,
      );
  }
  return { errors, warnings };
}

/** Credential ids referenced by a config (for the IN_USE check). */
export function credentialIdsOf(type: ActionType, config: ActionConfig): string[] {
  if (type !== 'WEBHOOK') return [];
  const id = (config as WebhookActionConfig).credentialId;
  return id ? [id] : [];
}

/**
 * The highest step number (query_N) the action's templates refer to, 0 when none. Extra export for the
 * workflows module: a template referring to a step the workflow lacks fails at delivery.
 */
export function highestStepReferenced(type: ActionType, config: ActionConfig): number {
  if (type === 'WEBHOOK') return highestStep((config as WebhookActionConfig).bodyTemplate ?? '');
  const c = config as EmailActionConfig;
  return Math.max(highestStep(c.subject), highestStep(c.body));
}

/**
 * Sends one action (webhook through sendOutbound with the credential applied, retries with backoff and
 * jitter inside the deadline; email through the mail port), recording every attempt.
 */
export async function deliverAction(input: DeliverInput): Promise<DeliverOutcome> {
  const ctx: TemplateContext = {
    workflow: input.workflow,
    run: { id: input.runId, scheduledFor: input.scheduledFor },
    steps: input.steps,
  };
  if (input.action.type === 'WEBHOOK') {
    const { deliverWebhook } = await import('./webhook');
    return deliverWebhook(input, ctx);
  }
  const { deliverEmail } = await import('./email-delivery');
  return deliverEmail(input, ctx);
}
