import { approvalEndpoints } from '../shared/approvals/api';
import { authEndpoints } from '../shared/auth/api';
import { chatEndpoints } from '../shared/chat/api';
import { connectionEndpoints } from '../shared/connections/api';
import { conversationEndpoints } from '../shared/conversations/api';
import { credentialEndpoints } from '../shared/credentials/api';
import { dashboardEndpoints } from '../shared/dashboards/api';
import { discoveryEndpoints } from '../shared/discovery/api';
import type { EndpointSpec } from '../shared/http/endpoint';
import { metricEndpoints } from '../shared/metrics/api';
import { savedQueryEndpoints } from '../shared/saved-queries/api';
import { usageEndpoints } from '../shared/usage/api';
import { webhookEndpoints } from '../shared/webhooks/api';
import { workflowEndpoints } from '../shared/workflows/api';

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
