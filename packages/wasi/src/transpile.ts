import { CorralError, ErrorCodes } from '@corral/core/errors';

/**
 * A component turned into something a JS engine can instantiate: jco's glue
 * (an ES module exporting `instantiate`) plus the core wasm modules it loads.
 * It is plain data, so hosts can cache it by the component's hash and post it
 * to workers.
 */
export interface PreparedComponent {
  glue: string;
  modules: Record<string, Uint8Array>;
  /** WASI interfaces the component imports, e.g. `wasi:cli/stdin`. */
  imports: string[];
}

/**
 * Names the transpiler and glue format, so caches drop entries made by
 * another jco. Must match the pinned @bytecodealliance/jco (a test checks).
 */
export const PREPARED_FORMAT = 'jco-1.15.4/v1';

/** Interfaces that reach the network; a component importing one is refused. */
const NETWORK_INTERFACES = /^wasi:(sockets|http)\//;

/**
 * Refuse components that import network interfaces, naming the import.
 * Runs before anything is instantiated, so those interfaces never reach an
 * import object.
 */
export function assertNoNetworkImports(imports: readonly string[], toolName: string): void {
  const network = imports.filter((name) => NETWORK_INTERFACES.test(name));
  if (network.length > 0) {
    throw new CorralError(
      ErrorCodes.NETWORK_BLOCKED,
      `${toolName} imports ${network.join(', ')}; Corral tools run without network access.`,
      { imports: network },
    );
  }
}

/** Transpile a component with jco (≈1 s the first time: callers cache the result). */
export async function transpileComponent(bytes: Uint8Array, toolName = 'component'): Promise<PreparedComponent> {
  let result;
  try {
    // Imported on first use: loading jco compiles its own multi-megabyte
    // bindgen component, which a host with a warm cache never needs.
    const { generate } = await import('@bytecodealliance/jco/component');
    result = await generate(bytes, {
      name: 'tool',
      instantiation: { tag: 'async' },
      map: [],
      noTypescript: true,
      noNodejsCompat: true,
      base64Cutoff: 0,
      tlaCompat: false,
      validLiftingOptimization: false,
      tracing: false,
      noNamespacedExports: false,
      multiMemory: false,
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a valid WebAssembly component: ${firstLine(reason)}`, {
      reason,
    });
  }
  const imports = result.imports.map(stripVersion);
  assertNoNetworkImports(imports, toolName);
  const modules: Record<string, Uint8Array> = {};
  let glue = '';
  for (const [name, source] of result.files) {
    if (name.endsWith('.wasm')) modules[name] = source;
    else if (name.endsWith('.js')) glue = new TextDecoder().decode(source);
  }
  if (!glue.includes('export function instantiate')) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}: jco produced no instantiate() glue`, {});
  }
  return { glue, modules, imports };
}

function stripVersion(name: string): string {
  const at = name.indexOf('@');
  return at === -1 ? name : name.slice(0, at);
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}
