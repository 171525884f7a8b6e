import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
export const SECRET_PREFIX = 'whsec_';

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** What later reads show of a secret: `whsec_…` and its last 4 characters. */
export function maskSecret(last4: string): string {
  return `${SECRET_PREFIX}…${last4}`;
}

/**
 * Encryption context of an endpoint's secret (bound to the ciphertext; the deployed functions may use
 * the key only with this purpose and these keys).
 */
export const secretContext = (orgId: string, endpointId: string) => ({
  orgId,
  webhookEndpointId: endpointId,
  purpose: 'webhook-signing-secret',
});

export const last4Of = (secret: string) => secret.slice(-4);

/**
 * The Standard Webhooks signature of one message: `v1,` + base64 HMAC-SHA256, keyed with the base64
 * decoded part of the secret after `whsec_`, over `<id>.<timestamp>.<body>`.
 */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('A webhook secret starts with whsec_.');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/**
 * The three Standard Webhooks headers of a delivery. With several secrets (during a rotation) the
 * `webhook-signature` header carries one `v1,` signature per secret, separated by spaces; a receiver
 * accepts the message when any of them verifies with the secret it holds.
 */
export function signedHeaders(
  secrets: string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampSeconds, body)).join(' '),
  };
}
