/**
 * Loading a preview1 module: compiled with its memory capped, and refused
 * with a sentence that names what is wrong when this host cannot run it.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { capModule } from '../limits.js';
import { exportedMemoryLimits, type MemoryLimits } from '../memory-watch.js';
import { watchGrowth } from '../grow-watch.js';
import { PREVIEW1_FUNCTIONS } from './abi.js';
import { MemoryPool, POOL_IMPORT_MODULE, importOwnMemory } from '../memory-pool.js';
import type { Preview1Host } from './host.js';

const PROVIDED = new Set<string>(PREVIEW1_FUNCTIONS);
/** Import names that reach for the network (WASIX sockets, wasi:sockets, wasi:http, resolvers). */
const NETWORK_IMPORT = /sock|http|getaddrinfo|resolve|connect|dns|network/i;

/**
 * Refuse a module this host cannot run, naming what is wrong: an import it
 * does not provide (another module, an unknown function, an imported
 * memory), one that reaches for the network, or a missing `_start` or
 * `memory` export.
 */
export function checkPreview1Module(module: WebAssembly.Module, toolName: string, pooledMemory = false): void {
  const unknown: string[] = [];
  const network: string[] = [];
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === 'wasi_snapshot_preview1' && imp.kind === 'function' && PROVIDED.has(imp.name)) continue;
    // The memory Corral's rewrite made an import (memory-pool.ts); a module that imports from that name itself is not rewritten.
    if (pooledMemory && imp.module === POOL_IMPORT_MODULE && imp.kind === 'memory') continue;
    const label = `${imp.module}.${imp.name}`;
    if (NETWORK_IMPORT.test(imp.module) || NETWORK_IMPORT.test(imp.name)) network.push(label);
    else unknown.push(imp.kind === 'function' ? label : `${label} (${imp.kind})`);
  }
  if (network.length > 0) {
    throw new CorralError(
      ErrorCodes.NETWORK_BLOCKED,
      `${toolName} imports ${network.join(', ')}; Corral tools run without network access.`,
      { imports: network },
    );
  }
  if (unknown.length > 0) {
    const legacy = unknown.some((name) => name.startsWith('wasi_unstable.'));
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} imports ${unknown.join(', ')}, which Corral's preview1 host does not provide` +
        (legacy
          ? '; it was built for the old wasi_unstable ABI: rebuild it with a current WASI SDK.'
          : '; a preview1 tool may import only wasi_snapshot_preview1 functions.'),
      { imports: unknown },
    );
  }
  const exports = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
  if (exports.get('_start') !== 'function' || exports.get('memory') !== 'memory') {
    const missing = [exports.get('_start') !== 'function' && '_start', exports.get('memory') !== 'memory' && 'memory'].filter(Boolean);
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} does not export ${missing.join(' and ')}; Corral runs preview1 modules that are WASI commands (exporting _start and their memory).`,
      { exports: [...exports.keys()] },
    );
  }
}

/** A compiled preview1 module and the pool its memory comes from (null when it keeps its own; see memory-pool.ts). */
export interface LoadedModule {
  module: WebAssembly.Module;
  memory: MemoryPool | null;
  /** Where the memory it exports starts and how far it may grow, when it keeps its own (memory null). */
  memoryLimits: MemoryLimits;
  /** Whether its memory.grows were rewritten so that a failed one is seen (grow-watch.ts). */
  growWatched: boolean;
  /** Called when the code cache drops this module: its pooled memory goes too. */
  dispose(): void;
}

/** Compile a module with its memory capped (and pooled), and check it is something this host runs. */
export async function compilePreview1(bytes: Uint8Array, maxPages: number, toolName: string): Promise<LoadedModule> {
  const capped = capModule(bytes, maxPages, toolName);
  // Validated before anything is added to it: an index one past the tool's own globals, functions or
  // types names what grow-watch appends, so an invalid module would become valid, and write Corral's flag.
  if (!WebAssembly.validate(capped)) throw await notValid(capped, toolName);
  const watched = watchGrowth(capped, { toolName });
  // Checked on the module as its author built it, so the import Corral adds is never the author's.
  const pooled = importOwnMemory(watched?.bytes ?? capped);
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile((pooled?.bytes ?? watched?.bytes ?? capped) as BufferSource);
  } catch (err) {
    throw registrationError(err, toolName);
  }
  checkPreview1Module(module, toolName, pooled !== null);
  const memory = pooled ? new MemoryPool(pooled) : null;
  return {
    module,
    memory,
    // A preview1 module imports no memory (checkPreview1Module).
    memoryLimits: exportedMemoryLimits(capped, false, maxPages),
    growWatched: watched !== null,
    dispose: () => memory?.dispose(),
  };
}

/** E_REGISTRATION for a module the engine refuses, with the engine's reason (compiling it again finds it). */
async function notValid(bytes: Uint8Array<ArrayBuffer>, toolName: string): Promise<CorralError> {
  try {
    await WebAssembly.compile(bytes);
  } catch (err) {
    return registrationError(err, toolName);
  }
  return registrationError(new Error('WebAssembly.validate refused it'), toolName);
}

function registrationError(err: unknown, toolName: string): CorralError {
  const reason = err instanceof Error ? err.message : String(err);
  return new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a valid WebAssembly module: ${reason}`, { reason });
}

/**
 * A fresh instance. Synchronous where the host allows it (workers, Node):
 * about 0.1 ms a call cheaper than awaiting WebAssembly.instantiate. A
 * browser's main thread refuses it with a RangeError; then the async path.
 */
export async function instantiate(module: WebAssembly.Module, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  return instantiateSync(module, imports) ?? WebAssembly.instantiate(module, imports);
}

/**
 * A fresh instance of a preview1 module linked to `host`: made inside
 * `host.enter`, so that a start function's calls reach this call's host,
 * or, where this thread refuses synchronous instantiation (a browser's main
 * thread), asynchronously with imports of the host's own. `imports` holds
 * `host.imports` as its `wasi_snapshot_preview1` namespace.
 */
export async function instantiatePreview1(
  host: Preview1Host,
  module: WebAssembly.Module,
  imports: WebAssembly.Imports,
): Promise<WebAssembly.Instance> {
  return (
    host.enter(() => instantiateSync(module, imports)) ??
    WebAssembly.instantiate(module, { ...imports, wasi_snapshot_preview1: host.ownImports() })
  );
}

/**
 * A fresh instance made synchronously, or undefined where the thread refuses
 * (then instantiate asynchronously). Any other failure is the instantiation's
 * own, thrown as it is: a start function that overflowed the stack (a
 * RangeError too) must not run a second time.
 */
function instantiateSync(module: WebAssembly.Module, imports: WebAssembly.Imports): WebAssembly.Instance | undefined {
  if (!syncInstantiate) return undefined;
  try {
    return new WebAssembly.Instance(module, imports);
  } catch (err) {
    if (!(err instanceof RangeError && /main thread|synchronous/i.test(err.message))) throw err;
    syncInstantiate = false;
    return undefined;
  }
}
let syncInstantiate = true;
