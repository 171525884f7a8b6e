import { mcpHandler } from '../../shared/mcp/handler';

/**
 * POST /mcp: the Model Context Protocol endpoint (see shared/mcp/). A cold start compiles the REST
 * stack's middlewares only; the MCP SDK and the tools load with the first authenticated request.
 */
export const handler = mcpHandler();
