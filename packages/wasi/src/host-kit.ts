/**
 * @corral/wasi/host-kit — what @corral/node and @corral/browser build their
 * hosts from: the sandbox pool, the executor that drives it, the API a
 * sandbox worker exposes, and what crosses the worker boundary. Not part of
 * the public API: it changes when the hosts need it to.
 */
export { SandboxPool, type PoolWorker, type SandboxPoolOptions, type TaskOptions } from './pool.js';
export {
  PoolExecutor,
  outcomeOf,
  workerCalls,
  type WorkerCalls,
  type ExecRequest,
  type Outcome,
  type ExecutorWorker,
  type PreparedComponentStore,
  type PoolExecutorOptions,
  type PrepareEvent,
} from './executor.js';
export type { SandboxWorkerApi, RunJob } from './worker-api.js';
export {
  CorralHost,
  EXECUTOR_CLOSE_GRACE_MS,
  checkHostOptions,
  openHostStore,
  settledWithin,
  type CorralHostParts,
  type HostExecutor,
  type HostOptionKind,
} from './host.js';
export { decodePreparedFile } from './prepared-file.js';
export { PREPARED_FORMAT } from './prepared-format.js';
export type { PreparedComponent } from './transpile.js';
