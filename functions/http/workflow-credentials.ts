import * as api from '../../shared/credentials/api';
import {
  createCredential,
  deleteCredential,
  getCredential,
  listCredentials,
  rotateCredential,
} from '../../shared/credentials/credentials';
import { httpHandler } from '../../shared/http/handler';
import { on } from '../../shared/http/route';
import { credentialInUse } from '../../shared/workflows/credential-in-use';

export const handler = httpHandler([
  on(api.listCredentials, async ({ ctx, query }) => listCredentials(ctx, query)),
  on(api.createCredential, async ({ ctx, body }) => ({
    status: 201,
    data: await createCredential(ctx, body),
  })),
  on(api.getCredential, async ({ ctx, params }) => ({ data: await getCredential(ctx, params.id) })),
  on(api.rotateCredential, async ({ ctx, params, body }) => ({
    data: await rotateCredential(ctx, params.id, body),
  })),
  on(api.deleteCredential, async ({ ctx, params }) => ({
    data: await deleteCredential(ctx, params.id, credentialInUse),
  })),
]);
