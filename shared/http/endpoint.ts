import type * as z from 'zod/v4/core';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
export type Scope =
  | 'query'
  | 'chat'
  | 'connections'
  | 'dashboards'
  | 'workflows'
  | 'workflow_credentials'
  | 'usage'
  | 'webhooks'
  | 'admin';
export const SCOPES: readonly Scope[] = [
  'query',
  'chat',
  'connections',
  'dashboards',
  'workflows',
  'workflow_credentials',
  'usage',
  'webhooks',
  'admin',
];

type AnyObject = z.$ZodObject<any>;

/**
 * What an endpoint is, independent of how it is served: method, path, guard and schemas. The same
 * spec validates requests and generates the OpenAPI document.
 */
export interface EndpointSpec<
  P extends AnyObject | undefined = AnyObject | undefined,
  Q extends AnyObject | undefined = AnyObject | undefined,
  B extends z.$ZodType | undefined = z.$ZodType | undefined,
> {
  method: Method;
  /** Path below /v1 with `{name}` parameters, e.g. `/connections/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** `none` for public discovery routes; default `key`. */
  auth?: 'none' | 'key';
  /** Scope the key needs; omitted means any valid key. */
  scope?: Scope;
  /** The key's user must be an admin. */
  admin?: boolean;
  /** Counts against the per-organization AI rate limit too. */
  ai?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  /** The body may be absent (validated as `{}` then). */
  bodyOptional?: boolean;
  /** Success status, default 200. */
  status?: number;
  /**
   * Schema of `data` on success (documentation only: nothing validates replies against it). Give it as a
   * function (see `once`) so that it is built when the OpenAPI document is generated, not at every cold
   * start of the function that serves the route.
   */
  response?: z.$ZodType | (() => z.$ZodType);
  paginated?: boolean;
  /** Extra error statuses to document. */
  errors?: number[];
}

export const endpoint = <
  P extends AnyObject | undefined = undefined,
  Q extends AnyObject | undefined = undefined,
  B extends z.$ZodType | undefined = undefined,
>(
  spec: EndpointSpec<P, Q, B>,
): EndpointSpec<P, Q, B> => spec;

export type Infer<T> = [NonNullable<T>] extends [never]
  ? Record<string, never>
  : NonNullable<T> extends z.$ZodType
    ? z.output<NonNullable<T>>
    : Record<string, never>;

/**
 * A value built on its first call and kept: response schemas (`EndpointSpec.response`) are needed only by
 * the OpenAPI document, so building them at import cost every function's cold start a few milliseconds.
 */
export function once<T>(build: () => T): () => T {
  let built = false;
  let value: T;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value;
  };
}
