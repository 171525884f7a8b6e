import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * The tools/list entries, computed when the function is bundled (infra/bundling.ts, mcpToolListing:
 * this module's text is replaced by the listing buildListings() gives there), so that a cold start does
 * not convert every tool's zod schemas to JSON Schema. Undefined when running from source (`npm start`,
 * tests): the listing is then built on the first tools/list.
 */
export const prebuiltListing: Tool[] | undefined = undefined;
