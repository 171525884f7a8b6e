import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { type BuildOptions, build, type Metafile, type Plugin } from 'esbuild';
import { leanPowertools } from './bundling-powertools';
import { bundleDirOf, type FunctionEntry, ROOT } from './functions';

/** Node version of the Lambda runtime (`nodejs24.x`); esbuild targets the same. */
export const NODE_MAJOR = 24;

const builtins = new Set(builtinModules.flatMap((m) => (m.startsWith('node:') ? [m] : [m, `node:${m}`])));

/**
 * Loads Node built-ins with require() instead of ESM `import`. An ESM import of a built-in (static or
 * `import()`) builds a module facade that reads every export, which runs lazy getters: importing
 * `node:http` that way loads Node's bundled undici (fetch, WebSocket), 25–30 ms of CPU per cold start
 * for nothing (the AWS SDK's HTTP handler does `await import('node:http')` on its first plain-HTTP
 * request). require() returns the same module object without the facade; esbuild wraps it like any
 * CommonJS module. An `import()` of a built-in gets a small ESM module instead (see `dynamicBuiltin`).
 */
const builtinsViaRequire: Plugin = {
  name: 'builtins-via-require',
  setup(b) {
    b.onResolve({ filter: /^[a-z_:/]+$/ }, (args) => {
      if (!builtins.has(args.path) || args.kind === 'require-call') return undefined;
      const name = args.path.startsWith('node:') ? args.path : `node:${args.path}`;
      // One wrapper per importing file (`suffix`): a wrapper shared by several chunks would become a
      // chunk file of its own (a few hundred bytes), one more ES module to resolve and link at start.
      return {
        path: name,
        suffix: `?${args.importer}`,
        namespace: args.kind === 'dynamic-import' ? 'builtin-dynamic' : 'builtin',
      };
    });
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
    b.onLoad({ filter: /.*/, namespace: 'builtin-dynamic' }, (args) => ({
      contents: dynamicBuiltin(args.path),
      loader: 'js',
    }));
  },
};

/**
 * The module an `import()` of a built-in resolves to: the require()d module as `default` plus its
 * exports by name, like Node's own namespace (esbuild would give a CommonJS module only a `default`
 * there, and `const { readFile } = await import('node:fs/promises')` needs the names). The names are
 * those of the built-in in the Node that bundles (the runtime's major version). Left out: lazy getters
 * for what Node also offers as a global (`WebSocket`, `CloseEvent`, `MessageEvent` of node:http), since
 * reading them is exactly what loads undici; code that needs them uses the global.
 */
function dynamicBuiltin(name: string): string {
  const mod = process.getBuiltinModule(name) as Record<string, unknown>;
  const names = Object.keys(mod).filter(
    (k) => k !== 'default' && !(Object.getOwnPropertyDescriptor(mod, k)?.get && k in globalThis),
  );
  const locals = names.map((k, i) => `${JSON.stringify(k)}:e${i}`).join(',');
  const exported = names.map((k, i) => `e${i} as ${JSON.stringify(k)}`).join(',');
  return (
    `const m=require(${JSON.stringify(name)});export default m;` +
    (names.length ? `const{${locals}}=m;export{${exported}};` : '')
  );
}

/**
 * The SQL guard's WebAssembly parsers (loaded lazily, each in its own chunk). libpg-query's Emscripten
 * loader finds its .wasm through the CommonJS `__dirname`, which an ESM chunk does not have: it gets
 * the chunk's own folder instead (resolved with the chunk's `require` from the banner), and `copyWasmAssets` puts the .wasm files where the chunks look
 * (`chunks/libpg-query.wasm`; sqlparser-ts resolves `../wasm/…` from its chunk).
 */
const wasmParsers: Plugin = {
  name: 'wasm-parsers',
  setup(b) {
    b.onLoad({ filter: /libpg-query[\\/]wasm[\\/]libpg-query\.js$/ }, (args) => ({
      contents:
        "var __loupeDirname=require('node:path').dirname(require.resolve('./libpg-query.wasm'));\n" +
        readFileSync(args.path, 'utf8').replace(/\b__dirname\b/g, '__loupeDirname'),
      loader: 'js',
    }));
  },
};

/**
 * The AWS SDK's CRC32 class (@smithy/core checksum) reads `zlib.crc32` when its module loads, so every
 * function loaded node:zlib at start (3–4 ms of a cold start) for a checksum the DynamoDB calls do not
 * compute. Here node:zlib is loaded on the first checksum instead (Node 24 always has zlib.crc32).
 */
const lazyCrc32: Plugin = {
  name: 'lazy-crc32',
  setup(b) {
    b.onLoad(
      { filter: /@smithy[\\/]core[\\/]dist-es[\\/]submodules[\\/]checksum[\\/]crc32[\\/]Crc32Node\.js$/ },
      (args) => {
        const source = readFileSync(args.path, 'utf8');
        const eager = 'import * as zlib from "node:zlib";';
        const check = 'const zlibCrc32 = typeof zlib.crc32 === "function" ? zlib.crc32 : undefined;';
        // Another version of the file: bundle it as it is.
        if (!source.includes(eager) || !source.includes(check)) return undefined;
        return {
          contents: source
            .replace(eager, '')
            .replace(
              check,
              "let crc32;\nconst zlibCrc32 = (data, value) => (crc32 ??= process.getBuiltinModule('node:zlib').crc32)(data, value);",
            ),
          loader: 'js',
          resolveDir: dirname(args.path),
        };
      },
    );
  },
};

/**
 * The AWS SDK reads the shared config files (~/.aws/config and ~/.aws/credentials) on a client's first
 * call, for settings the environment does not give (defaults mode, clock skew correction, …), through
 * node:fs/promises, which loads the readline internals with it: 2–5 ms of every cold start, partly at
 * import (the reader's module imports it) and partly on the first request. Here the reader uses the
 * callback API of node:fs (loaded with every process) instead: the same files are read with the same
 * result (the same errors when they are missing, which the SDK ignores), so nothing changes but the cost.
 * Chosen over giving every client explicit settings: the list of file-backed settings grows with SDK
 * versions, and a setting missed would read the files again.
 */
const lazyIniReadFile: Plugin = {
  name: 'lazy-ini-read-file',
  setup(b) {
    b.onLoad(
      {
        filter:
          /@smithy[\\/]core[\\/]dist-es[\\/]submodules[\\/]config[\\/]shared-ini-file-loader[\\/](readFile|getSSOTokenFromFile)\.js$/,
      },
      (args) => {
        const source = readFileSync(args.path, 'utf8');
        const eager = /^import \{ readFile(?: as (\w+))? \} from "node:fs\/promises";$/m;
        const m = eager.exec(source);
        // Another version of the file: bundle it as it is.
        if (!m) return undefined;
        return {
          contents: source.replace(
            eager,
            `const ${m[1] ?? 'readFile'} = (path, options) => new Promise((resolve, reject) => process.getBuiltinModule('node:fs').readFile(path, options, (error, data) => (error ? reject(error) : resolve(data))));`,
          ),
          loader: 'js',
          resolveDir: dirname(args.path),
        };
      },
    );
  },
};

/**
 * Middy (@middy/core) imports node:stream/web for one `instanceof ReadableStream` check of a streamed
 * reply, so every function loaded the web streams at start (about 2 ms). Here the check reads the class
 * from node:stream/web when a streamed reply is not a Node stream (the same class as before).
 */
const lazyMiddyWebStream: Plugin = {
  name: 'lazy-middy-web-stream',
  setup(b) {
    b.onLoad({ filter: /@middy[\\/]core[\\/]index\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const eager = 'import { ReadableStream } from "node:stream/web";';
      const use = 'handlerBody instanceof ReadableStream';
      // Another version of the file: bundle it as it is.
      if (!source.includes(eager) || source.split('ReadableStream').length !== 4) return undefined;
      return {
        contents: source
          .replace(eager, '')
          .replace(use, 'handlerBody instanceof process.getBuiltinModule("node:stream/web").ReadableStream'),
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
  },
};

/**
 * The MCP tools' tools/list entries, computed while bundling (shared/mcp/listing.ts): converting eleven
 * tools' zod schemas to JSON Schema took tens of milliseconds of the MCP function's first request.
 */
const mcpToolListing: Plugin = {
  name: 'mcp-tool-listing',
  setup(b) {
    b.onLoad({ filter: /shared[\\/]mcp[\\/]listing\.ts$/ }, async () => {
      const { buildListings } = await import('../shared/mcp/call');
      return { contents: `export const prebuiltListing = ${JSON.stringify(buildListings())};`, loader: 'js' };
    });
  },
};

/**
 * The MCP SDK's Server imports its Ajv validator for elicitation only (validating what a user typed),
 * which Loupe never sends, and it is built only when no validator is given (shared/mcp/server.ts gives
 * one). Bundled, Ajv and its formats were about 120 KB evaluated at every MCP cold start; here the
 * provider module is one that refuses to be built.
 */
const sdkWithoutAjv: Plugin = {
  name: 'sdk-without-ajv',
  setup(b) {
    b.onLoad(
      { filter: /@modelcontextprotocol[\\/]sdk[\\/]dist[\\/]esm[\\/]validation[\\/]ajv-provider\.js$/ },
      (args) => {
        const source = readFileSync(args.path, 'utf8');
        // Another version of the file: bundle it as it is.
        if (!source.includes('export class AjvJsonSchemaValidator')) return undefined;
        return {
          contents:
            "export class AjvJsonSchemaValidator { constructor() { throw new Error('Ajv is not bundled: give the server a jsonSchemaValidator.'); } }",
          loader: 'js',
        };
      },
    );
  },
};

/** WebAssembly files next to the chunks that load them (see wasmParsers). */
export const wasmAssets: { input: RegExp; from: string; to: string }[] = [
  {
    input: /libpg-query[\\/]wasm[\\/]libpg-query\.js$/,
    from: 'node_modules/libpg-query/wasm/libpg-query.wasm',
    to: 'chunks/libpg-query.wasm',
  },
  {
    input: /@guanmingchiu[\\/]sqlparser-ts[\\/]/,
    from: 'node_modules/@guanmingchiu/sqlparser-ts/wasm/sqlparser_rs_wasm_bg.wasm',
    to: 'wasm/sqlparser_rs_wasm_bg.wasm',
  },
];

function copyWasmAssets(meta: Metafile, dir: string, root: string): void {
  const inputs = Object.keys(meta.inputs);
  for (const a of wasmAssets)
    if (inputs.some((i) => a.input.test(i))) {
      mkdirSync(join(dir, a.to, '..'), { recursive: true });
      copyFileSync(join(root, a.from), join(dir, a.to));
    }
}

/**
 * The one set of esbuild options for every function, used by the CDK stack (through
 * `bundleFunctions`) and by `npm run build`. ESM, minified, linked source maps without sources
 * (smaller; for mapping logged frames back to the source, see NODE_FLAGS), code splitting so lazily imported modules (database
 * drivers, model client, SQL parsers) load only when used.
 *
 * The AWS SDK v3 clients the functions use on some paths (KMS, SQS, Scheduler, SES, Secrets Manager,
 * S3) are bundled, in lazily loaded chunks, not left to the Lambda runtime's copy: importing the
 * runtime's clients from node_modules took 80–100 ms (hundreds of files resolved and compiled), and
 * bundling pins the SDK version we test against. DynamoDB, which every request uses, goes through the
 * service's own client (shared/platform/db/), not the SDK: see README, "Where the chosen parts were
 * changed".
 */
export const esbuildSettings = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${NODE_MAJOR}`,
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  splitting: true,
  treeShaking: true,
  legalComments: 'none',
  mainFields: ['module', 'main'],
  entryNames: 'index',
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  // CommonJS dependencies (pg, mysql2, mssql…) call require() for Node built-ins; ESM output needs a real one.
  // process.getBuiltinModule rather than `import … from 'node:module'`: no ES module facade of
  // node:module to build and link in every chunk.
  banner: {
    js: "const require=process.getBuiltinModule('node:module').createRequire(import.meta.url);",
  },
  logLevel: 'error',
  metafile: true,
  plugins: [
    builtinsViaRequire,
    wasmParsers,
    lazyCrc32,
    lazyIniReadFile,
    lazyMiddyWebStream,
    mcpToolListing,
    sdkWithoutAjv,
    leanPowertools,
  ],
} as const satisfies BuildOptions;

/**
 * Node flags of every function (NODE_OPTIONS); bench/cold-start.ts runs its processes with the same.
 * None: `--enable-source-maps` made Node read and index every chunk's source map while loading it,
 * about 30 ms of each cold start (a fifth of the 150 ms budget; measured with interleaved runs), and
 * it cannot be switched on later for modules already loaded. Stack traces in logs are therefore
 * minified (file:line:column of the bundle); the linked .map files are still written next to each
 * bundle (`npm run build`, cdk.out) to map a frame back to the source when needed.
 */
export const NODE_FLAGS: readonly string[] = [];

/** Environment every function gets for the runtime (besides the stack's resource variables). */
export const runtimeEnvironment = {
  ...(NODE_FLAGS.length ? { NODE_OPTIONS: NODE_FLAGS.join(' ') } : {}),
  LOUPE_RUNTIME: 'aws',
  POWERTOOLS_SERVICE_NAME: 'loupe',
} as const;

export interface BundleResult {
  fn: FunctionEntry;
  dir: string;
  /** Bytes of index.mjs. */
  entryBytes: number;
  /** Bytes of index.mjs plus every chunk it imports statically (what a cold start loads). */
  initialBytes: number;
  /** Bytes of all JavaScript in the bundle (entry and lazily loaded chunks), without source maps. */
  totalBytes: number;
}

/** Bundles one function into `<bundleRoot>/<kind>/<name>/` (cleaned first). */
export async function bundleFunction(
  fn: FunctionEntry,
  bundleRoot: string,
  root = ROOT,
): Promise<BundleResult> {
  const dir = bundleDirOf(bundleRoot, fn);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const result = await build({
    ...esbuildSettings,
    absWorkingDir: root,
    entryPoints: [join(root, fn.entry)],
    outdir: dir,
  });
  copyWasmAssets(result.metafile, dir, root);
  return { fn, dir, ...sizes(result.metafile, relative(root, join(dir, 'index.mjs'))) };
}

function sizes(meta: Metafile, entryOut: string) {
  const js = Object.entries(meta.outputs).filter(([p]) => p.endsWith('.mjs'));
  const byPath = new Map(js);
  const entry = byPath.get(entryOut);
  if (!entry) throw new Error(`esbuild produced no ${entryOut}`);
  const initial = new Set<string>();
  const visit = (p: string) => {
    if (initial.has(p)) return;
    initial.add(p);
    for (const imp of byPath.get(p)?.imports ?? [])
      if (imp.kind === 'import-statement' && byPath.has(imp.path)) visit(imp.path);
  };
  visit(entryOut);
  let initialBytes = 0;
  for (const p of initial) initialBytes += byPath.get(p)!.bytes;
  return {
    entryBytes: entry.bytes,
    initialBytes,
    totalBytes: js.reduce((n, [, o]) => n + o.bytes, 0),
  };
}

/** Bundles functions with bounded parallelism (esbuild itself is multi-threaded). */
export async function bundleFunctions(
  fns: FunctionEntry[],
  bundleRoot: string,
  root = ROOT,
  parallel = 4,
): Promise<BundleResult[]> {
  const results: BundleResult[] = new Array(fns.length);
  let next = 0;
  const worker = async () => {
    while (next < fns.length) {
      const i = next++;
      results[i] = await bundleFunction(fns[i], bundleRoot, root);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, fns.length) }, worker));
  return results;
}
