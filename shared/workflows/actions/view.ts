import { isSecretHeaderName, type WebhookActionConfig } from './config';
import type { ActionConfig, ActionType } from './types';

/** JSON text for API responses: secrets never included (inline secret headers of legacy configs dropped). */
export function sanitizeActionConfig(type: ActionType, config: ActionConfig): string {
  if (type === 'WEBHOOK') {
    const c = config as WebhookActionConfig;
    return JSON.stringify({
      ...c,
      headers: (c.headers ?? []).filter((h) => !isSecretHeaderName(h.name)),
    });
  }
  return JSON.stringify(config);
}
