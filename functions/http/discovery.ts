import * as api from '../../shared/discovery/api';
import { SCOPES } from '../../shared/http/endpoint';
import { allEndpoints } from '../../shared/http/endpoints';
import { httpHandler } from '../../shared/http/handler';
import { resourceMetadataUrl } from '../../shared/http/middleware/auth';
import { buildOpenApi } from '../../shared/http/openapi';
import { on } from '../../shared/http/route';

let openapi: string | undefined;

export const handler = httpHandler([
  on(api.getContext, async ({ ctx, baseUrl }) => ({
    data: {
      version: '1.0.0',
      authenticationMethod: 'api_key',
      scopes: ctx.scopes,
      openapi: `${baseUrl}/openapi.json`,
      resourceMetadata: resourceMetadataUrl(baseUrl),
    },
  })),
  on(api.getOpenApi, async ({ baseUrl }) => {
    openapi ??= JSON.stringify(buildOpenApi(allEndpoints, baseUrl));
    return {
      raw: { body: openapi, contentType: 'application/json' },
      headers: { 'Cache-Control': 'public, max-age=300' },
    };
  }),
  on(api.getResourceMetadata, async ({ baseUrl }) => ({
    raw: {
      contentType: 'application/json',
      body: JSON.stringify({
        resource: baseUrl,
        resource_name: 'Loupe API',
        bearer_methods_supported: ['header'],
        scopes_supported: ['*', ...SCOPES],
        resource_documentation: `${baseUrl}/openapi.json`,
      }),
    },
  })),
]);
