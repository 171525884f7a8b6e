import type * as z from 'zod/mini';
import type { AuthContext } from '../auth/context';
import { pageOf } from '../http/envelope';
import type { PageQuery } from '../http/schemas';
import { encryption } from '../platform/encryption';
import { alreadyExists, conflict, notFound, validationError } from '../platform/errors';
import { newId, nowIso } from '../platform/ids';
import { nameKey } from '../saved-queries/name-guard';
import {
  type CredentialConfig,
  type CredentialKind,
  configSchemas,
  type WorkflowCredentialCreate,
  type WorkflowCredentialRotate,
} from './api';
import { type CredentialRecord, credentialContext, credentialNames, credentialStore } from './store';

/** What responses carry: metadata only, never the secret, its ciphertext or any hint of it. */
export function credentialView(r: CredentialRecord) {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    allowedHosts: [...r.allowedHosts],
    sharedWithMembers: r.sharedWithMembers === true,
    hasSecret: true as const,
    lastTestedAt: r.lastTestedAt ?? null,
    lastTestStatus: r.lastTestStatus ?? null,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

const encryptConfig = (orgId: string, id: string, c: CredentialConfig) =>
  encryption().encrypt(JSON.stringify(c.config), credentialContext(orgId, id));

/** Validates a raw config for a kind; 400 naming `body.config.<field>` (messages never echo values). */
export function parseConfig(kind: CredentialKind, raw: unknown): CredentialConfig {
  const r = configSchemas[kind].safeParse(raw);
  if (!r.success)
    throw validationError('Request validation failed.', {
      issues: r.error.issues.map((i) => ({
        path: ['body', 'config', ...i.path.map(String)].join('.'),
        message: i.message,
        code: i.code,
      })),
    });
  return { kind, config: r.data } as CredentialConfig;
}

async function found(ctx: AuthContext, id: string): Promise<CredentialRecord> {
  const r = await credentialStore.get(ctx.orgId, id);
  if (!r) throw notFound('Workflow credential');
  return r;
}

export async function listCredentials(ctx: AuthContext, q: PageQuery) {
  const items = (await credentialStore.list(ctx.orgId)).sort(
    (a, b) => nameKey(a.name).localeCompare(nameKey(b.name)) || a.id.localeCompare(b.id),
  );
  return pageOf(items.map(credentialView), q);
}

export async function getCredential(ctx: AuthContext, id: string) {
  return credentialView(await found(ctx, id));
}

export async function createCredential(ctx: AuthContext, input: z.output<typeof WorkflowCredentialCreate>) {
  const id = newId();
  const cfg = { kind: input.kind, config: input.config } as CredentialConfig;
  const now = nowIso();
  const rec: CredentialRecord = {
    id,
    orgId: ctx.orgId,
    name: input.name,
    kind: input.kind,
    allowedHosts: input.allowedHosts,
    sharedWithMembers: input.sharedWithMembers,
    configCipher: await encryptConfig(ctx.orgId, id, cfg),
    secretVersion: 1,
    lastTestedAt: null,
    lastTestStatus: null,
    createdBy: ctx.userId,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await credentialNames.claim(ctx.orgId, rec.name, id))) throw alreadyExists('A workflow credential');
  try {
    if (!(await credentialStore.put(rec))) throw new Error('Workflow credential id collision');
  } catch (e) {
    await credentialNames.release(ctx.orgId, rec.name, id);
    throw e;
  }
  return credentialView(rec);
}

/**
 * Rotates the secret: `config` (required) replaces the stored one, validated for `kind` (given, else the
 * current kind). `name` and `allowedHosts` may change in the same request. One conditional write on the
 * credential (name and secret version unchanged since it was read).
 */
export async function rotateCredential(
  ctx: AuthContext,
  id: string,
  input: z.output<typeof WorkflowCredentialRotate>,
) {
  const r = await found(ctx, id);
  const kind = input.kind ?? r.kind;
  // Only a change of sharedWithMembers alone may leave the secret as it is.
  const sharingOnly =
    input.sharedWithMembers !== undefined && Object.values(input).filter((v) => v !== undefined).length === 1;
  if (input.config === undefined && !sharingOnly)
    throw validationError('Request validation failed.', {
      issues: [
        {
          path: 'body.config',
          message: 'config is required (only a request changing sharedWithMembers alone may omit it)',
          code: 'invalid_type',
        },
      ],
    });
  const cfg = input.config === undefined ? undefined : parseConfig(kind, input.config);
  const renamed = input.name !== undefined && nameKey(input.name) !== nameKey(r.name);
  if (renamed && !(await credentialNames.claim(ctx.orgId, input.name!, id)))
    throw alreadyExists('A workflow credential');
  const updated = await credentialStore.update(
    ctx.orgId,
    id,
    { name: r.name, secretVersion: r.secretVersion },
    {
      name: input.name,
      kind,
      allowedHosts: input.allowedHosts,
      sharedWithMembers: input.sharedWithMembers,
      ...(cfg
        ? { configCipher: await encryptConfig(ctx.orgId, id, cfg), secretVersion: r.secretVersion + 1 }
        : {}),
      updatedAt: nowIso(),
    },
  );
  if (!updated) {
    if (renamed) await credentialNames.release(ctx.orgId, input.name!, id);
    if (!(await credentialStore.get(ctx.orgId, id))) throw notFound('Workflow credential');
    throw conflict(
      'CONFLICT',
      'The credential was changed by another request meanwhile; read it again and retry.',
    );
  }
  if (renamed) await credentialNames.release(ctx.orgId, r.name, id);
  return credentialView(updated);
}

/**
 * Deletes the credential unless a workflow still references it (409 IN_USE), then frees its name.
 * `inUse` is workflows' credentialInUse (workflows/credential-in-use.ts), passed in by the handler:
 * workflows use credentials, so this room does not import workflows.
 */
export async function deleteCredential(
  ctx: AuthContext,
  id: string,
  inUse: (orgId: string, credentialId: string) => Promise<boolean>,
) {
  const r = await found(ctx, id);
  if (await inUse(ctx.orgId, id))
    throw conflict(
      'IN_USE',
      'A workflow draft or its active published version still uses this credential; remove it from those actions first.',
    );
  if (!(await credentialStore.delete(ctx.orgId, id))) throw notFound('Workflow credential');
  await credentialNames.release(ctx.orgId, r.name, id);
  return { deleted: true as const };
}
