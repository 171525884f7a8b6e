import type { MiddlewareObj } from '@middy/core';
import * as z from 'zod/mini';
import { validationError } from '../../platform/errors';
import { unknownFields } from '../strict';
import type { HttpRequest } from './state';

type Issue = { path: string; message: string; code: string };

/**
 * Validates params, query and body with the route's zod schemas; 400 VALIDATION_ERROR names each bad field,
 * each query parameter given more than once, and each field the schema does not define (../strict.ts; a
 * route without a query or body schema takes no query parameters or body fields).
 */
export function validate(): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const spec = req.state.route!.spec;
      const issues: Issue[] = [];
      const unknown = (where: string, schema: z.core.$ZodType | undefined, value: unknown) => {
        const paths = schema
          ? unknownFields(schema, value, [where])
          : value && typeof value === 'object' && !Array.isArray(value)
            ? Object.keys(value).map((k) => [where, k])
            : [];
        for (const p of paths)
          issues.push({
            path: p.join('.'),
            message: `Unknown field "${p[p.length - 1]}": this operation does not take it.`,
            code: 'unrecognized_keys',
          });
      };
      const check = (where: string, schema: z.core.$ZodType | undefined, value: unknown) => {
        if (where !== 'params') unknown(where, schema, value);
        if (!schema) return value;
        const r = z.safeParse(schema, value);
        if (r.success) return r.data;
        for (const i of r.error.issues)
          issues.push({ path: [where, ...i.path.map(String)].join('.'), message: i.message, code: i.code });
        return undefined;
      };
      // A repeated query parameter would silently keep its last value (as API Gateway does): refused.
      for (const [k, vs] of Object.entries(req.event.multiValueQueryStringParameters ?? {}))
        if ((vs?.length ?? 0) > 1)
          issues.push({
            path: `query.${k}`,
            message: `"${k}" is given ${vs?.length} times: give it once (a list takes comma-separated values).`,
            code: 'repeated',
          });
      const params = check('params', spec.params, req.state.rawParams ?? {});
      const query = check('query', spec.query, req.event.queryStringParameters ?? {});
      let body: unknown;
      if (!spec.body && req.state.hasBody) unknown('body', undefined, req.state.body);
      if (spec.body) {
        if (!req.state.hasBody && !spec.bodyOptional)
          issues.push({ path: 'body', message: 'A JSON request body is required.', code: 'required' });
        else body = check('body', spec.body, req.state.hasBody ? req.state.body : {});
      }
      if (issues.length) throw validationError('Request validation failed.', { issues });
      req.state.validated = { params, query, body };
    },
  };
}
