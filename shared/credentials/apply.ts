import { checkUrl } from '../outbound';
import { encryption } from '../platform/encryption';
import { AppError, notFound } from '../platform/errors';
import { assertRunMayUse } from './access';
import { type CredentialConfig, configSchemas } from './api';
import { credentialContext, credentialStore } from './store';

/** The request's host is not one of the credential's allowedHosts: nothing is sent. */
export class CredentialHostRefused extends AppError {
  constructor(readonly host: string) {
    super(
      422,
      'CREDENTIAL_HOST_REFUSED',
      `The workflow credential is not allowed for the host ${host}; add it to the credential's allowedHosts.`,
      { host },
    );
    this.name = 'CredentialHostRefused';
  }
}

/** The headers a credential adds to a request. */
export function credentialHeaders(c: CredentialConfig): Record<string, string> {
  switch (c.kind) {
    case 'API_KEY_HEADER':
      return { [c.config.headerName]: c.config.value };
    case 'BEARER':
      return { authorization: `Bearer ${c.config.token}` };
    case 'BASIC':
      return {
        authorization: `Basic ${Buffer.from(`${c.config.username}:${c.config.password}`, 'utf8').toString('base64')}`,
      };
    case 'CUSTOM_HEADERS':
      return Object.fromEntries(c.config.headers.map((h) => [h.name, h.value]));
  }
}

const REDACTED = '[REDACTED]';

/** The secret values of a credential, each in the forms a destination might echo it back in. */
function secretForms(c: CredentialConfig): string[] {
  const values: string[] = [];
  switch (c.kind) {
    case 'API_KEY_HEADER':
      values.push(c.config.value);
      break;
    case 'BEARER':
      values.push(c.config.token);
      break;
    case 'BASIC': {
      values.push(c.config.password, c.config.username, `${c.config.username}:${c.config.password}`);
      break;
    }
    case 'CUSTOM_HEADERS':
      for (const h of c.config.headers) values.push(h.value);
      break;
  }
  const forms = new Set<string>();
  for (const v of values) {
    if (!v) continue;
    const b64 = Buffer.from(v, 'utf8').toString('base64');
    for (const f of [
      v,
      encodeURIComponent(v),
      JSON.stringify(v).slice(1, -1),
      b64,
      b64.replace(/=+$/, ''),
      Buffer.from(v, 'utf8').toString('base64url'),
    ])
      if (f) forms.add(f);
  }
  // Longest first, so that a value containing another is removed whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** A function removing every value of the credential (and its base64 and escaped forms) from a text. */
export function redactorFor(c: CredentialConfig): (text: string) => string {
  const forms = secretForms(c);
  return (text: string) => {
    if (typeof text !== 'string' || !text) return text;
    let out = text;
    for (const f of forms) if (out.includes(f)) out = out.split(f).join(REDACTED);
    return out;
  };
}

/** Decrypts a stored credential's config (for applyCredential only; never log or return it). */
async function loadConfig(orgId: string, credentialId: string) {
  const r = await credentialStore.get(orgId, credentialId);
  if (!r) throw notFound('Workflow credential');
  return {
    record: r,
    open: async (): Promise<CredentialConfig> => {
      const json = await encryption().decrypt(r.configCipher, credentialContext(orgId, credentialId));
      const parsed = configSchemas[r.kind].parse(JSON.parse(json));
      return { kind: r.kind, config: parsed } as CredentialConfig;
    },
  };
}

/**
 * Decrypts the credential and adds its headers when new URL(url).hostname is exactly in allowedHosts;
 * throws NotFound (404-style AppError) when missing, and a CredentialHostRefused error otherwise. The URL
 * must also pass the outbound URL rule (https, port 443, no userinfo: OutboundRefused otherwise), so a
 * secret is never attached to a request that would go out in clear text. A request header with the
 * same name as a credential header (any case) is replaced by the credential's.
 * `usedBy` (a user id): the credential is sent only when that user may use it now (access.ts), else
 * CredentialNotUsable. `redact` removes every credential value (and base64 forms for BASIC) from a text.
 */
export async function applyCredential(
  orgId: string,
  credentialId: string,
  url: string,
  headers: Record<string, string>,
  opts: { usedBy?: string } = {},
): Promise<{ headers: Record<string, string>; redact: (text: string) => string }> {
  const { record, open } = await loadConfig(orgId, credentialId);
  if (opts.usedBy !== undefined) await assertRunMayUse(orgId, opts.usedBy, record);
  const host = checkUrl(url).hostname;
  if (!record.allowedHosts.includes(host)) throw new CredentialHostRefused(host);
  const config = await open();
  const added = credentialHeaders(config);
  const addedNames = new Set(Object.keys(added).map((n) => n.toLowerCase()));
  const merged: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (!addedNames.has(k.toLowerCase())) merged[k] = v;
  Object.assign(merged, added);
  return { headers: merged, redact: redactorFor(config) };
}
