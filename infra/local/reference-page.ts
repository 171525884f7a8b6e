import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';

/**
 * The local server's API reference page: `GET /docs` renders `/v1/openapi.json` with Scalar's standalone
 * bundle, served from node_modules at `/docs/scalar.js` (no CDN). Strict content security policy: only
 * this origin's scripts, data and fonts (Scalar's default web fonts are switched off); inline styles
 * are allowed because the page's components set them.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const page = (specUrl: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loupe API reference</title>
</head>
<body>
<script id="api-reference" data-url="${specUrl}" data-configuration='{"withDefaultFonts":false,"hideClientButton":true,"showDeveloperTools":"never","agent":{"disabled":true}}'></script>
<script src="/docs/scalar.js"></script>
</body>
</html>
`;

let script: Promise<Buffer> | undefined;
const scalar = () =>
  (script ??= readFile(
    createRequire(import.meta.url).resolve('@scalar/api-reference/browser/standalone.js'),
  ));

/** Answers `/docs` and `/docs/scalar.js`; false for any other path. */
export async function serveReference(pathname: string, stage: string, res: ServerResponse): Promise<boolean> {
  const headers = { 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff' };
  if (pathname === '/docs' || pathname === '/docs/') {
    res
      .writeHead(200, { ...headers, 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' })
      .end(page(`/${stage}/openapi.json`));
    return true;
  }
  if (pathname === '/docs/scalar.js') {
    const body = await scalar();
    res
      .writeHead(200, {
        ...headers,
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=3600',
      })
      .end(body);
    return true;
  }
  return false;
}
