import type OpenAI from 'openai';
import { config } from '../platform/config';
import { AppError } from '../platform/errors';
import { logger } from '../platform/logger';
import { type ModelSecret, readModelSecret } from './secret';

/** A configured OpenAI-compatible model endpoint. */
export interface AiProvider {
  client: OpenAI;
  model: string;
}

/** The API key placeholder sent to endpoints that need none (a base URL without a key, e.g. a local server). */
const NO_KEY = 'not-needed';
const SECRET_RECHECK_MS = 60_000;

let secret: { arn: string; value: Promise<ModelSecret>; readAt: number } | undefined;
let built: { sig: string; provider: AiProvider } | undefined;

/**
 * The secret is read on first use and again once it is older than a minute, so a key put (or rotated)
 * after deployment reaches warm instances within 60 s; after the provider rejects the key (401/403) it
 * is re-read on the next call (forgetModelSecret).
 */
function cachedSecret(arn: string): Promise<ModelSecret> {
  if (secret && secret.arn === arn && Date.now() - secret.readAt < SECRET_RECHECK_MS) return secret.value;
  const value = readModelSecret(arn).catch((e) => {
    if (secret?.value === value) secret = undefined;
    logger().error('Reading the model provider secret failed', { error: (e as Error).message });
    throw new AppError(
      503,
      'AI_NOT_CONFIGURED',
      'The model provider secret could not be read; try again shortly.',
    );
  });
  secret = { arn, value, readAt: Date.now() };
  return value;
}

/** The provider rejected the key: read the secret again on the next call instead of within a minute. */
export function forgetModelSecret(): void {
  secret = undefined;
}

/**
 * The model provider, or null when none is configured. Locally: OPENAI_API_KEY, OPENAI_BASE_URL and
 * LOUPE_MODEL from the environment (a base URL alone also counts, for endpoints that need no key). In
 * AWS: the key (and optionally base URL and model) from the Secrets Manager secret named by
 * LOUPE_OPENAI_SECRET_ARN, never from plain environment text.
 */
export async function aiProvider(): Promise<AiProvider | null> {
  const cfg = config();
  let found: ModelSecret;
  if (cfg.runtime === 'aws') {
    if (!cfg.LOUPE_OPENAI_SECRET_ARN) return null;
    found = await cachedSecret(cfg.LOUPE_OPENAI_SECRET_ARN);
  } else found = { apiKey: cfg.OPENAI_API_KEY || undefined };
  const baseURL = found.baseURL ?? cfg.OPENAI_BASE_URL;
  const apiKey = found.apiKey;
  if (!apiKey && !baseURL) return null;
  const model = found.model ?? cfg.LOUPE_MODEL;
  const sig = JSON.stringify([apiKey, baseURL, model]);
  if (built?.sig !== sig) {
    // Imported here, not at module top: the client library is ~150 KiB that a function needs only
    // when a request actually calls the model (esbuild puts it in a lazy chunk).
    const { default: OpenAIClient } = await import('openai');
    built = {
      sig,
      provider: {
        model,
        client: new OpenAIClient({
          apiKey: apiKey ?? NO_KEY,
          baseURL: baseURL ?? undefined,
          timeout: 60_000,
          maxRetries: 1,
        }),
      },
    };
  }
  return built.provider;
}

export function notConfiguredError(): AppError {
  const how =
    config().runtime === 'aws'
      ? 'Store the provider in the Secrets Manager secret named by LOUPE_OPENAI_SECRET_ARN: an API key (aws secretsmanager put-secret-value --secret-id <arn> --secret-string <key>), or a JSON object with OPENAI_API_KEY, OPENAI_BASE_URL and LOUPE_MODEL, where OPENAI_BASE_URL alone names a keyless OpenAI-compatible server the functions can reach; running functions pick it up within a minute, and at once after the provider rejects the old key.'
      : 'Either set OPENAI_API_KEY (OpenAI, or another OpenAI-compatible provider with OPENAI_BASE_URL), or set OPENAI_BASE_URL alone for a keyless OpenAI-compatible server such as Ollama (http://localhost:11434/v1), vLLM or LM Studio; LOUPE_MODEL names the model. Then restart Loupe.';
  return new AppError(503, 'AI_NOT_CONFIGURED', `No AI model provider is configured. ${how}`);
}

/** The provider, or 503 AI_NOT_CONFIGURED with a message that says how to set one. */
export async function requireAi(): Promise<AiProvider> {
  const p = await aiProvider();
  if (!p) throw notConfiguredError();
  return p;
}

/** Tests: forget the cached secret and client. */
export function resetAiProvider(): void {
  secret = undefined;
  built = undefined;
}
