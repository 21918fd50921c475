/**
 * A component that is only a preview1 command module wrapped in jco's
 * preview1 command adapter (what `corral build` makes of C and Rust tools,
 * and `jco new --wasi-command`) can run as that module on the preview1 host:
 * the adapter only turns preview1 calls into wasi:cli ones. Through the glue
 * each call makes four core instances and lifts and lowers every value
 * between them; the module alone makes one, and a call costs about half.
 *
 * Only an exact match counts: the module taken from the component, wrapped
 * again by the same adapter, must give back the component byte for byte. Any
 * other adapter, a different wiring, or anything added keeps the glue.
 */
import { componentCoreModules, coreModuleInterface, hasStartFunction } from '@corral/core/wasm';
import { PREVIEW1_FUNCTIONS } from '@corral/wasi/worker';
import { wrapInCommandAdapter } from './author/toolchain.js';

/**
 * The calls the preview1 host answers. The adapter exports more that a module
 * may import (adapter_open_badfd, reset_adapter_state, …): the host would
 * refuse such a module, which runs through its glue.
 */
const PROVIDED = new Set<string>(PREVIEW1_FUNCTIONS);

/** The preview1 module `component` merely wraps, or undefined (the component then runs through its glue). */
export async function findPreview1(component: Uint8Array): Promise<Uint8Array | undefined> {
  let candidates: Uint8Array[];
  try {
    candidates = componentCoreModules(component).filter(isPreview1Command);
  } catch {
    return undefined;
  }
  if (candidates.length !== 1) return undefined;
  const module = new Uint8Array(candidates[0]!);
  const rebuilt = await wrapInCommandAdapter(module).catch(() => undefined);
  return rebuilt && Buffer.from(rebuilt.buffer, rebuilt.byteOffset, rebuilt.byteLength).equals(component) ? module : undefined;
}

/**
 * A core module that imports nothing but preview1 calls (those the preview1
 * host answers) and exports `_start`: the only kind the command adapter
 * wraps. Not one the component runs other code of: it calls an exported
 * `_initialize` before `_start`, and a start function runs before the
 * adapter is linked in, so its first preview1 call traps there, where the
 * preview1 host would answer it (an exit in it too).
 */
function isPreview1Command(bytes: Uint8Array): boolean {
  const { imports, exports } = coreModuleInterface(bytes);
  return (
    imports.every((i) => i.module === 'wasi_snapshot_preview1' && i.kind === 'function' && PROVIDED.has(i.name)) &&
    exports.some((e) => e.name === '_start' && e.kind === 'function') &&
    !exports.some((e) => e.name === '_initialize') &&
    !hasStartFunction(bytes, 'module')
  );
}
