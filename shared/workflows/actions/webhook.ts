import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { applyCredential } from '../../credentials/apply';
import { OutboundFailed, OutboundRefused, sendOutbound } from '../../outbound';
import { newId, nowIso } from '../../platform/ids';
import type { WebhookActionConfig } from './config';
import { renderForm, renderJson, renderText, type TemplateContext, toJson } from './template';
import type { ActionAttempt, DeliverInput, DeliverOutcome } from './types';
import { bound, MIN_ATTEMPT_MS, STORED_ERROR_CHARS } from './util';

/** Response bytes read from the receiver (the rest is discarded unread). */
export const RESPONSE_READ_BYTES = 16 * 1024;
/** Characters of the (redacted) response body stored with an attempt. */
export const STORED_BODY_CHARS = 4096;
/** Response headers stored with an attempt (nothing else is kept), each value at most 256 characters. */
export const STORED_RESPONSE_HEADERS = [
  'content-type',
  'content-length',
  'date',
  'retry-after',
  'location',
  'x-request-id',
  'x-correlation-id',
  'request-id',
  'x-amzn-requestid',
  'x-github-request-id',
] as const;
/** Longest wait between two attempts; a Retry-After above it is not honoured beyond it. */
export const MAX_RETRY_WAIT_MS = 60_000;

const USER_AGENT = 'Loupe-Workflows/1.0';

/** `https://host/path` without userinfo, query string or fragment (what attempts store). */
export function sanitizeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid url)';
  }
}

/** A Location value (absolute or relative) resolved against the request URL. */
function resolveUrl(value: string, base: string): string {
  try {
    return new URL(value, base).href;
  } catch {
    return value;
  }
}

function defaultContentType(mode: WebhookActionConfig['bodyMode']): string | undefined {
  if (mode === 'JSON') return 'application/json; charset=utf-8';
  if (mode === 'FORM_URLENCODED') return 'application/x-www-form-urlencoded';
  if (mode === 'RAW') return 'text/plain; charset=utf-8';
  return undefined;
}

/** The payload sent in JSON mode when no bodyTemplate is configured. */
export function defaultJsonPayload(ctx: TemplateContext): string {
  return toJson({
    workflow: ctx.workflow,
    run: ctx.run,
    steps: ctx.steps.map((s, i) => ({
      step: i + 1,
      name: s.name,
      rowCount: s.rowCount,
      columns: s.columns,
      rows: s.rows,
    })),
  });
}

export function renderWebhookBody(config: WebhookActionConfig, ctx: TemplateContext): string | undefined {
  if (config.bodyMode === 'NONE') return undefined;
  if (config.bodyMode === 'JSON')
    return config.bodyTemplate ? renderJson(config.bodyTemplate, ctx) : defaultJsonPayload(ctx);
  if (config.bodyMode === 'FORM_URLENCODED') return renderForm(config.bodyTemplate ?? '', ctx);
  return renderText(config.bodyTemplate ?? '', ctx);
}

/** Statuses worth another attempt: timeouts, throttling and server errors. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** Exponential backoff with equal jitter: base·2^(n-1), half fixed and half random. */
export function backoffMs(baseDelayMs: number, attempt: number): number {
  const exp = Math.min(MAX_RETRY_WAIT_MS, baseDelayMs * 2 ** (attempt - 1));
  const half = Math.floor(exp / 2);
  return half + randomInt(0, half + 1);
}

function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function storedHeaders(
  headers: Record<string, string>,
  redact: (t: string) => string,
  base: string,
): string | null {
  const kept: Record<string, string> = {};
  for (const name of STORED_RESPONSE_HEADERS) {
    const v = headers[name];
    if (v === undefined) continue;
    const value = name === 'location' ? sanitizeUrl(resolveUrl(v, base)) : v;
    kept[name] = bound(redact(value), 256);
  }
  return Object.keys(kept).length ? JSON.stringify(kept) : null;
}

export async function deliverWebhook(input: DeliverInput, ctx: TemplateContext): Promise<DeliverOutcome> {
  const config = input.action.config as WebhookActionConfig;
  const url = sanitizeUrl(config.url);
  const attempts: ActionAttempt[] = [];
  let redact: (t: string) => string = (t) => t;

  const start = (n: number, bodyBytes: number): ActionAttempt => ({
    id: newId(),
    runId: input.runId,
    actionId: input.action.id,
    actionOrder: input.action.order,
    attempt: n,
    status: 'RUNNING',
    method: config.method,
    url,
    requestBodyBytes: bodyBytes,
    statusCode: null,
    durationMs: null,
    responseHeaders: null,
    responseBody: null,
    error: null,
    startedAt: nowIso(),
    completedAt: null,
  });
  const finish = async (a: ActionAttempt, patch: Partial<ActionAttempt>) => {
    Object.assign(a, patch, { completedAt: nowIso() });
    if (a.error) a.error = bound(redact(a.error), STORED_ERROR_CHARS);
    attempts.push(a);
    await input.onAttempt({ ...a });
  };
  const outcome = (success: boolean, error: string | null): DeliverOutcome => {
    const last = attempts[attempts.length - 1];
    return {
      success,
      critical: config.critical,
      attempts,
      error,
      summary: {
        type: 'WEBHOOK',
        order: input.action.order,
        actionId: input.action.id,
        method: config.method,
        url,
        success,
        critical: config.critical,
        attempts: attempts.length,
        statusCode: last?.statusCode ?? null,
        error,
      },
    };
  };

  // The body and headers are the same for every attempt; a template or credential problem fails the
  // action once, without sending anything, and is recorded as a failed attempt.
  let body: string | undefined;
  let headers: Record<string, string>;
  try {
    body = renderWebhookBody(config, ctx);
    headers = { 'user-agent': USER_AGENT };
    // Names are lower-cased: one entry per header (an inline User-Agent replaces Loupe's).
    for (const h of config.headers) headers[h.name.toLowerCase()] = h.value;
    const ct = config.contentType ?? defaultContentType(config.bodyMode);
    if (body !== undefined && ct) headers['content-type'] = ct;
    if (config.credentialId) {
      const applied = await applyCredential(input.orgId, config.credentialId, config.url, headers, {
        usedBy: input.userId,
      });
      headers = applied.headers;
      redact = applied.redact;
    }
  } catch (e) {
    const a = start(1, 0);
    await input.onAttempt({ ...a });
    const error = `Not sent: ${(e as Error).message}`;
    await finish(a, { status: 'FAILED', error });
    return outcome(false, attempts[0].error);
  }
  const bodyBytes = body === undefined ? 0 : Buffer.byteLength(body);

  let lastError = 'not attempted';
  for (let n = 1; n <= config.retry.maxAttempts; n++) {
    const left = input.deadline - Date.now();
    if (left < MIN_ATTEMPT_MS) {
      lastError = `${lastError}; no time left before the run deadline for attempt ${n}`;
      break;
    }
    const a = start(n, bodyBytes);
    await input.onAttempt({ ...a });
    const t0 = Date.now();
    let retry = false;
    let wait: number | undefined;
    try {
      const res = await sendOutbound({
        url: config.url,
        method: config.method,
        headers,
        body,
        timeoutMs: Math.min(config.timeoutMs, left),
        maxResponseBytes: RESPONSE_READ_BYTES,
      });
      const ok = config.successStatusCodes
        ? config.successStatusCodes.includes(res.status)
        : res.status >= 200 && res.status < 300;
      const responseBody = res.body ? bound(redact(res.body), STORED_BODY_CHARS) : null;
      const error = ok
        ? null
        : `HTTP ${res.status} is not a success status (${
            config.successStatusCodes ? `expected ${config.successStatusCodes.join(', ')}` : 'expected 2xx'
          })`;
      await finish(a, {
        status: ok ? 'SUCCESS' : 'FAILED',
        statusCode: res.status,
        durationMs: res.durationMs ?? Date.now() - t0,
        responseHeaders: storedHeaders(res.headers, redact, config.url),
        responseBody,
        error,
      });
      if (ok) return outcome(true, null);
      lastError = error!;
      retry = retryableStatus(res.status);
      wait = retryAfterMs(res.headers['retry-after']);
    } catch (e) {
      const failed = e instanceof OutboundFailed;
      const message =
        e instanceof OutboundRefused
          ? `Refused: ${e.message}`
          : e instanceof OutboundFailed
            ? `${e.kind}: ${e.message}`
            : `Delivery error: ${(e as Error).message}`;
      await finish(a, { status: 'FAILED', durationMs: Date.now() - t0, error: message });
      lastError = a.error ?? message;
      retry = failed;
    }
    if (!retry || n === config.retry.maxAttempts) break;
    const delay = Math.min(MAX_RETRY_WAIT_MS, Math.max(backoffMs(config.retry.baseDelayMs, n), wait ?? 0));
    if (Date.now() + delay + MIN_ATTEMPT_MS > input.deadline) {
      lastError = `${lastError}; no retry: the next attempt would pass the run deadline`;
      break;
    }
    await sleep(delay);
  }
  return outcome(false, bound(redact(lastError), STORED_ERROR_CHARS));
}
