/**
 * The sandbox worker: a worker_threads thread that hosts @corral/wasi.
 * It transpiles components when asked and runs each call in a fresh instance.
 * It holds no host capabilities of its own: tools get Corral's WASI host
 * (@corral/wasi), whose stdio, environment and filesystem are per call.
 * The API is @corral/wasi's, shared with the browser's worker; Node adds
 * only the opener for host folders (mounts.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Endpoint } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { exposeSandboxWorker } from '@corral/wasi/worker';
import { hostMountOpeners } from './mounts.js';
import { findPreview1 } from './adapted.js';

if (!parentPort) throw new Error('worker.js must run in a worker thread');
exposeSandboxWorker(
  {
    mountOpeners: hostMountOpeners(),
    findPreview1,
    ...(typeof workerData?.toolCacheBytes === 'number' ? { cacheBytes: workerData.toolCacheBytes as number } : {}),
  },
  (nodeEndpoint as unknown as (port: unknown) => Endpoint)(parentPort),
);
