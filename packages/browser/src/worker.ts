/**
 * The sandbox worker: a Web Worker that hosts @corral/wasi, the same code
 * Node's worker_threads sandbox runs. It transpiles components when asked
 * (jco runs in browsers) and runs each call in a fresh instance against
 * Corral's WASI host: stdio, environment and filesystem are per-call
 * objects, and the worker has nothing else to give a tool. The API is
 * @corral/wasi's, shared with Node's worker; the browser adds only OPFS
 * folders (`{ kind: 'opfs', path }`), read when a call starts and written
 * back when it ends.
 *
 * Started by BrowserSandboxWorker (pool.ts) as a module worker; bundlers see
 * `new Worker(new URL('./worker.js', import.meta.url), { type: 'module' })`
 * there and bundle this file with its imports.
 */
import type { Endpoint } from 'comlink';
import { exposeSandboxWorker } from '@corral/wasi/worker';
import { sourceString } from '@corral/wasi/fs';
import { OpfsCallMounts, notLoaded } from './opfs-mounts.js';
import { OPFS_KIND } from './opfs.js';

/** The OPFS folders of the call running now (a worker runs one call at a time). */
let opfsMounts: OpfsCallMounts | undefined;

exposeSandboxWorker(
  {
    mountOpeners: {
      [OPFS_KIND]: (source, guest) => {
        const path = sourceString(source, 'path', guest);
        if (!opfsMounts) throw notLoaded(path);
        return opfsMounts.root(path);
      },
    },
    async aroundRun(request, run) {
      try {
        const mounts = await OpfsCallMounts.load(request.mounts);
        opfsMounts = mounts;
        const value = await run();
        opfsMounts = undefined;
        // What the tool changed in read-write OPFS folders is written back once it stopped.
        await mounts.persist(request.toolName);
        return value;
      } finally {
        opfsMounts = undefined;
      }
    },
  },
  self as unknown as Endpoint,
);
