import { fileURLToPath } from 'node:url';
import { Registry, Runtime, type InvokeOptions, type InvokeResult, type Tool, type CorralError } from '@corral/core';
import { WorkerExecutor, type WorkerExecutorOptions } from './executor.js';
import { loadToolFolder } from './tool-folder.js';

/** The first-party tools that ship with Corral (`wasm-tools/` at the repository root). */
export const BUNDLED_TOOLS_DIR = fileURLToPath(new URL('../../../wasm-tools/', import.meta.url));

export interface CorralOptions extends WorkerExecutorOptions {
  /** Load the bundled first-party tools. Default true. */
  bundled?: boolean;
  /** More folders of tools (each a tool folder or a folder of tool folders). */
  toolDirs?: string[];
}

/**
 * Corral for Node in one object: a registry of tools, a pool of sandbox
 * workers, and the invoke pipeline between them.
 */
export class Corral {
  readonly registry: Registry;
  readonly executor: WorkerExecutor;
  readonly runtime: Runtime;
  /** Tool folders that failed to load, kept so `corral tools` can report them. */
  readonly loadErrors: CorralError[];

  private constructor(registry: Registry, executor: WorkerExecutor, loadErrors: CorralError[]) {
    this.registry = registry;
    this.executor = executor;
    this.runtime = new Runtime({ registry, executor });
    this.loadErrors = loadErrors;
  }

  static async create(options: CorralOptions = {}): Promise<Corral> {
    const registry = new Registry();
    const dirs = [...(options.bundled === false ? [] : [BUNDLED_TOOLS_DIR]), ...(options.toolDirs ?? [])];
    const loadErrors: CorralError[] = [];
    for (const dir of dirs) loadErrors.push(...(await loadToolFolder(registry, dir)).errors);
    return new Corral(registry, new WorkerExecutor(options), loadErrors);
  }

  invoke<O = unknown>(ref: string, input: unknown, options?: InvokeOptions): Promise<InvokeResult<O>> {
    return this.runtime.invoke(ref, input, options) as Promise<InvokeResult<O>>;
  }

  invokeTool<O = unknown>(tool: Tool, input: unknown, options?: InvokeOptions): Promise<InvokeResult<O>> {
    return this.runtime.invokeTool(tool, input, options) as Promise<InvokeResult<O>>;
  }

  close(): Promise<void> {
    return this.executor.close();
  }
}
