/**
 * The sandbox worker: a Web Worker that hosts @corral/wasi, the same code
 * Node's worker_threads sandbox runs. It transpiles components when asked
 * (jco runs in browsers) and runs each call in a fresh instance against
 * Corral's WASI host: stdio, environment and filesystem are per-call
 * objects, and the worker has nothing else to give a tool.
 *
 * Started by BrowserSandboxWorker (pool.ts) as a module worker; bundlers see
 * `new Worker(new URL('./worker.js', import.meta.url), { type: 'module' })`
 * there and bundle this file with its imports.
 */
import { expose } from 'comlink';
import type { ExecutionResult } from '@corral/core';
import {
  ComponentRunner,
  Preview1Runner,
  transpileComponent,
  type PreparedComponent,
  type RunRequest,
} from '@corral/wasi';
import { outcomeOf, type Outcome } from '@corral/wasi/host-kit';
import { OpfsCallMounts } from './opfs-mounts.js';

/** The OPFS folders of the call running now (a worker runs one call at a time). */
let opfsMounts: OpfsCallMounts | undefined;

const options = {
  openOpfsDirectory: (opfsPath: string) => {
    if (!opfsMounts) throw new TypeError(`OPFS folder ${opfsPath} was not loaded for this call`);
    return opfsMounts.root(opfsPath);
  },
};
const components = new ComponentRunner(options);
const modules = new Preview1Runner(options);

const api = {
  /** Transpile a component (the page caches the result by content hash). */
  async prepare(wasm: Uint8Array, toolName: string): Promise<Outcome<PreparedComponent>> {
    return outcomeOf(() => transpileComponent(wasm, toolName));
  },
  /** True when this worker already compiled the component or module with this key. */
  async has(key: string): Promise<boolean> {
    return components.has(key) || modules.has(key);
  },
  /** Run a call: a transpiled component, or (kind 'module') a preview1 module's bytes, sent once per worker. */
  async run(
    key: string,
    prepared: PreparedComponent | Uint8Array | undefined,
    request: RunRequest,
    kind: 'component' | 'module' = 'component',
  ): Promise<Outcome<ExecutionResult>> {
    try {
      return await outcomeOf(async () => {
        const mounts = await OpfsCallMounts.load(request.mounts);
        opfsMounts = mounts;
        const value =
          kind === 'module'
            ? await modules.run(key, prepared as Uint8Array | undefined, request)
            : await components.run(key, prepared as PreparedComponent | undefined, request);
        opfsMounts = undefined;
        // What the tool changed in read-write OPFS folders is written back once it stopped.
        await mounts.persist(request.toolName);
        return value;
      });
    } finally {
      opfsMounts = undefined;
    }
  },
};

export type SandboxWorkerApi = typeof api;

expose(api);
