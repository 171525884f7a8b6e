import type OpenAI from 'openai';
// The error classes only (small): the client itself is imported on first use in provider.ts.
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai/core/error';
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { AppError, isAppError } from '../platform/errors';
import { logger } from '../platform/logger';
import { recordUsage } from '../usage/record';
import type { UsageFeature, UsageRecord } from '../usage/store';
import { type AiProvider, forgetModelSecret } from './provider';

export interface ToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model wrote (may be malformed; the caller parses and reports). */
  arguments: string;
}

export interface ModelTurn {
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** True when the provider reported no usage and the tokens were estimated from the text. */
  estimated: boolean;
  usage: UsageRecord;
}

export interface ModelCall {
  ai: AiProvider;
  /** Whose balance pays. */
  who: { orgId: string; userId: string };
  feature: UsageFeature;
  messages: ChatCompletionMessageParam[];
  tools?: ChatCompletionTool[];
  toolChoice?: ChatCompletionToolChoiceOption;
  maxTokens?: number;
  temperature?: number;
  /** When given, the call streams and every text fragment is passed here as it arrives. */
  onDelta?: (text: string) => void;
  signal?: AbortSignal;
}

const estimateTokens = (chars: number) => Math.ceil(chars / 4);
/** Optional request parameters each model turned out not to accept. */
const unsupported = new Map<string, Set<string>>();

/**
 * One Chat Completions call through the `openai` client, streamed when `onDelta` is given, and
 * accounted: every call that reached the provider writes a UsageRecord and deducts its cost (the
 * provider's reported usage; estimated from the text at 4 characters a token when it reports none or
 * the stream broke after output began). Provider failures become AppErrors with a clear message.
 */
export async function callModel(call: ModelCall): Promise<ModelTurn> {
  const { ai } = call;
  const skip = unsupported.get(ai.model) ?? new Set<string>();
  const promptChars =
    JSON.stringify(call.messages).length + (call.tools ? JSON.stringify(call.tools).length : 0);
  let content = '';
  const calls: ToolCall[] = [];
  let finishReason: string | null = null;
  let model = ai.model;
  let reported: { prompt_tokens?: number; completion_tokens?: number } | undefined;
  let failure: unknown;
  for (let attempt = 0; ; attempt++) {
    // Optional parameters some OpenAI-compatible models reject (reasoning models: temperature,
    // max_tokens; some servers: stream_options). A 400 naming one drops it for this model and retries.
    const optional: Record<string, unknown> = {
      ...(call.maxTokens ? { max_tokens: call.maxTokens } : {}),
      ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
      ...(call.onDelta ? { stream_options: { include_usage: true } } : {}),
    };
    for (const k of skip) delete optional[k];
    const base = {
      model: ai.model,
      messages: call.messages,
      ...(call.tools?.length ? { tools: call.tools, tool_choice: call.toolChoice ?? 'auto' } : {}),
      ...optional,
    };
    failure = undefined;
    try {
      if (call.onDelta) {
        const stream = await ai.client.chat.completions.create(
          { ...base, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming,
          { signal: call.signal },
        );
        for await (const chunk of stream) {
          if (chunk.model) model = chunk.model;
          if (chunk.usage) reported = chunk.usage;
          const choice = chunk.choices?.[0];
          if (!choice) continue;
          const d = choice.delta ?? {};
          if (d.content) {
            content += d.content;
            call.onDelta(d.content);
          }
          for (const tc of d.tool_calls ?? []) {
            const i = tc.index ?? 0;
            calls[i] ??= { id: '', name: '', arguments: '' };
            if (tc.id) calls[i].id = tc.id;
            if (tc.function?.name) calls[i].name += tc.function.name;
            if (tc.function?.arguments) calls[i].arguments += tc.function.arguments;
          }
          if (choice.finish_reason) finishReason = choice.finish_reason;
        }
      } else {
        const res = await ai.client.chat.completions.create(
          { ...base, stream: false } as OpenAI.ChatCompletionCreateParamsNonStreaming,
          { signal: call.signal },
        );
        if (res.model) model = res.model;
        reported = res.usage ?? undefined;
        const choice = res.choices?.[0];
        content = choice?.message?.content ?? '';
        finishReason = choice?.finish_reason ?? null;
        for (const tc of choice?.message?.tool_calls ?? [])
          if (tc.type === 'function')
            calls.push({ id: tc.id, name: tc.function.name, arguments: tc.function.arguments ?? '' });
      }
    } catch (e) {
      failure = e;
    }
    const rejected =
      failure instanceof APIError && failure.status === 400 && !content && !calls.length && attempt < 3
        ? Object.keys(optional).filter((k) => failure instanceof Error && failure.message.includes(k))
        : [];
    if (!rejected.length) break;
    for (const k of rejected) skip.add(k);
    unsupported.set(ai.model, skip);
    logger().warn('The model rejected optional parameters; retrying without them', {
      model: ai.model,
      rejected,
    });
  }
  const toolCalls = calls.filter(Boolean).map((c, i) => ({ ...c, id: c.id || `call_${i}` }));
  const outputChars = content.length + toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  // A failed call that produced nothing was not billed by the provider; one that streamed output was.
  if (failure && outputChars === 0 && !reported) throw providerError(failure);
  const estimated = reported?.prompt_tokens === undefined || reported?.completion_tokens === undefined;
  const promptTokens = reported?.prompt_tokens ?? estimateTokens(promptChars);
  const completionTokens = reported?.completion_tokens ?? estimateTokens(outputChars);
  const usage = await recordUsage(call.who, { feature: call.feature, model, promptTokens, completionTokens });
  if (failure) throw providerError(failure);
  return { content, toolCalls, finishReason, model, promptTokens, completionTokens, estimated, usage };
}

/** Maps a provider or network failure to an AppError whose message helps the operator fix it. */
export function providerError(e: unknown): AppError {
  if (isAppError(e)) return e;
  if (e instanceof APIUserAbortError) return new AppError(499, 'CLIENT_CLOSED', 'The request was cancelled.');
  if (e instanceof APIConnectionTimeoutError)
    return new AppError(504, 'AI_PROVIDER_TIMEOUT', 'The model provider did not answer in time; try again.');
  if (e instanceof APIConnectionError)
    return new AppError(
      502,
      'AI_PROVIDER_ERROR',
      'The model provider could not be reached; check OPENAI_BASE_URL and the network.',
    );
  if (e instanceof APIError) {
    const status = e.status ?? 0;
    const said = cleanProviderMessage(e.message);
    if (status === 401 || status === 403) {
      // A rotated or newly put key: the next call reads the secret again instead of waiting a minute.
      forgetModelSecret();
      return new AppError(
        502,
        'AI_PROVIDER_ERROR',
        `The model provider rejected the configured API key (HTTP ${status}).`,
      );
    }
    if (status === 404)
      return new AppError(
        502,
        'AI_PROVIDER_ERROR',
        `The model provider does not know the configured model (LOUPE_MODEL): ${said}`,
      );
    if (status === 429)
      return new AppError(
        503,
        'AI_PROVIDER_BUSY',
        `The model provider is rate-limiting or out of quota: ${said}`,
        undefined,
        {
          'Retry-After': '20',
        },
      );
    return new AppError(
      502,
      'AI_PROVIDER_ERROR',
      `The model provider failed (HTTP ${status || 'error'}): ${said}`,
    );
  }
  logger().error('Model call failed', { error: e instanceof Error ? e.message : String(e) });
  return new AppError(
    502,
    'AI_PROVIDER_ERROR',
    'The model provider returned an answer Loupe could not read.',
  );
}

/** Provider messages can be long; keep them short and never echo anything that looks like a key. */
function cleanProviderMessage(m: string): string {
  return m
    .replace(/\b(sk|lp)[-_][A-Za-z0-9_-]{8,}/g, '[redacted]')
    .replace(/\s+/g, ' ')
    .slice(0, 300);
}
