/**
 * The sandbox worker: a worker_threads thread that hosts @corral/wasi.
 * It transpiles components when asked and runs each call in a fresh instance.
 * It holds no host capabilities of its own: tools get Corral's WASI host
 * (@corral/wasi), whose stdio, environment and filesystem are per call.
 */
import { parentPort } from 'node:worker_threads';
import { expose } from 'comlink';
import nodeEndpoint from 'comlink/dist/umd/node-adapter.js';
import type { ExecutionResult } from '@corral/core';
import { openHostDirectory } from './host-fs.js';
import {
  ComponentRunner,
  Preview1Runner,
  transpileComponent,
  type PreparedComponent,
  type RunRequest,
} from '@corral/wasi';
import { outcomeOf, type Outcome } from '@corral/wasi/host-kit';

const runnerOptions = { openHostDirectory };
const runner = new ComponentRunner(runnerOptions);
const preview1 = new Preview1Runner(runnerOptions);

const api = {
  /** Transpile a component (the host caches the result by content hash). */
  async prepare(wasm: Uint8Array, toolName: string): Promise<Outcome<PreparedComponent>> {
    return outcomeOf(() => transpileComponent(wasm, toolName));
  },
  /** True when this worker already compiled the component or module with this key. */
  has(key: string): boolean {
    return runner.has(key) || preview1.has(key);
  },
  /** Run a call: a transpiled component, or (kind 'module') a preview1 module's bytes, sent once per worker. */
  async run(
    key: string,
    prepared: PreparedComponent | Uint8Array | undefined,
    request: RunRequest,
    kind: 'component' | 'module' = 'component',
  ): Promise<Outcome<ExecutionResult>> {
    return outcomeOf(() =>
      kind === 'module'
        ? preview1.run(key, prepared as Uint8Array | undefined, request)
        : runner.run(key, prepared as PreparedComponent | undefined, request),
    );
  },
};

export type SandboxWorkerApi = typeof api;

if (!parentPort) throw new Error('worker.js must run in a worker thread');
expose(api, (nodeEndpoint as unknown as (port: unknown) => Parameters<typeof expose>[1])(parentPort));
