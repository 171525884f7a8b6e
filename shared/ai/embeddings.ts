import { config } from '../platform/config';
import { recordUsage } from '../usage/record';
import type { UsageFeature } from '../usage/store';
import type { AiProvider } from './provider';

/** The configured embedding model (LOUPE_EMBEDDING_MODEL), or null when embeddings are off. */
export function embeddingSettings(): { model: string; dimensions: number | undefined } | null {
  const cfg = config();
  const model = cfg.LOUPE_EMBEDDING_MODEL?.trim();
  if (!model) return null;
  return { model, dimensions: cfg.LOUPE_EMBEDDING_DIMENSIONS };
}

/** Inputs per embeddings request, and characters per request (well under the providers' limits). */
const BATCH_INPUTS = 128;
const BATCH_CHARS = 200_000;

export interface EmbedCall {
  ai: AiProvider;
  who: { orgId: string; userId: string };
  feature: Extract<UsageFeature, 'schema_embedding' | 'chat_embedding'>;
  model: string;
  /** Asked of the model when set; every vector must then have exactly this length. */
  dimensions?: number;
  texts: string[];
  /** Time for each request; no retries (the caller falls back to lexical ranking instead). */
  timeoutMs: number;
}

/** The embeddings endpoint failed or answered something unusable. */
export class EmbeddingError extends Error {}

/**
 * Embeds texts through the provider's OpenAI-compatible `/embeddings` endpoint, in batches, and
 * accounts each request that answered as AI usage (`feature`, the provider's reported prompt tokens, or
 * 4 characters a token when it reports none). Returns one unit-length vector per text. Any failure or
 * malformed answer (count, order, lengths that differ or do not match `dimensions`, values that are not
 * finite numbers) throws EmbeddingError.
 */
export async function embedTexts(call: EmbedCall): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  let length = call.dimensions;
  for (let start = 0; start < call.texts.length; ) {
    let end = start;
    let chars = 0;
    while (end < call.texts.length && end - start < BATCH_INPUTS && (end === start || chars < BATCH_CHARS))
      chars += call.texts[end++].length;
    const input = call.texts.slice(start, end);
    let res: {
      data?: Array<{ embedding?: unknown; index?: unknown }>;
      usage?: { prompt_tokens?: number };
      model?: string;
    };
    try {
      res = (await call.ai.client.embeddings.create(
        {
          model: call.model,
          input,
          encoding_format: 'float',
          ...(call.dimensions ? { dimensions: call.dimensions } : {}),
        },
        { timeout: call.timeoutMs, maxRetries: 0 },
      )) as typeof res;
    } catch (e) {
      throw new EmbeddingError(`embeddings request failed: ${(e as Error).message}`.slice(0, 300));
    }
    // The provider answered: the request is charged whether or not its answer is usable.
    const reported = res?.usage?.prompt_tokens;
    await recordUsage(call.who, {
      feature: call.feature,
      model: typeof res?.model === 'string' && res.model ? res.model : call.model,
      promptTokens:
        typeof reported === 'number' && Number.isFinite(reported)
          ? reported
          : Math.ceil(input.reduce((n, t) => n + t.length, 0) / 4),
      completionTokens: 0,
    });
    const data = Array.isArray(res?.data) ? res.data : null;
    if (!data || data.length !== input.length)
      throw new EmbeddingError(
        `embeddings answer has ${data?.length ?? 'no'} vectors for ${input.length} inputs`,
      );
    const ordered = [...data].sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
    for (const d of ordered) {
      const v = d.embedding;
      if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
        throw new EmbeddingError('embeddings answer holds a vector that is not a list of numbers');
      length ??= v.length;
      if (v.length !== length)
        throw new EmbeddingError(
          `embeddings answer has a vector of ${v.length} dimensions, expected ${length}`,
        );
      out.push(unit(Float32Array.from(v as number[])));
    }
    start = end;
  }
  return out;
}

/** The vector scaled to length 1 (a zero vector stays zero). */
export function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}

/** Dot product (cosine similarity of unit vectors). */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
