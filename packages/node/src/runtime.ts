/**
 * Which JavaScript runtime hosts @corral/node, and which sandbox limits it
 * cannot enforce. The host is written for Node; Bun and Deno run it unchanged
 * (PORTABILITY.md), but there a limit Corral promises may not hold, and
 * Corral says so once per process (a process warning, code
 * CORRAL_UNENFORCED_LIMIT) instead of running a tool unbounded in silence.
 */
import type { Worker } from 'node:worker_threads';

export interface HostRuntime {
  name: 'node' | 'bun' | 'deno';
  version: string;
}

export function hostRuntime(): HostRuntime {
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.bun) return { name: 'bun', version: versions.bun };
  if (versions.deno) return { name: 'deno', version: versions.deno };
  return { name: 'node', version: process.versions.node };
}

/**
 * Whether Worker.terminate() stops a worker while it runs code. A timeout
 * depends on it: without it, a tool in a loop keeps its thread (and its
 * mounts) after its call has ended, until the process exits. There is no
 * cheap probe (Bun stops a JS loop but not a WebAssembly one), so this is what
 * was measured: Bun 1.4.5 never settles terminate() of a worker in a wasm
 * loop; Deno 2.9.6 settles it at once and the thread runs on. Re-measured by
 * test/portability on every run.
 */
export function stopsRunningWorkers(runtime: HostRuntime = hostRuntime()): boolean {
  return runtime.name === 'node';
}

const warned = new Set<string>();

function warnOnce(key: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  process.emitWarning(message, { code: 'CORRAL_UNENFORCED_LIMIT' });
}

/**
 * Called with each new sandbox worker: warns about every limit this runtime
 * does not enforce. Heap limits are detected on the worker itself (Node and
 * Deno report the resourceLimits they applied; Bun reports none and applies none).
 */
export function warnUnenforcedLimits(thread: Worker): void {
  const runtime = hostRuntime();
  const where = `${runtime.name} ${runtime.version}`;
  if (!stopsRunningWorkers(runtime)) {
    warnOnce(
      'terminate',
      `Corral on ${where}: a sandbox worker cannot be stopped while it runs (Worker.terminate), so a tool that reaches its timeout or is cancelled gets its error but may keep running, with its mounts, until this process exits. Run untrusted tools on Node.`,
    );
  }
  const limits = (thread as { resourceLimits?: { maxOldGenerationSizeMb?: unknown } }).resourceLimits;
  if (typeof limits?.maxOldGenerationSizeMb !== 'number') {
    warnOnce(
      'heap',
      `Corral on ${where}: sandbox workers run without a JS heap limit (worker resourceLimits are not applied), so a tool can make its worker grow the host's memory without bound. Run untrusted tools on Node or Deno.`,
    );
  }
}
