/**
 * The WASI preview2 host, as jco's preview2-shim provides it.
 *
 * Corral always uses the shim's *browser* modules, in Node too: they keep no
 * host access (no real stdio, filesystem or process.exit) and offer
 * per-instance factories (createCli, createFilesystem). The node variant reads
 * the host's stdin and calls process.exit, so it must never host a tool.
 * Each host loads the browser modules its own way and hands them in here.
 */
export interface WasiShim {
  cli: typeof import('@bytecodealliance/preview2-shim/cli');
  clocks: typeof import('@bytecodealliance/preview2-shim/clocks');
  filesystem: typeof import('@bytecodealliance/preview2-shim/filesystem');
  io: typeof import('@bytecodealliance/preview2-shim/io');
  random: typeof import('@bytecodealliance/preview2-shim/random');
}

export type ShimModuleName = keyof WasiShim;
export const shimModuleNames: readonly ShimModuleName[] = ['cli', 'clocks', 'filesystem', 'io', 'random'];

/** Load the shim given a function that imports one of its browser modules. */
export async function loadShim(importModule: (name: ShimModuleName) => Promise<unknown>): Promise<WasiShim> {
  const entries = await Promise.all(shimModuleNames.map(async (name) => [name, await importModule(name)] as const));
  const shim = Object.fromEntries(entries) as unknown as WasiShim;
  if (typeof shim.cli.createCli !== 'function' || typeof shim.filesystem.createFilesystem !== 'function') {
    throw new Error('preview2-shim is not the browser variant (createCli/createFilesystem missing)');
  }
  return shim;
}
