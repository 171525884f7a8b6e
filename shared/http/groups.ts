/**
 * Endpoint groups: each is one Lambda function (functions/http/<name>.ts) and owns the listed path
 * prefixes (the prefix itself and everything below it). The CDK stack and the local runtime both read
 * this list, so a path is served by the same handler in both.
 */
import type { FunctionNeeds } from '../platform/needs';

export interface HttpGroup extends FunctionNeeds {
  name: string;
  prefixes: string[];
  /** Streams responses (Lambda response streaming through the REST API). */
  streaming?: boolean;
  /** Longer timeout or more memory where the group needs it. */
  timeoutSeconds?: number;
  memoryMb?: number;
}

export const httpGroups: HttpGroup[] = [
  { name: 'discovery', prefixes: ['/', '/openapi.json', '/.well-known'] },
  { name: 'keys', prefixes: ['/keys', '/members'] },
  { name: 'usage', prefixes: ['/usage'] },
  {
    name: 'chat',
    prefixes: ['/chat', '/conversations'],
    streaming: true,
    timeoutSeconds: 300,
    needs: ['decrypt', 'model', 'sqlite', 'databases', 'internet'],
  },
  {
    name: 'connections',
    prefixes: ['/connections'],
    timeoutSeconds: 29,
    needs: ['decrypt', 'encrypt', 'model', 'sqlite', 'databases', 'internet'],
    enqueues: ['annotate', 'webhook-fanout'],
  },
  {
    name: 'dashboards',
    prefixes: ['/dashboards'],
    timeoutSeconds: 29,
    needs: ['decrypt', 'sqlite', 'databases'],
  },
  {
    name: 'saved-queries',
    prefixes: ['/saved-queries'],
    timeoutSeconds: 29,
    needs: ['decrypt', 'sqlite', 'databases'],
  },
  { name: 'metrics', prefixes: ['/metrics'], timeoutSeconds: 29, needs: ['decrypt', 'sqlite', 'databases'] },
  {
    name: 'approvals',
    prefixes: ['/queries', '/approval-rules'],
    timeoutSeconds: 29,
    needs: ['decrypt', 'sqlite', 'databases'],
    enqueues: ['webhook-fanout'],
  },
  { name: 'workflow-credentials', prefixes: ['/workflow-credentials'], needs: ['encrypt', 'decrypt'] },
  {
    name: 'workflows',
    prefixes: ['/workflows'],
    timeoutSeconds: 360,
    needs: ['decrypt', 'schedules', 'sqlite', 'databases', 'internet', 'mail'],
    enqueues: ['webhook-fanout', 'workflow-runner'],
  },
  {
    // The MCP endpoint: its tools call the query, chat, saved-query, metric, dashboard and approval use
    // cases, so it needs what those groups need (no encryption of new secrets, no schedules, no mail).
    name: 'mcp',
    prefixes: ['/mcp'],
    timeoutSeconds: 29,
    needs: ['decrypt', 'model', 'sqlite', 'databases', 'internet'],
    enqueues: ['webhook-fanout'],
  },
  {
    name: 'webhooks',
    prefixes: ['/webhooks'],
    timeoutSeconds: 29,
    needs: ['encrypt', 'decrypt', 'internet'],
  },
];

/** The group that serves a path: longest matching prefix; `discovery` answers unknown paths with 404. */
export function groupFor(path: string): HttpGroup {
  let best: HttpGroup | undefined;
  let bestLen = -1;
  for (const g of httpGroups)
    for (const p of g.prefixes) {
      if (p === '/' ? path === '/' : path === p || path.startsWith(`${p}/`)) {
        if (p.length > bestLen) {
          best = g;
          bestLen = p.length;
        }
      }
    }
  return best ?? httpGroups[0];
}
