/**
 * The summaries' Corral: a BrowserCorral from @corral/browser (sandbox
 * workers, the IndexedDB snapshot store) with diff-summary registered. It
 * runs in runtime.worker.ts, off the page's thread: a 50 MB diff's JSON,
 * its SHA-256 and its IndexedDB write never stall the page. Nothing here
 * runs a tool itself; every call goes through the runtime, so input and
 * output are validated, limits apply, and each call is recorded.
 */
import {
  BrowserCorral,
  CorralError,
  ErrorCodes,
  Runtime,
  bundledTools,
  registerBundledTools,
  type InvokeResult,
  type Tool,
} from '@corral/browser';
import type { DiffSummary, Language } from './summary.js';

export type PrepStep = 'workers' | 'tools' | 'prepare' | 'warm' | 'done';

/**
 * Which build of the bundled tools to run: 'component' (default) is the
 * same diff-summary.wasm Node runs; 'module' is its WASI preview1 build,
 * which needs no jco transpile on a first visit (`?tools=module`).
 */
export type ToolFlavor = 'component' | 'module';

export interface Host {
  corral: BrowserCorral;
  /** Why there is no history (the store could not be opened), or null. */
  storeError: string | null;
  /** One diff-summary call; `record: false` keeps it out of the history (the benchmark's "sandbox alone"). */
  summarize(diff: string, language: Language, options?: { record?: boolean }): Promise<Summarized>;
}

/** One sandbox worker: summaries run one at a time (the page never asks for two at once). */
const POOL_SIZE = 1;

export interface StartOptions {
  flavor?: ToolFlavor;
  /**
   * Asked before the warm-up call (an empty diff, so the first summary
   * costs what later ones do): false skips it, e.g. when a summary is
   * already waiting, which then warms the worker itself, sooner.
   */
  warm?: () => boolean | Promise<boolean>;
}

/**
 * Everything that can start before the page says what it wants: the
 * runtime (its store and a first sandbox worker), and diff-summary's files
 * downloaded, registered and prepared. runtime.worker.ts calls it as soon as
 * it loads, which in a production build is while the page still loads.
 */
export interface Opening {
  opened: Promise<Opened>;
  /** The build of diff-summary being readied, and how far it got. */
  flavor: ToolFlavor;
  registered: Promise<Tool>;
  prepared: Promise<Tool>;
}

interface Opened {
  corral: BrowserCorral;
  storeError: string | null;
  /** Settles once the first sandbox worker answered (or could not start: the warm-up call says why). */
  booting: Promise<void>;
}

export function openHost(flavor: ToolFlavor = 'component'): Opening {
  const opened = openCorral();
  // diff-summary's files download while the workers start and the store opens.
  const files = bundledTools.find((tool) => tool.name === 'diff-summary');
  if (!files) throw new Error('the bundled tools have no diff-summary');
  const early = new Map(
    [flavor === 'module' ? files.moduleUrl : files.wasmUrl, files.validatorsUrl, ...(flavor === 'module' ? [] : [files.preparedUrl])].map(
      (url) => [url, fetch(url)] as const,
    ),
  );
  // Each early response is read once; a second read (none is expected) fetches again.
  const fetchEarly = (url: string): Promise<Response> => {
    const response = early.get(url);
    early.delete(url);
    return response ?? fetch(url);
  };
  const registered = opened.then(async ({ corral }) => {
    const [tool] = await registerBundledTools(corral, { kind: flavor, names: ['diff-summary'], fetch: fetchEarly });
    if (!tool) throw new Error('diff-summary did not register');
    return tool;
  });
  const prepared = registered.then(async (tool) => {
    const { corral } = await opened;
    // The component as jco transpiled it when Corral was built (one fetch, no
    // transpiler in the page; registerBundledTools says where it is).
    if (flavor === 'component') await corral.executor.prepare(tool);
    // Compiled in the sandbox worker too (no tool code runs), so the first
    // summary costs what later ones do, warm-up call or not.
    await corral.executor.preload(tool).catch(() => {}); // the first call compiles it then
    return tool;
  });
  // Reported by startHost, if the page ever asks.
  for (const promise of [opened, prepared, ...early.values()]) promise.catch(() => {});
  return { opened, flavor, registered, prepared };
}

async function openCorral(): Promise<Opened> {
  let corral: BrowserCorral;
  let storeError: string | null = null;
  try {
    corral = await BrowserCorral.create({ size: POOL_SIZE });
  } catch (err) {
    // IndexedDB can be unavailable (some private modes, blocked storage):
    // summaries still work, without history.
    storeError = (err as Error).message;
    corral = await BrowserCorral.create({ size: POOL_SIZE, store: false });
  }
  // Start a sandbox worker now, while the tools load: its scripts and the WASI
  // shim are ready by the time the warm-up call (or the first summary) needs it.
  const booting = corral.executor.pool
    .run((worker) => worker.api.ping(), {
      timeoutMs: 30_000,
      onTimeout: () =>
        new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, 'The sandbox worker did not start within 30 s.', {
          resource: 'time',
          timeout_ms: 30_000,
        }),
    })
    .then(
      () => {},
      () => {}, // the warm-up call below reports a worker that cannot start
    );
  return { corral, storeError, booting };
}

/**
 * diff-summary, ready to run: from `opening` (begun before the page asked)
 * when it readies the flavor asked for, else readied now in its runtime.
 */
export async function startHost(onStep: (step: PrepStep) => void, options: StartOptions = {}, opening?: Opening): Promise<Host> {
  const flavor = options.flavor ?? 'component';
  // A runtime readies one build of diff-summary (both would be one name and version with different wasm).
  if (opening?.flavor !== flavor) opening = openHost(flavor);
  onStep('workers');
  const { corral, storeError, booting } = await opening.opened;
  onStep('tools');
  await opening.registered;
  if (flavor === 'component') onStep('prepare');
  const diffTool = await opening.prepared;
  if ((await options.warm?.()) ?? true) {
    onStep('warm');
    await booting;
    await warmUp(corral, diffTool);
  }
  onStep('done');
  return {
    corral,
    storeError,
    summarize: (diff, language, options) => summarize(corral, diff, language, options),
  };
}

/**
 * One call with an empty diff through a runtime without a store (so it is
 * not in the history): it starts a sandbox worker, which loads its scripts,
 * and compiles the tool there. The first real summary then makes no request
 * at all, and costs what every later one does.
 */
async function warmUp(corral: BrowserCorral, tool: Tool): Promise<void> {
  const result = await unrecorded(corral).invokeTool(tool, { diff: '' });
  if (!result.ok) throw new Error(`diff-summary did not start: ${result.error?.message ?? 'unknown error'}`);
}

const quiet = new WeakMap<BrowserCorral, Runtime>();

/** The same registry, sandbox and checks, without the snapshot store: calls that are not history. */
function unrecorded(corral: BrowserCorral): Runtime {
  let runtime = quiet.get(corral);
  if (!runtime) quiet.set(corral, (runtime = new Runtime({ registry: corral.registry, executor: corral.executor })));
  return runtime;
}

export interface Summarized {
  result: InvokeResult<DiffSummary>;
  /** Wall time of the call as the page saw it (queue, worker, tool, snapshot writes). */
  ms: number;
}

/**
 * The stdout cap for one summary, scaled to the diff: the runtime's default
 * (1 MiB) is about 8,700 files, and a 50,000-file PR writes 6 MB. Each file
 * costs at most a few times its header's bytes in the answer (measured:
 * 121 output bytes per 242-byte section; the path is written once, the diff
 * names it four times), so 4 bytes per input character is a ceiling no real
 * diff reaches, while a runaway tool still stops. Output is not preallocated.
 */
export function outputLimitFor(diff: string): number {
  return 2 ** 20 + 4 * diff.length;
}

/**
 * The time a summary may take, scaled to the diff: the spec's 10 s fits any
 * everyday diff, but a 50 MB one measured 8.7-13.5 s from input to answer
 * in Node on this 2-core machine under load (the tool's own share grows
 * linearly). 10 s plus 0.4 ms per KB keeps more than twice that margin up
 * to the 64 MiB the tool accepts, and a stuck tool is still stopped.
 */
export function timeoutFor(diff: string): number {
  return 10_000 + Math.ceil(diff.length / 2_500);
}

async function summarize(corral: BrowserCorral, diff: string, language: Language, options: { record?: boolean } = {}): Promise<Summarized> {
  const t = performance.now();
  const input = { diff, language };
  const call = { outputLimitBytes: outputLimitFor(diff), timeoutMs: timeoutFor(diff) };
  const result = (
    options.record === false
      ? await unrecorded(corral).invoke('diff-summary', input, call)
      : await corral.invoke('diff-summary', input, call)
  ) as InvokeResult<DiffSummary>;
  return { result, ms: performance.now() - t };
}
