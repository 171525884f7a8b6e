import createClient, { type Middleware } from 'openapi-fetch';
import { session } from '../session';
import type { paths } from './schema.gen';

/** An error answer of the API: its code, message and validation details, shown as they came. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Same origin only: the base is a path, never a host. */
export const API_BASE = '/v1';

const auth: Middleware = {
  onRequest({ request }) {
    const key = session.key();
    if (key) request.headers.set('authorization', `Bearer ${key}`);
    return request;
  },
  async onResponse({ response }) {
    if (response.status === 401) {
      const body = await response
        .clone()
        .json()
        .catch(() => null);
      session.signOut(body?.error?.message ?? 'Your API key was not accepted. Sign in again.');
    }
    return response;
  },
};

/** The typed client: paths, parameters, bodies and answers come from the service's OpenAPI document. */
export const api = createClient<paths>({ baseUrl: API_BASE });
api.use(auth);

type Envelope<T> = { data: T; meta?: { pagination?: { total: number } } };

/** Unwraps an openapi-fetch answer: the envelope's data, or an ApiError with the API's message. */
export async function ok<T>(
  call: Promise<{ data?: Envelope<T>; error?: unknown; response: Response }>,
): Promise<T> {
  const r = await call;
  if (r.data !== undefined && r.response.ok) return r.data.data;
  throw toApiError(r.response.status, r.error);
}

/** Like `ok`, for a paginated list: its items and the total the API counted. */
export async function okPage<T>(
  call: Promise<{ data?: Envelope<T[]>; error?: unknown; response: Response }>,
): Promise<{ items: T[]; total: number }> {
  const r = await call;
  if (r.data !== undefined && r.response.ok)
    return { items: r.data.data, total: r.data.meta?.pagination?.total ?? r.data.data.length };
  throw toApiError(r.response.status, r.error);
}

export function toApiError(status: number, body: unknown): ApiError {
  const e = (body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
  return new ApiError(
    status,
    e?.code ?? `HTTP_${status}`,
    e?.message ?? `The API answered ${status}.`,
    e?.details,
  );
}

/**
 * Streams a POST answer of Server-Sent Events (chat): calls `onEvent` with each `data:` JSON object.
 * Aborting `signal` closes the request; the promise then rejects with an AbortError.
 */
export async function postSse(
  path: '/chat',
  body: unknown,
  onEvent: (event: Record<string, unknown>) => void,
  signal?: AbortSignal,
): Promise<void> {
  const key = session.key();
  const res = await fetch(`${API_BASE}${path}`, {
    method: 'POST',
    signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
  });
  if (!res.ok || !res.body) {
    const json = await res.json().catch(() => null);
    if (res.status === 401) session.signOut(json?.error?.message ?? null);
    throw toApiError(res.status, json);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.search(/\r?\n\r?\n/);
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''));
      if (data.length) onEvent(JSON.parse(data.join('\n')));
      end = buffer.search(/\r?\n\r?\n/);
    }
  }
}
