import { readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';

/** Where `npm run build:console` writes the console (console/dist; built, never committed). */
export const CONSOLE_DIR = resolve(import.meta.dirname, '..', '..', 'console', 'dist');

/**
 * The console's security headers, here and on CloudFront (infra/constructs/console.ts): only this origin's
 * scripts, styles, images and API calls; no frames, no plugins, no inline code.
 */
export const CONSOLE_CSP =
  "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

export const CONSOLE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.tgz': 'application/gzip',
};

/**
 * Serves the console on GET/HEAD: `/` and `/index.html` (never cached, so a new build is picked up),
 * `/assets/<hashed file>` (cached for a year) and `/loupe-mcp.tgz` (the stdio MCP bridge package that
 * `npx -y <origin>/loupe-mcp.tgz` runs, infra/mcp-bridge; never cached). Answers false for any other path, which the caller handles
 * as before (the API's 404 envelope). Routes inside the console are hash routes, so there is no fallback.
 */
export function serveConsole(
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  dir = CONSOLE_DIR,
): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  let rel: string;
  if (pathname === '/' || pathname === '/index.html') rel = 'index.html';
  else if (pathname === '/loupe-mcp.tgz') rel = 'loupe-mcp.tgz';
  else if (pathname === '/favicon.ico') {
    res.writeHead(204, CONSOLE_HEADERS).end();
    return true;
  } else if (/^\/assets\/[A-Za-z0-9._-]+$/.test(pathname)) rel = pathname.slice(1);
  else return false;
  const file = join(dir, rel);
  if (!file.startsWith(dir + sep)) return false;
  let body: Buffer;
  try {
    if (!statSync(file).isFile()) return false;
    body = readFileSync(file);
  } catch {
    if (rel !== 'index.html') return false;
    res.writeHead(503, { ...CONSOLE_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('The console is not built. Run `npm run build:console` (npm start builds it when missing).\n');
    return true;
  }
  res.writeHead(200, {
    ...CONSOLE_HEADERS,
    'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
    'Content-Length': body.length,
    'Cache-Control': rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
