/**
 * What a function uses outside its own table, declared next to it in the manifests
 * (shared/http/groups.ts, shared/platform/workers.ts). The CDK stack builds each function's IAM policy
 * and network placement from this and nothing else, so a capability that starts using something adds it
 * here in one place. Every function may read and write the service's table (authentication, rate
 * limits and the event outbox need it).
 */
export type Need =
  /** Reads stored secrets (connection passwords, credentials): kms:Decrypt with an org-scoped context. */
  | 'decrypt'
  /** Stores new secrets: kms:GenerateDataKey with an org-scoped context (envelope encryption). */
  | 'encrypt'
  /** Reads the model provider secret. */
  | 'model'
  /** Creates, updates and deletes run-time schedules in the service's schedule group. */
  | 'schedules'
  /** Reads SQLite databases from the configured bucket (s3:GetObject under organization prefixes). */
  | 'sqlite'
  /** Sends mail through Amazon SES from the configured identity. */
  | 'mail'
  /** Opens connections to customer databases: placed in the VPC when one is configured. */
  | 'databases'
  /** Sends HTTPS to destinations outside AWS (webhooks, the model provider): placed in the VPC too. */
  | 'internet';

export interface FunctionNeeds {
  /** What the function uses; omitted means the table only. */
  needs?: Need[];
  /** Worker queues it sends messages to (names from shared/platform/workers.ts). */
  enqueues?: string[];
}

/** Functions that talk to customer databases or the internet run inside the VPC when one is given. */
export const runsInVpc = (f: FunctionNeeds): boolean =>
  !!f.needs?.some((n) => n === 'databases' || n === 'internet');
