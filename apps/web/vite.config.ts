import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { precache } from './precache-plugin.js';

// In dev, every preview2-shim browser module is pre-bundled up front: one
// discovered while a tool runs makes vite reload the page (DESIGN.md).
const shimDir = fileURLToPath(new URL('../../node_modules/@bytecodealliance/preview2-shim/dist/browser', import.meta.url));
const shimModules = existsSync(shimDir)
  ? readdirSync(shimDir)
      .filter((f) => f.endsWith('.js'))
      .map((f) => `@bytecodealliance/preview2-shim/${f.slice(0, -3)}`)
  : [];

// Cross-origin isolation: lets the page measure its own memory
// (performance.measureUserAgentSpecificMemory) and use SharedArrayBuffer.
// The app works without it, so a static host that cannot set headers is fine.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  // Relative URLs: the build works from any path (a subfolder, a file share).
  base: './',
  plugins: [precache({ sw: 'src/sw.ts' })],
  build: {
    target: 'es2022',
    sourcemap: true,
    // The tools' .wasm stay files, so the service worker caches them as they are.
    assetsInlineLimit: (file) => (file.endsWith('.wasm') ? false : undefined),
  },
  worker: { format: 'es' },
  optimizeDeps: { include: shimModules },
  server: { headers: isolation },
  preview: { headers: isolation },
});
