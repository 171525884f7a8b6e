import * as z from 'zod/mini';
import { endpoint } from '../http/endpoint';
import { describe } from '../http/schemas';

export const getContext = endpoint({
  method: 'GET',
  path: '/',
  tag: 'Discovery',
  summary: 'API context of the calling key',
  response: () =>
    z.object({
      version: z.string(),
      authenticationMethod: z.enum(['session', 'api_key']),
      scopes: z.array(z.string()),
      openapi: z.string(),
      resourceMetadata: z.string(),
      userId: describe(
        z.string(),
        'Extension: the user the key belongs to (the id submittedBy and reviewedBy carry)',
      ),
      role: describe(
        z.enum(['admin', 'member']),
        'Extension: the key’s user’s role; admin-only operations answer 403 for a member',
      ),
    }),
});
export const getOpenApi = endpoint({
  method: 'GET',
  path: '/openapi.json',
  tag: 'Discovery',
  auth: 'none',
  summary: 'This OpenAPI 3.1 document (not wrapped in the envelope)',
});
export const getResourceMetadata = endpoint({
  method: 'GET',
  path: '/.well-known/oauth-protected-resource',
  tag: 'Discovery',
  auth: 'none',
  summary: 'RFC 9728 protected resource metadata (not wrapped in the envelope)',
});

export const discoveryEndpoints = [getContext, getOpenApi, getResourceMetadata];
