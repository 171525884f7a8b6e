import type { MiddlewareObj } from '@middy/core';
import { config } from '../../platform/config';
import { AppError, notFound } from '../../platform/errors';
import type { Route } from '../route';
import type { HttpRequest } from './state';

/** Finds the route for method + path; 404 for unknown paths, 405 for a known path with another method. */
export function router(routes: Route[]): MiddlewareObj {
  return {
    before: async (request) => {
      const req = request as unknown as HttpRequest;
      const path = routePath(req.event.path, config().LOUPE_BASE_PATH);
      const method = req.event.httpMethod.toUpperCase();
      const allowed: string[] = [];
      for (const route of routes) {
        const m = route.pattern.exec(path);
        if (!m) continue;
        if (route.spec.method !== method) {
          allowed.push(route.spec.method);
          continue;
        }
        req.state.route = route;
        req.state.rawParams = Object.fromEntries(route.paramNames.map((n, i) => [n, safeDecode(m[i + 1])]));
        return;
      }
      if (allowed.length)
        throw new AppError(
          405,
          'METHOD_NOT_ALLOWED',
          `${method} is not supported on ${path}.`,
          { allowed },
          {
            Allow: allowed.join(', '),
          },
        );
      throw notFound(`Route ${method} ${path}`);
    },
  };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * The path the routes match: without a trailing slash and without the custom domain's base path
 * (API Gateway passes `/loupe/connections` when a base path mapping `loupe` fronts the stage).
 */
export function routePath(eventPath: string | undefined, basePath: string | undefined): string {
  let path = (eventPath || '/').replace(/\/+$/, '') || '/';
  if (basePath && (path === basePath || path.startsWith(`${basePath}/`)))
    path = path.slice(basePath.length) || '/';
  return path;
}
