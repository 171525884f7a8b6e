import { workflowStore } from './store';

/**
 * True while a workflow draft or the active published version references the credential
 * (decisions §2: DELETE answers 409 IN_USE then). `DELETE /workflow-credentials/{id}` calls this.
 *
 * Workflows keep the credential ids of their draft (`draftCredentialIds`) and of their published
 * version (`publishedCredentialIds`, from the actions module's `credentialIdsOf`) on the workflow
 * item, so this is one Query over the organization's workflows with a filter: a workflow references
 * the credential when its draft does, or when it is active and its published version does. Workflows
 * being deleted do not count.
 */
export async function credentialInUse(orgId: string, credentialId: string): Promise<boolean> {
  return (await workflowStore.referencingCredential(orgId, credentialId)).length > 0;
}
