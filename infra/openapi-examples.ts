/**
 * Writes shared/http/openapi-examples.json from real answers recorded by the tests:
 *
 *   LOUPE_RECORD_ANSWERS=/tmp/answers.jsonl npx vitest run test/integration/<files>
 *   npx tsx infra/openapi-examples.ts /tmp/answers.jsonl [more.jsonl …]
 *
 * (the recordings used: the integration files of each capability, see the commit that changed the file).
 *
 * Per operation: the request body with the most fields (of successful calls), the shortest success
 * answer, and the shortest answer per error status and code. Key and signing secrets, test hostnames,
 * loopback addresses and temporary paths are replaced by fixed example values; nothing else is changed.
 * test/integration/openapi-reference.test.ts validates every example against its schema.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { allEndpoints } from '../functions/endpoints';
import { buildOpenApi } from '../shared/http/openapi';
import { operationKey } from '../shared/http/openapi-reference';

interface Recorded {
  method: string;
  path: string;
  request?: unknown;
  status: number;
  body: any;
}

const MAX_CHARS = 3000;
const templates = allEndpoints.map((s) => ({
  key: operationKey(s),
  method: s.method,
  re: new RegExp(`^${s.path.replace(/\{[^}]+\}/g, '[^/?]+')}(\\?.*)?$`),
}));

const redact = (text: string) =>
  text
    .replace(/lp_[A-Za-z0-9]{40,}/g, `lp_${'Ex4mple'.repeat(6)}K`)
    .replace(/lp_[A-Za-z0-9]{8}(?=["\\])/g, 'lp_Ex4mpleE')
    .replace(/whsec_[A-Za-z0-9+/=]{40,}/g, `whsec_${Buffer.alloc(32, 7).toString('base64')}`)
    .replace(/r[a-z0-9]{6,10}\.receiver\.test/g, 'hooks.example.com')
    .replace(/127\.\d{1,3}\.\d{1,3}\.\d{1,3}/g, '203.0.113.10')
    .replace(/\/tmp\/loupe-[A-Za-z0-9-]+/g, '/srv/loupe/.data')
    .replace(/"password":"[^"]+"/g, '"password":"example-password"');

// Only requests the documented schema describes are shown (a form the API also accepts, such as a JSON
// array given as a string, is not the one to teach).
const doc = buildOpenApi(allEndpoints, 'http://localhost:3000/v1') as any;
const ajv = new Ajv2020({ strict: false, validateFormats: false });
ajv.addSchema(doc, 'openapi');
const documented = (key: string, request: unknown) => {
  const [method, path] = key.split(' ');
  if (!doc.paths[path]?.[method.toLowerCase()]?.requestBody) return false;
  const ref = `openapi#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method.toLowerCase()}/requestBody/content/application~1json/schema`;
  return (ajv.getSchema(ref) ?? ajv.compile({ $ref: ref }))(request) === true;
};

const examples: Record<string, { request?: unknown; responses: Record<string, Record<string, unknown>> }> =
  {};
const fields = (v: unknown) => (v && typeof v === 'object' ? Object.keys(v).length : 0);

for (const file of process.argv.slice(2)) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(redact(line)) as Recorded;
    if (!r.body || typeof r.body !== 'object') continue;
    const t = templates.find((x) => x.method === r.method && x.re.test(r.path.replace(/^\/v1/, '')));
    if (!t) continue;
    examples[t.key] ??= { responses: {} };
    const e = examples[t.key];
    const ok = r.status < 300;
    if (
      ok &&
      r.request !== undefined &&
      JSON.stringify(r.request).length <= MAX_CHARS &&
      documented(t.key, r.request)
    ) {
      const better =
        e.request === undefined ||
        fields(r.request) > fields(e.request) ||
        (fields(r.request) === fields(e.request) &&
          JSON.stringify(r.request).length < JSON.stringify(e.request).length);
      if (better) e.request = r.request;
    }
    const slot = ok ? 'success' : String(r.body?.error?.code ?? 'ERROR');
    e.responses[String(r.status)] ??= {};
    const byStatus = e.responses[String(r.status)];
    const current = byStatus[slot];
    if (!current || JSON.stringify(r.body).length < JSON.stringify(current).length) byStatus[slot] = r.body;
  }
}

const sorted = Object.fromEntries(Object.entries(examples).sort(([a], [b]) => a.localeCompare(b)));
const out = join(import.meta.dirname, '..', 'shared', 'http', 'openapi-examples.json');
writeFileSync(out, `${JSON.stringify(sorted, null, 2)}\n`);
// Biome's layout, so that `npx biome check .` stays clean.
execFileSync('npx', ['biome', 'format', '--write', out], { stdio: 'ignore' });
const missing = templates.filter((t) => !examples[t.key]?.responses).map((t) => t.key);
console.log(
  `${Object.keys(sorted).length} operations with examples; without: ${missing.join(', ') || 'none'}`,
);
