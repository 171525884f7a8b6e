import { defineConfig } from 'vite';

/**
 * The console: a Preact single-page application built into console/dist (not committed), served by the
 * local runtime at / and by CloudFront when deployed, both under `Content-Security-Policy: default-src 'self'`.
 * No inline script or style is emitted (the module preload polyfill would be an inline script).
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 400,
    reportCompressedSize: false,
  },
});
