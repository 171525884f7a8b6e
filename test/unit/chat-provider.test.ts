import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { APIError } from 'openai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { providerError } from '../../shared/ai/model';
import { aiProvider, notConfiguredError, requireAi, resetAiProvider } from '../../shared/ai/provider';
import { MODEL_SECRET_PLACEHOLDER, parseModelSecret, readModelSecret } from '../../shared/ai/secret';
import { resetConfig } from '../../shared/platform/config';

const KEYS = [
  'LOUPE_RUNTIME',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'LOUPE_MODEL',
  'LOUPE_OPENAI_SECRET_ARN',
  'AWS_REGION',
];

function setEnv(env: Record<string, string | undefined>) {
  for (const k of KEYS) delete process.env[k];
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
  resetConfig();
  resetAiProvider();
}

describe('model provider secret', () => {
  it('accepts a bare key or a JSON object with key, base URL and model', () => {
    expect(parseModelSecret(' sk-abc \n')).toEqual({ apiKey: 'sk-abc' });
    expect(
      parseModelSecret(
        '{"OPENAI_API_KEY":"sk-1","OPENAI_BASE_URL":"https://llm.example/v1","LOUPE_MODEL":"m"}',
      ),
    ).toEqual({
      apiKey: 'sk-1',
      baseURL: 'https://llm.example/v1',
      model: 'm',
    });
    expect(parseModelSecret('{"apiKey":"sk-2"}')).toEqual({
      apiKey: 'sk-2',
      baseURL: undefined,
      model: undefined,
    });
  });

  it('treats an empty secret, a placeholder or malformed JSON as not configured', () => {
    expect(parseModelSecret('')).toEqual({});
    expect(parseModelSecret('REPLACE_ME')).toEqual({});
    expect(parseModelSecret('{"OPENAI_API_KEY":"changeme"}').apiKey).toBeUndefined();
    expect(parseModelSecret('{not json')).toEqual({});
  });

  it('reads the secret string from Secrets Manager', async () => {
    const sm = mockClient(SecretsManagerClient);
    sm.on(GetSecretValueCommand, { SecretId: 'arn:secret' }).resolves({ SecretString: 'sk-from-sm' });
    expect(await readModelSecret('arn:secret', new SecretsManagerClient({ region: 'eu-west-1' }))).toEqual({
      apiKey: 'sk-from-sm',
    });
    sm.restore();
  });
});

describe('model provider configuration', () => {
  const saved = { ...process.env };
  let sm: ReturnType<typeof mockClient>;
  beforeEach(() => {
    sm = mockClient(SecretsManagerClient);
  });
  afterEach(() => {
    sm.restore();
    for (const k of KEYS) delete process.env[k];
    for (const k of KEYS) if (saved[k] !== undefined) process.env[k] = saved[k];
    resetConfig();
    resetAiProvider();
  });

  it('locally is absent without OPENAI_API_KEY or OPENAI_BASE_URL, and requireAi answers 503 saying how to set one', async () => {
    setEnv({ LOUPE_RUNTIME: 'local' });
    expect(await aiProvider()).toBeNull();
    await expect(requireAi()).rejects.toMatchObject({ status: 503, code: 'AI_NOT_CONFIGURED' });
    expect(notConfiguredError().message).toMatch(/OPENAI_API_KEY/);
  });

  it('locally uses OPENAI_API_KEY, OPENAI_BASE_URL and LOUPE_MODEL', async () => {
    setEnv({
      LOUPE_RUNTIME: 'local',
      OPENAI_API_KEY: 'sk-local',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      LOUPE_MODEL: 'my-model',
    });
    const p = await aiProvider();
    expect(p?.model).toBe('my-model');
    expect(p?.client.apiKey).toBe('sk-local');
    expect(p?.client.baseURL).toBe('http://127.0.0.1:9/v1');
  });

  it('in AWS ignores a plain environment key and reads the secret once per cold start', async () => {
    setEnv({ LOUPE_RUNTIME: 'aws', AWS_REGION: 'eu-west-1', OPENAI_API_KEY: 'sk-plain-env' });
    expect(await aiProvider()).toBeNull();
    expect(notConfiguredError().message).toMatch(/LOUPE_OPENAI_SECRET_ARN/);

    setEnv({
      LOUPE_RUNTIME: 'aws',
      AWS_REGION: 'eu-west-1',
      LOUPE_OPENAI_SECRET_ARN: 'arn:aws:secretsmanager:x',
    });
    sm.on(GetSecretValueCommand).resolves({
      SecretString: '{"OPENAI_API_KEY":"sk-secret","LOUPE_MODEL":"gpt-4.1-mini"}',
    });
    const a = await aiProvider();
    const b = await aiProvider();
    expect(a?.client.apiKey).toBe('sk-secret');
    expect(a?.model).toBe('gpt-4.1-mini');
    expect(b).toBe(a);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('in AWS reports 503 when the secret is still the empty placeholder', async () => {
    setEnv({
      LOUPE_RUNTIME: 'aws',
      AWS_REGION: 'eu-west-1',
      LOUPE_OPENAI_SECRET_ARN: 'arn:aws:secretsmanager:y',
    });
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'REPLACE_ME' });
    await expect(requireAi()).rejects.toMatchObject({ status: 503, code: 'AI_NOT_CONFIGURED' });
  });

  it('in AWS answers 503 (and retries later) when the secret cannot be read', async () => {
    setEnv({
      LOUPE_RUNTIME: 'aws',
      AWS_REGION: 'eu-west-1',
      LOUPE_OPENAI_SECRET_ARN: 'arn:aws:secretsmanager:z',
    });
    sm.on(GetSecretValueCommand).rejectsOnce(new Error('AccessDenied')).resolves({ SecretString: 'sk-ok' });
    await expect(aiProvider()).rejects.toMatchObject({ status: 503, code: 'AI_NOT_CONFIGURED' });
    expect((await aiProvider())?.client.apiKey).toBe('sk-ok');
  });

  it("in AWS: the stack's placeholder answers 503, a key put later is used within a minute", async () => {
    setEnv({
      LOUPE_RUNTIME: 'aws',
      AWS_REGION: 'eu-west-1',
      LOUPE_OPENAI_SECRET_ARN: 'arn:aws:secretsmanager:p',
    });
    expect(parseModelSecret(MODEL_SECRET_PLACEHOLDER)).toEqual({});
    sm.on(GetSecretValueCommand).resolves({ SecretString: MODEL_SECRET_PLACEHOLDER });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      await expect(requireAi()).rejects.toMatchObject({ status: 503, code: 'AI_NOT_CONFIGURED' });
      sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk-put-later' });
      vi.advanceTimersByTime(30_000);
      await expect(requireAi()).rejects.toMatchObject({ status: 503 }); // cached for up to a minute
      vi.advanceTimersByTime(31_000);
      expect((await requireAi()).client.apiKey).toBe('sk-put-later');
      // A rotated key is picked up within a minute as well, not only an empty one.
      sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk-rotated' });
      vi.advanceTimersByTime(61_000);
      expect((await requireAi()).client.apiKey).toBe('sk-rotated');
    } finally {
      vi.useRealTimers();
    }
  });

  it('in AWS: after the provider rejects the key (401) the secret is read again at once', async () => {
    setEnv({
      LOUPE_RUNTIME: 'aws',
      AWS_REGION: 'eu-west-1',
      LOUPE_OPENAI_SECRET_ARN: 'arn:aws:secretsmanager:q',
    });
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk-old' });
    expect((await requireAi()).client.apiKey).toBe('sk-old');
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk-new' });
    expect((await requireAi()).client.apiKey).toBe('sk-old');
    const err = providerError(new APIError(401, { message: 'bad key' }, 'bad key', new Headers()));
    expect(err).toMatchObject({ status: 502, code: 'AI_PROVIDER_ERROR' });
    expect((await requireAi()).client.apiKey).toBe('sk-new');
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });
});
