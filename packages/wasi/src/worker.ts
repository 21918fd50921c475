/**
 * @corral/wasi/worker — what a sandbox worker script imports: the worker
 * side of the host–worker API, and nothing of the host side. Not part of
 * the public API; the host packages' worker scripts use it.
 */
export {
  sandboxWorkerApi,
  exposeSandboxWorker,
  runAfterPosting,
  outcomeOf,
  type AfterReply,
  type SandboxWorkerApi,
  type SandboxWorkerOptions,
  type RunJob,
  type Outcome,
} from './worker-api.js';
/** The preview1 calls the preview1 host answers (a worker's findPreview1 keeps to modules that import only these). */
export { PREVIEW1_FUNCTIONS } from './preview1/abi.js';
