/**
 * The workflow-credential functions actions use (owner: the credentials module, shared/credentials/).
 * Bridge while that module is being written on its own branch: it is loaded by name at first use, so
 * this branch compiles before it exists. Replaced by static imports once it is merged.
 */
type ApplyCredential = (
  orgId: string,
  credentialId: string,
  url: string,
  headers: Record<string, string>,
) => Promise<{ headers: Record<string, string>; redact: (text: string) => string }>;
type GetCredentialMeta = (
  orgId: string,
  id: string,
) => Promise<{ id: string; name: string; allowedHosts: string[] } | undefined>;

const modules = { apply: '../../credentials/apply', store: '../../credentials/store' };

export async function applyCredential(...args: Parameters<ApplyCredential>): ReturnType<ApplyCredential> {
  const m = (await import(/* @vite-ignore */ modules.apply)) as { applyCredential: ApplyCredential };
  return m.applyCredential(...args);
}

export async function getCredentialMeta(
  ...args: Parameters<GetCredentialMeta>
): ReturnType<GetCredentialMeta> {
  const m = (await import(/* @vite-ignore */ modules.store)) as { getCredentialMeta: GetCredentialMeta };
  return m.getCredentialMeta(...args);
}
