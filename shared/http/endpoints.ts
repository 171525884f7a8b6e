import { approvalEndpoints } from '../approvals/api';
import { authEndpoints } from '../auth/api';
import { chatEndpoints } from '../chat/api';
import { connectionEndpoints } from '../connections/api';
import { conversationEndpoints } from '../conversations/api';
import { credentialEndpoints } from '../credentials/api';
import { dashboardEndpoints } from '../dashboards/api';
import { discoveryEndpoints } from '../discovery/api';
import { metricEndpoints } from '../metrics/api';
import { savedQueryEndpoints } from '../saved-queries/api';
import { usageEndpoints } from '../usage/api';
import { webhookEndpoints } from '../webhooks/api';
import { workflowEndpoints } from '../workflows/api';
import type { EndpointSpec } from './endpoint';

/** Every endpoint of the API, for the OpenAPI document. Each capability adds its list here. */
export const allEndpoints: EndpointSpec[] = [
  ...discoveryEndpoints,
  ...authEndpoints,
  ...usageEndpoints,
  ...chatEndpoints,
  ...conversationEndpoints,
  ...connectionEndpoints,
  ...dashboardEndpoints,
  ...savedQueryEndpoints,
  ...metricEndpoints,
  ...approvalEndpoints,
  ...workflowEndpoints,
  ...credentialEndpoints,
  ...webhookEndpoints,
];
