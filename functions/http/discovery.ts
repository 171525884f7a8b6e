import * as api from '../../shared/discovery/api';
import { SCOPES } from '../../shared/http/endpoint';
import { httpHandler } from '../../shared/http/handler';
import { resourceMetadataUrl } from '../../shared/http/middleware/auth';
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
      userId: ctx.userId,
      role: ctx.role,
    },
  })),
  on(api.getOpenApi, async ({ baseUrl }) => {
    if (openapi === undefined) {
      // Every group's endpoint specs (and their zod schemas) load only when the document is first asked
      // for, not at each cold start of this function (esbuild puts them in a lazy chunk).
      const [{ allEndpoints }, { buildOpenApi }] = await Promise.all([
        import('../endpoints'),
        import('../../shared/http/openapi'),
      ]);
      openapi = JSON.stringify(buildOpenApi(allEndpoints, baseUrl));
    }
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
