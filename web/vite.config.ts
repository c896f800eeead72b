import { defineConfig } from 'vite';
import { resolve } from 'node:path';

// The build is committed (api/dashboard) and embedded by the api, so it
// must be the same bytes on every machine: no timestamps, content hashes
// only, no inline scripts (the pages run under a strict CSP).
export default defineConfig({
  base: '/app/',
  build: {
    outDir: resolve(__dirname, '../api/dashboard'),
    emptyOutDir: true,
    target: 'es2020',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
    rollupOptions: {
      input: { app: resolve(__dirname, 'index.html'), docs: resolve(__dirname, 'docs.html') },
    },
  },
});
