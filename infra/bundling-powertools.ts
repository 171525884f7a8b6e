import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Plugin } from 'esbuild';

/**
 * Powertools bundled so that metrics and tracing cost little (infra/bundling.ts uses these plugins; the
 * cold-start and per-request figures are in `npm run bench -- --only observability`):
 *
 * - Powertools' commons asks the environment whether Lambda runs several invocations at once
 *   (AWS_LAMBDA_MAX_CONCURRENCY) on every read of an invocation-scoped value: dozens of `process.env`
 *   reads (each a call into the C++ environment) per EMF line and per log line, most of the cost of a
 *   line. The answer is fixed for the life of the process (the runtime sets it before start): here it is
 *   read once.
 * - cls-hooked → AsyncLocalStorage. The X-Ray SDK keeps its current segment in a cls-hooked namespace,
 *   whose async hook runs on every promise of the process once the SDK is loaded (about 2.5 µs per
 *   await; a request awaits thousands of times). infra/xray-context.cjs gives the SDK the same API on
 *   AsyncLocalStorage, which costs nothing per await in Node 24.
 * - The SDK's index loads what Loupe never calls at start: the AWS SDK and HTTP patchers (with semver,
 *   the smithy error classifier and the 10 KB parameter whitelist), the EC2/ECS/Beanstalk plugins, the SQL
 *   data class and the centralized sampler (node:http). Here each loads when first used.
 * - Powertools' ProviderService imports node:http and node:https for `captureHTTPsGlobal`, which Loupe
 *   does not call (outbound HTTP is traced by shared/outbound and fetch through diagnostics channels):
 *   they load when it is called.
 *
 * Each transform checks the file still has the shape it expects; another version is bundled as it is.
 */
const XRAY = /aws-xray-sdk-core[\\/]dist[\\/]lib[\\/]/;

/** A module or value loaded on first use: calls, `new` and property reads go to what `load` returns. */
const LAZY_HELPER = `var __loupeLazy = (load) => { let v; const get = () => (v ??= load()); return new Proxy(function () {}, {
  apply: (_t, self, args) => Reflect.apply(get(), self, args),
  construct: (_t, args) => Reflect.construct(get(), args),
  get: (_t, k) => { const x = get()[k]; return typeof x === 'function' ? x.bind(get()) : x; },
  set: (_t, k, val) => { get()[k] = val; return true; },
  has: (_t, k) => k in get(),
}); };
`;

/** `require('./patchers/aws_p').captureAWS` and the like, for the paths matched, made lazy. */
function lazyRequires(source: string, paths: RegExp): { contents: string; count: number } {
  let count = 0;
  const contents = source.replace(
    /require\((['"])(\.{1,2}\/[^'"]+)\1\)((?:\.\w+)?)/g,
    (all, _q, path: string, prop: string) => {
      if (!paths.test(path)) return all;
      count++;
      return `__loupeLazy(() => require('${path}')${prop})`;
    },
  );
  return { contents: withHelper(contents), count };
}

/** The helper after the module's "use strict" directive (which must stay its first statement). */
const withHelper = (source: string) =>
  source.startsWith('"use strict";')
    ? `"use strict";\n${LAZY_HELPER}${source.slice('"use strict";'.length)}`
    : LAZY_HELPER + source;

export const leanPowertools: Plugin = {
  name: 'lean-powertools',
  setup(b) {
    b.onLoad({ filter: /@aws-lambda-powertools[\\/]commons[\\/]lib[\\/]esm[\\/]envUtils\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const declared = 'const shouldUseInvokeStore = () => {';
      if (source.split(declared).length !== 2) return undefined;
      return {
        contents: source.replace(
          declared,
          'let __loupeInvokeStore;\nconst shouldUseInvokeStore = () => (__loupeInvokeStore ??= shouldUseInvokeStoreOnce());\nconst shouldUseInvokeStoreOnce = () => {',
        ),
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
    // cls-hooked's context, as the X-Ray SDK requires it.
    b.onResolve({ filter: /^cls-hooked(\/context)?$/ }, (args) =>
      XRAY.test(args.importer) ? { path: join(import.meta.dirname, 'xray-context.cjs') } : undefined,
    );
    b.onLoad({ filter: /aws-xray-sdk-core[\\/]dist[\\/]lib[\\/]aws-xray\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes("captureHTTPsGlobal: require('./patchers/http_p').captureHTTPsGlobal"))
        return undefined;
      const { contents, count } = lazyRequires(
        source,
        /^\.\/(patchers\/|segments\/plugins\/|database\/|middleware\/incoming_request_data|segments\/attributes\/aws$)/,
      );
      return count >= 10 ? { contents, loader: 'js', resolveDir: dirname(args.path) } : undefined;
    });
    b.onLoad({ filter: /aws-xray-sdk-core[\\/]dist[\\/]lib[\\/]middleware[\\/]mw_utils\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const eager = "sampler: require('./sampling/default_sampler'),";
      if (!source.includes(eager)) return undefined;
      return {
        contents: withHelper(
          source.replace(eager, "sampler: __loupeLazy(() => require('./sampling/default_sampler')),"),
        ),
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
    b.onLoad(
      { filter: /@aws-lambda-powertools[\\/]tracer[\\/]lib[\\/]esm[\\/]provider[\\/]ProviderService\.js$/ },
      (args) => {
        const source = readFileSync(args.path, 'utf8');
        const imports = "import http from 'node:http';\nimport https from 'node:https';\n";
        const use = 'captureHTTPsGlobal(http);\n        captureHTTPsGlobal(https);';
        if (!source.includes(imports) || !source.includes(use)) return undefined;
        return {
          contents: source
            .replace(imports, '')
            .replace(
              use,
              "captureHTTPsGlobal(process.getBuiltinModule('node:http'));\n        captureHTTPsGlobal(process.getBuiltinModule('node:https'));",
            ),
          loader: 'js',
          resolveDir: dirname(args.path),
        };
      },
    );
  },
};

/** The shim's source, for tests that check it is what the bundle holds. */
export const xrayContextSource = () => readFileSync(join(import.meta.dirname, 'xray-context.cjs'), 'utf8');
