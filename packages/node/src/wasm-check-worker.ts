/**
 * The worker `corral validate` instantiates a tool in (wasm-check.ts): a
 * sandbox worker started like every other (SandboxWorker: no flags, no
 * environment, the same V8 heap limits), whose runs instantiate the tool
 * with the very runners that run tools and stop before its entry point.
 * A start function that never returns, or an instantiation that blows the
 * heap, ends this thread, never the CLI: the host stops it at the time limit.
 */
import { parentPort } from 'node:worker_threads';
import { expose } from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { CorralError, ErrorCodes, type ExecutionResult } from '@corral/core';
import { ComponentRunner, Preview1Runner } from '@corral/wasi';
import { outcomeOf, sandboxWorkerApi, type SandboxWorkerApi } from '@corral/wasi/worker';

/**
 * The exports of a component as ComponentRunner's instantiation returns
 * them, with each `wasi:cli/run` interface replaced by one whose run does
 * nothing: the runner instantiates the component and looks for its run
 * export as it always does, and the tool's code never runs. An export by
 * that name that is not such an interface (a bare `run` function) is left
 * out, so the runner says the component is not a wasi:cli command, where a
 * real call would fail calling it.
 */
function withoutRunning(exports: Record<string, unknown>): Record<string, unknown> {
  const isRun = (name: string) => name === 'run' || name.startsWith('wasi:cli/run');
  const runnable = (value: unknown) =>
    typeof value === 'object' && value !== null && typeof (value as { run?: unknown }).run === 'function';
  return Object.fromEntries(
    Object.entries(exports).flatMap(([name, value]) => (!isRun(name) ? [[name, value]] : runnable(value) ? [[name, { run() {} }]] : [])),
  );
}

type Instantiate = (...args: never[]) => Promise<Record<string, unknown>>;

/** ComponentRunner, instantiating without running (see withoutRunning). */
class ComponentProbe extends ComponentRunner {
  protected override start(...[compiled, call, request]: Parameters<ComponentRunner['start']>): ReturnType<ComponentRunner['start']> {
    const loaded = compiled as unknown as { instantiate: Instantiate };
    const instantiate: Instantiate = async (...args) => withoutRunning(await loaded.instantiate(...args));
    return super.start({ ...compiled, instantiate } as typeof compiled, call, request);
  }
}

/** Preview1Runner, instantiating against the real preview1 host without calling `_start`. */
class Preview1Probe extends Preview1Runner {
  protected override enter(): void {}

  // An exit here is the start function's, even exit(0): _start would never run.
  protected override exitedWhileInstantiated(code: number, toolName: string): Error {
    return startExit(toolName, code);
  }
}

function startExit(toolName: string, code: number): CorralError<'E_UNEXPECTED_EXIT'> {
  return new CorralError(
    ErrorCodes.UNEXPECTED_EXIT,
    `${toolName}'s start function called proc_exit(${code}) while it was instantiated: _start would never run, and every call would end with exit code ${code}`,
    { reason: 'exit', exit_code: code, stderr_tail: '', tool_error: null },
  );
}

if (!parentPort) throw new Error('wasm-check-worker.js must run in a worker thread');
const components = new ComponentProbe();
const modules = new Preview1Probe();
const probe = (job: Parameters<SandboxWorkerApi['run']>[0]): Promise<ExecutionResult> =>
  job.kind === 'module' ? modules.run(job.key, job.bytes, job.request) : components.run(job.key, job.prepared, job.request);
// The sandbox worker's API (its `prepare` transpiles with jco here too), with runs that only instantiate.
const api: SandboxWorkerApi = { ...sandboxWorkerApi(), run: (job) => outcomeOf(() => probe(job)) };
expose(api, (nodeEndpoint as unknown as (port: unknown) => Parameters<typeof expose>[1])(parentPort));
