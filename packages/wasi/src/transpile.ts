import { CorralError, ErrorCodes } from '@corral/core/errors';
import { checkComponentImports } from './component-imports.js';
import { rewriteGlue } from './glue.js';
import { watchGrowth } from './grow-watch.js';
export { PREPARED_FORMAT } from './prepared-format.js';

/**
 * A component turned into something a JS engine can instantiate: jco's glue
 * (an ES module exporting `instantiate`) plus the core wasm modules it loads.
 * It is plain data, so hosts can cache it by the component's hash and post it
 * to workers.
 */
export interface PreparedComponent {
  glue: string;
  modules: Record<string, Uint8Array>;
  /**
   * Every import the component declares, read from its binary with versions
   * (`wasi:cli/stdin@0.2.0`); checked again before each compile, since
   * prepared components also come from caches.
   */
  imports: string[];
  /**
   * The component's preview1 module, when the component is nothing but that
   * module wrapped in jco's preview1 command adapter (the host checked that
   * wrapping it again gives the same bytes): hosts run it on the preview1
   * host instead of the glue, with exit codes as the adapter reports them.
   */
  preview1?: Uint8Array;
}

/**
 * A component made ready for workers: transpiled, and its glue checked and
 * rewritten once (rewriteGlue), not in each worker at its first call. What
 * hosts cache and the build writes for the bundled tools. Throws
 * E_REGISTRATION as transpileComponent and rewriteGlue do.
 */
export async function prepareComponent(bytes: Uint8Array, toolName = 'component'): Promise<PreparedComponent> {
  const transpiled = await transpileComponent(bytes, toolName);
  return { ...transpiled, glue: rewriteGlue(transpiled.glue, toolName) };
}

/** Transpile a component with jco (≈1 s the first time: callers cache the result); the glue is jco's own. */
export async function transpileComponent(bytes: Uint8Array, toolName = 'component'): Promise<PreparedComponent> {
  // Before jco: a refused component never reaches the transpiler, and jco's
  // own import list names only the imports a component uses.
  const imports = checkComponentImports(bytes, toolName);
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
  // jco's list of used imports (versions stripped, at least for some) must
  // be a subset of the declared ones; one that is not means the two parsers
  // disagree, and the component is refused.
  const declared = new Set(imports.map(withoutVersion));
  const undeclared = result.imports.filter((name) => !declared.has(withoutVersion(name)));
  if (undeclared.length > 0) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} uses imports its import section does not declare: ${undeclared.join(', ')}`,
      {
        imports: undeclared,
      },
    );
  }
  const modules: Record<string, Uint8Array> = {};
  let glue = '';
  for (const [name, source] of result.files) {
    // Watched here, once, rather than at every worker's compile (grow-watch.ts).
    if (name.endsWith('.wasm')) modules[name] = watchGrowth(new Uint8Array(source), { toolName })?.bytes ?? source;
    else if (name.endsWith('.js')) glue = new TextDecoder().decode(source);
  }
  if (!glue.includes('export function instantiate')) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName}: jco produced no instantiate() glue`, {});
  }
  return { glue, modules, imports };
}

function withoutVersion(name: string): string {
  const at = name.indexOf('@');
  return at === -1 ? name : name.slice(0, at);
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}
