/**
 * True while a workflow draft or the active published version references the credential
 * (decisions §2: DELETE answers 409 IN_USE then). `DELETE /workflow-credentials/{id}` calls this.
 *
 * Workflow actions and their `credentialId` references arrive with issue 12 (branch `wf-core`), which
 * replaces this body with the lookup over those references. Until then no workflow can reference a
 * credential, so nothing is in use.
 */
export async function credentialInUse(_orgId: string, _credentialId: string): Promise<boolean> {
  return false;
}
