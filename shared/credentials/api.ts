import * as z from 'zod/mini';
import { endpoint, once } from '../http/endpoint';
import { Deleted, describe, IdParams, PageQuery } from '../http/schemas';
import { checkUrl, HEADER_NAME, HEADER_VALUE, isIpLiteral, RESERVED_HEADERS } from '../outbound';

export const KINDS = ['API_KEY_HEADER', 'BEARER', 'BASIC', 'CUSTOM_HEADERS'] as const;
export const CredentialKind = z.enum(KINDS);
export type CredentialKind = z.infer<typeof CredentialKind>;

export const MAX_HOSTS = 20;
export const MAX_CUSTOM_HEADERS = 20;

const HeaderName = z.string().check(
  z.minLength(1),
  z.maxLength(100),
  z.regex(HEADER_NAME, 'must be an HTTP header name (an RFC 7230 token)'),
  z.refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), 'this header cannot carry a credential'),
);
const HeaderValue = z
  .string()
  .check(
    z.minLength(1),
    z.maxLength(4096),
    z.regex(HEADER_VALUE, 'must be printable text without CR, LF, NUL or surrounding spaces'),
  );

export const ApiKeyHeaderConfig = z.strictObject({ headerName: HeaderName, value: HeaderValue });
export const BearerConfig = z.strictObject({
  token: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(4096),
      z.regex(/^[\x21-\x7e]+$/, 'must be visible ASCII without spaces'),
    ),
});
export const BasicConfig = z.strictObject({
  username: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(256),
      z.regex(/^[^\x00-\x1f\x7f:]+$/, 'must not contain a colon or control characters'),
    ),
  password: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(1024),
      z.regex(/^[^\x00-\x1f\x7f]+$/, 'must not contain control characters'),
    ),
});
export const CustomHeadersConfig = z.strictObject({
  headers: z.array(z.strictObject({ name: HeaderName, value: HeaderValue })).check(
    z.minLength(1),
    z.maxLength(MAX_CUSTOM_HEADERS),
    z.superRefine((hs, ctx) => {
      const seen = new Set<string>();
      hs.forEach((h, i) => {
        const n = h.name.toLowerCase();
        if (seen.has(n)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: 'header given twice' });
        seen.add(n);
      });
    }),
  ),
});

export const configSchemas = {
  API_KEY_HEADER: ApiKeyHeaderConfig,
  BEARER: BearerConfig,
  BASIC: BasicConfig,
  CUSTOM_HEADERS: CustomHeadersConfig,
} as const;

export type CredentialConfig =
  | { kind: 'API_KEY_HEADER'; config: z.infer<typeof ApiKeyHeaderConfig> }
  | { kind: 'BEARER'; config: z.infer<typeof BearerConfig> }
  | { kind: 'BASIC'; config: z.infer<typeof BasicConfig> }
  | { kind: 'CUSTOM_HEADERS'; config: z.infer<typeof CustomHeadersConfig> };

/**
 * One allowed host: an exact lower-case DNS hostname as it appears in an https URL (ASCII/punycode),
 * without scheme, port, path, wildcard or trailing dot, and not an IP address.
 */
export function hostProblem(host: string): string | undefined {
  if (/[*]/.test(host)) return 'wildcards are not allowed; list each exact hostname';
  if (/[/:@?#\s\\]/.test(host)) return 'only a hostname: no scheme, port, path or user';
  if (isIpLiteral(host)) return 'IP addresses are not accepted; bind the credential to a hostname';
  if (host !== host.toLowerCase()) return 'must be lower case';
  let parsed: URL;
  try {
    parsed = checkUrl(`https://${host}/`);
  } catch (e) {
    return (e as { reason?: string }).reason ?? 'not a valid hostname';
  }
  if (parsed.hostname !== host)
    return `not in canonical form; use "${parsed.hostname}" (the ASCII form a URL carries)`;
  return undefined;
}

export const AllowedHosts = describe(
  z.array(z.string().check(z.minLength(1), z.maxLength(253))).check(
    z.minLength(1),
    z.maxLength(MAX_HOSTS),
    z.superRefine((hosts, ctx) => {
      const seen = new Set<string>();
      hosts.forEach((h, i) => {
        const problem = hostProblem(h);
        if (problem) ctx.addIssue({ code: 'custom', path: [i], message: problem });
        else if (seen.has(h)) ctx.addIssue({ code: 'custom', path: [i], message: 'host listed twice' });
        seen.add(h);
      });
    }),
  ),
  '1 to 20 exact lower-case hostnames (no scheme, port, path, wildcard or IP address)',
);

const Name = z.string().check(z.trim(), z.minLength(1), z.maxLength(120));

const SharedWithMembers = describe(
  z.boolean(),
  'Extension: members may attach this credential to workflow webhook actions and send it (default false: admins only)',
);

const variant = <K extends CredentialKind, C extends z.ZodMiniType>(kind: K, config: C) =>
  z.object({
    name: Name,
    kind: z.literal(kind),
    allowedHosts: AllowedHosts,
    sharedWithMembers: z._default(SharedWithMembers, false),
    config: describe(config, 'Write-only: never returned'),
  });

export const WorkflowCredentialCreate = z.discriminatedUnion('kind', [
  variant('API_KEY_HEADER', ApiKeyHeaderConfig),
  variant('BEARER', BearerConfig),
  variant('BASIC', BasicConfig),
  variant('CUSTOM_HEADERS', CustomHeadersConfig),
]);

export const WorkflowCredentialRotate = z.object({
  config: describe(
    z.optional(z.record(z.string(), z.unknown())),
    'Write-only: the new secret configuration, validated for `kind` (given, else the current one). Required, except in a request that changes only sharedWithMembers',
  ),
  sharedWithMembers: z.optional(SharedWithMembers),
  kind: describe(z.optional(CredentialKind), 'Changes the kind; `config` must then match it'),
  name: z.optional(Name),
  allowedHosts: describe(z.optional(AllowedHosts), 'Replaces the allowed hosts'),
});

export const WorkflowCredential = once(() =>
  z.object({
    id: z.string(),
    name: z.string(),
    kind: CredentialKind,
    allowedHosts: z.array(z.string()),
    sharedWithMembers: SharedWithMembers,
    hasSecret: z.literal(true),
    lastTestedAt: z.nullable(z.string()),
    lastTestStatus: z.nullable(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

const tag = 'Workflow credentials';
const scope = 'workflow_credentials' as const;
const admin = true;

export const listCredentials = endpoint({
  method: 'GET',
  path: '/workflow-credentials',
  tag,
  scope,
  admin,
  summary: 'List workflow credentials (metadata only)',
  query: PageQuery,
  response: () => z.array(WorkflowCredential()),
  paginated: true,
});
export const createCredential = endpoint({
  method: 'POST',
  path: '/workflow-credentials',
  tag,
  scope,
  admin,
  summary: 'Store a workflow credential (encrypted; the secret is never returned)',
  body: WorkflowCredentialCreate,
  status: 201,
  response: WorkflowCredential,
  errors: [409],
});
export const getCredential = endpoint({
  method: 'GET',
  path: '/workflow-credentials/{id}',
  tag,
  scope,
  admin,
  summary: 'Get a workflow credential (metadata only)',
  params: IdParams,
  response: WorkflowCredential,
});
export const rotateCredential = endpoint({
  method: 'PATCH',
  path: '/workflow-credentials/{id}',
  tag,
  scope,
  admin,
  summary:
    'Rotate the secret (and optionally rename or change the allowed hosts); share it with members or stop sharing it (sharedWithMembers alone needs no config)',
  params: IdParams,
  body: WorkflowCredentialRotate,
  response: WorkflowCredential,
  errors: [409],
});
export const deleteCredential = endpoint({
  method: 'DELETE',
  path: '/workflow-credentials/{id}',
  tag,
  scope,
  admin,
  summary: 'Delete a workflow credential (409 IN_USE while a workflow references it)',
  params: IdParams,
  response: Deleted,
  errors: [409],
});

export const credentialEndpoints = [
  listCredentials,
  createCredential,
  getCredential,
  rotateCredential,
  deleteCredential,
];
