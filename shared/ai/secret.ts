import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { count } from '../platform/measures';

/** What the model secret may hold: the bare API key, or JSON with the key and optional endpoint/model. */
export interface ModelSecret {
  apiKey?: string;
  baseURL?: string;
  model?: string;
}

let client: SecretsManagerClient | undefined;

/**
 * Reads the model provider secret (`LOUPE_OPENAI_SECRET_ARN`). The secret string is either the API key
 * itself or a JSON object: {"OPENAI_API_KEY"|"apiKey": "...", "OPENAI_BASE_URL"|"baseURL": "...",
 * "LOUPE_MODEL"|"model": "..."}. An empty secret (or the placeholder the stack creates) means "not set".
 */
export async function readModelSecret(arn: string, sm?: SecretsManagerClient): Promise<ModelSecret> {
  // Imported on first use: only the AWS runtime reads the secret, once a minute at most.
  const sdk = await import('@aws-sdk/client-secrets-manager');
  if (!sm) client ??= new sdk.SecretsManagerClient({});
  const sender = sm ?? client!;
  const out = await sender.send(new sdk.GetSecretValueCommand({ SecretId: arn })).catch((e: unknown) => {
    count('awsErrors', { dependency: 'secretsmanager', operation: 'GetSecretValue' });
    throw e;
  });
  return parseModelSecret(
    out.SecretString ?? (out.SecretBinary ? Buffer.from(out.SecretBinary).toString('utf8') : ''),
  );
}

/** The value the stack creates its secret with: "not configured" until the operator puts a key. */
export const MODEL_SECRET_PLACEHOLDER = 'not-configured';

const PLACEHOLDER =
  /^(|none|null|not[-_ ]?configured|unset|changeme|change-me|replace[-_ ]?me|placeholder|set[-_ ]?me|todo)$/i;

export function parseModelSecret(text: string): ModelSecret {
  const s = text.trim();
  if (s.startsWith('{')) {
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(s);
    } catch {
      return {};
    }
    const str = (...keys: string[]) => {
      for (const k of keys) {
        const v = obj[k];
        if (typeof v === 'string' && v.trim() && !PLACEHOLDER.test(v.trim())) return v.trim();
      }
      return undefined;
    };
    return {
      apiKey: str('OPENAI_API_KEY', 'apiKey', 'api_key', 'key'),
      baseURL: str('OPENAI_BASE_URL', 'baseURL', 'baseUrl', 'base_url'),
      model: str('LOUPE_MODEL', 'model'),
    };
  }
  return PLACEHOLDER.test(s) ? {} : { apiKey: s };
}
