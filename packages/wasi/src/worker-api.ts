/**
 * The one API a sandbox worker exposes to its host, whatever the host:
 * every host's worker builds it with `sandboxWorkerApi` and adds only what
 * its platform needs (the openers of the mount sources it supports, and
 * what it does around a call). Hosts drive it through comlink
 * (`PoolExecutor`).
 */
import { expose, transfer } from 'comlink/dist/esm/comlink.mjs';
import type { Endpoint } from 'comlink';
import { outcomeOf, type Outcome } from './worker-outcome.js';
import type { ExecutionResult } from '@corral/core';
import { ComponentRunner } from './run.js';
import type { RunRequest, RunnerOptions } from './request.js';
import { Preview1Runner } from './preview1/index.js';
import { prepareComponent, type PreparedComponent } from './transpile.js';
import { CodeCache } from './code-cache.js';
import { cleanSpareMemories, cleanSparesAfterEachCall } from './memory-pool.js';

export { outcomeOf, type Outcome } from './worker-outcome.js';

/**
 * One call for a sandbox worker: a transpiled component or a preview1
 * module's bytes, keyed by content hash and sent only to a worker that has
 * not compiled it yet (a worker that has gets the key alone). The request
 * may carry a transferred MessagePort (`request.stdio.port`).
 */
export type RunJob =
  | { kind: 'component'; key: string; prepared?: PreparedComponent; request: RunRequest }
  | { kind: 'module'; key: string; bytes?: Uint8Array; request: RunRequest };

/** Code for a worker to compile before any call needs it: a job's program, and the memory cap its calls run under. */
export type PreloadJob =
  | { kind: 'component'; key: string; prepared: PreparedComponent; memoryLimitBytes: number; toolName: string }
  | { kind: 'module'; key: string; bytes: Uint8Array; memoryLimitBytes: number; toolName: string };

/** The calls a host makes on a sandbox worker. */
export interface SandboxWorkerApi {
  /** Answers as soon as the worker has loaded its scripts: a way to start one and wait for it. */
  ping(): true;
  /** Transpile a component (the host caches the result by content hash). */
  prepare(wasm: Uint8Array, toolName: string): Promise<Outcome<PreparedComponent>>;
  /** Run one call in a fresh instance. Every answer gives the input back (`stdin`, moved): the host may have moved it here, and reuses it. */
  run(job: RunJob): Promise<Outcome<ExecutionResult> & { stdin?: Uint8Array }>;
  /** Compile code ahead of its first call (no guest code runs). */
  preload(job: PreloadJob): Promise<Outcome<void>>;
}

export interface SandboxWorkerOptions extends RunnerOptions {
  /**
   * Wraps each run, inside the same Outcome: what a host does before and
   * after a call on its worker (load the storage its openers hand out,
   * write back what the tool changed).
   */
  aroundRun?: (request: RunRequest, run: () => Promise<ExecutionResult>) => Promise<ExecutionResult>;
  /**
   * The preview1 module a component merely wraps in the preview1 adapter, or
   * undefined (PreparedComponent.preview1): asked when a component is
   * prepared, by a host that can rebuild the component to check. Without
   * one, every component runs through its glue.
   */
  findPreview1?: (component: Uint8Array) => Promise<Uint8Array | undefined>;
}

/**
 * What runs `work` once the reply now being sent has gone (exposeSandboxWorker
 * passes one that runs it right after the post). Without one: Node's
 * setImmediate, a browser's setTimeout(0); both can wait behind the next
 * call, since a worker answering back-to-back calls handles the next message
 * before it reaches them.
 */
export type AfterReply = (work: () => void) => void;

const setImmediateOf = (globalThis as { setImmediate?: (work: () => void) => unknown }).setImmediate;
const onNextTurn: AfterReply = setImmediateOf ? (work) => void setImmediateOf(work) : (work) => void setTimeout(work, 0);

/** The worker side of the API: one runner per flavour, kept for the worker's life. */
export function sandboxWorkerApi(options: SandboxWorkerOptions = {}, afterReply: AfterReply = onNextTurn): SandboxWorkerApi {
  const { aroundRun, findPreview1, ...runnerOptions } = options;
  // One byte budget for all the code the worker keeps, whatever its kind.
  const codeCache = runnerOptions.codeCache ?? new CodeCache(runnerOptions.cacheBytes);
  const components = new ComponentRunner({ ...runnerOptions, codeCache });
  const modules = new Preview1Runner({ ...runnerOptions, codeCache });
  // Each run's reply is followed by cleanSpareMemories (below).
  cleanSparesAfterEachCall();
  const runJob = (job: RunJob): Promise<ExecutionResult> =>
    job.kind === 'module' ? modules.run(job.key, job.bytes, job.request) : components.run(job.key, job.prepared, job.request);
  return {
    ping: () => true,
    prepare: (wasm, toolName) =>
      outcomeOf(async () => {
        // Side by side: each loads a transpiler of its own the first time.
        const [prepared, preview1] = await Promise.all([prepareComponent(wasm, toolName), findPreview1?.(wasm).catch(() => undefined)]);
        return preview1 ? { ...prepared, preview1 } : prepared;
      }),
    preload: (job) =>
      outcomeOf(() =>
        job.kind === 'module'
          ? modules.preload(job.key, job.bytes, job.memoryLimitBytes, job.toolName)
          : components.preload(job.key, job.prepared, job.memoryLimitBytes, job.toolName),
      ),
    run: async (job) => {
      const outcome = await outcomeOf(() => (aroundRun ? aroundRun(job.request, () => runJob(job)) : runJob(job)));
      // Once the result is on its way: the next call of this component finds an instance made,
      // and the next call of any tool its reused memory zeroed.
      afterReply(() => {
        if (job.kind === 'component') components.prepareNext();
        cleanSpareMemories();
      });
      return withInput(outcome, job.request.stdin);
    },
  };
}

/**
 * A run's answer with its input, moved back: nothing in the worker reads
 * it once the run is over. A buffer already gone (length 0, or shared
 * memory, which cannot move) stays behind.
 */
function withInput<T extends object>(answer: T, stdin: Uint8Array): T & { stdin?: Uint8Array } {
  const { buffer } = stdin;
  return buffer instanceof ArrayBuffer && buffer.byteLength > 0 ? transfer({ ...answer, stdin }, [buffer]) : answer;
}

/**
 * `endpoint`, with the work queued through `afterReply` done right after the
 * next message it posts (a failure there is the next call's to meet).
 */
export function runAfterPosting(endpoint: Endpoint): { endpoint: Endpoint; afterReply: AfterReply } {
  let pending: (() => void)[] = [];
  const post = endpoint.postMessage.bind(endpoint);
  return {
    endpoint: {
      addEventListener: endpoint.addEventListener.bind(endpoint),
      removeEventListener: endpoint.removeEventListener.bind(endpoint),
      ...(endpoint.start ? { start: endpoint.start.bind(endpoint) } : {}),
      postMessage: (message: unknown, transfer?: Parameters<Endpoint['postMessage']>[1]) => {
        post(message, transfer);
        const work = pending;
        pending = [];
        for (const run of work) {
          try {
            run();
          } catch {
            // Work ahead of a call: that call meets the failure again, and reports it.
          }
        }
      },
    },
    afterReply: (work) => void pending.push(work),
  };
}

/**
 * Build the worker's API and expose it on `endpoint` through comlink, with
 * the work a run leaves for after its reply (an instance made ahead for the
 * next call, ComponentRunner.prepareNext) done as soon as that reply is
 * posted. Left to setImmediate, it came before the next call for only 30–45%
 * of back-to-back calls in a Node worker: the next message was handled first.
 */
export function exposeSandboxWorker(options: SandboxWorkerOptions, endpoint: Endpoint): void {
  const posting = runAfterPosting(endpoint);
  expose(sandboxWorkerApi(options, posting.afterReply), posting.endpoint);
}
