import { defineConfig } from 'vite';
import { earlyWorker } from './early-worker-plugin.js';
import { precache } from './precache-plugin.js';

// Cross-origin isolation: lets the page measure its own memory
// (performance.measureUserAgentSpecificMemory) and use SharedArrayBuffer.
// The app works without it, so a static host that cannot set headers is fine.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  // Relative URLs: the build works from any path (a subfolder, a file share).
  base: './',
  plugins: [
    precache({ sw: 'src/sw.ts' }),
    // The global is boot.ts's RUNTIME_WORKER_GLOBAL.
    earlyWorker({ source: 'runtime.worker.ts', global: 'corralRuntimeWorker', name: 'corral-runtime' }),
  ],
  build: {
    target: 'es2022',
    sourcemap: true,
    // The tools' .wasm stay files, so the service worker caches them as they are.
    assetsInlineLimit: (file) => (file.endsWith('.wasm') ? false : undefined),
  },
  worker: { format: 'es' },
  server: { headers: isolation },
  preview: { headers: isolation },
});
