import type { PreparedComponent } from './transpile.js';

/**
 * Names the version of glue.ts's rewrites that prepared glue carries: the
 * first 12 hex digits of that file's SHA-256 (glue-rewrites.test.ts checks
 * it, so a change to the rewrites cannot keep the old name).
 */
export const GLUE_REWRITES = '32febdf79c54';

/**
 * Names the transpiler and glue format, so caches drop entries made by
 * another jco or another layout. Must match the pinned @bytecodealliance/jco.
 * v2: `imports` holds the declared imports (from the binary), not jco's list
 * of used ones. v3: the glue is rewritten (glue.ts), by the rewrites
 * GLUE_REWRITES names. v4: each core module's memory.grows are watched
 * (grow-watch.ts). v5: `preview1`, an adapted module run as itself. v6: the Node cache keeps it too. A module of its own: hosts read it without loading the
 * transpiler or the rewrites.
 */
export const PREPARED_FORMAT = `jco-1.15.4/v6/${GLUE_REWRITES}`;

/** How a glue Corral rewrote begins (glue.ts): this, then the GLUE_REWRITES that did it. */
export const REWRITTEN_MARK = '// rewritten by corral ';

/**
 * Whether a glue was rewritten by other rewrites than these: a stale entry
 * of a cache not keyed by PREPARED_FORMAT, which a host prepares again
 * (glue.ts refuses to run it).
 */
export function rewrittenByOtherVersion(glue: string): boolean {
  return glue.startsWith(REWRITTEN_MARK) && !glue.startsWith(`${REWRITTEN_MARK}${GLUE_REWRITES}\n`);
}

/**
 * %TypedArray%.prototype[Symbol.toStringTag]: the name a typed array was
 * made with, read from the array itself ("Uint8Array"), and undefined for
 * anything else, a Proxy of a typed array and a lookalike object included.
 */
const typedArrayName = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype) as object, Symbol.toStringTag)!.get as (
  this: unknown,
) => string | undefined;

/**
 * A prepared component from a cache, copied into a plain object of its own
 * when it is one that can be used, else undefined (the host prepares it
 * again). A cache of one's own may hand back anything: not the shape of a
 * PreparedComponent, glue another version rewrote, or a Proxy or getters
 * that answer one way when checked and another when the call posts the
 * component to a worker (every call of the tool then failed with an
 * internal error). So each field is read once, whatever reading it throws
 * is a miss, and only the checked copy is used: strings as they are, a new
 * array of imports, and each core module's bytes copied out of a real
 * Uint8Array. Its core modules must be the ones its glue asks for: one the
 * glue never asks for would still take a share of the memory cap
 * (capComponentModules), and one it asks for but lacks fails every call.
 */
export function copyPrepared(value: unknown): PreparedComponent | undefined {
  try {
    if (typeof value !== 'object' || value === null) return undefined;
    const { glue, modules, imports, preview1 } = value as Record<string, unknown>;
    if (typeof glue !== 'string' || rewrittenByOtherVersion(glue)) return undefined;
    if (typeof modules !== 'object' || modules === null || !Array.isArray(imports)) return undefined;
    const asked = modulesAskedFor(glue);
    const copied: Array<[string, Uint8Array]> = [];
    for (const [name, bytes] of Object.entries(modules)) {
      if (typedArrayName.call(bytes) !== 'Uint8Array' || !asked.has(name)) return undefined;
      copied.push([name, new Uint8Array(bytes as Uint8Array)]);
    }
    if (copied.length !== asked.size) return undefined;
    const length: unknown = imports.length;
    if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0 || length > MAX_IMPORTS) return undefined;
    const names: string[] = [];
    for (let i = 0; i < length; i++) {
      const name: unknown = imports[i];
      if (typeof name !== 'string') return undefined;
      names.push(name);
    }
    if (preview1 !== undefined && typedArrayName.call(preview1) !== 'Uint8Array') return undefined;
    // fromEntries: a module named __proto__ stays a module, not the object's prototype.
    return {
      glue,
      modules: Object.fromEntries(copied),
      imports: names,
      ...(preview1 === undefined ? {} : { preview1: new Uint8Array(preview1 as Uint8Array) }),
    };
  } catch {
    return undefined;
  }
}

/**
 * More imports than any component declares (WASI 0.2 has about 30
 * interfaces): a cache's Proxy claiming billions would keep the loop reading them busy.
 */
const MAX_IMPORTS = 10_000;

/** The core modules a glue asks for by name: jco writes each as getCoreModule('name'). */
function modulesAskedFor(glue: string): Set<string> {
  return new Set(Array.from(glue.matchAll(/\bgetCoreModule\('([^'\\\n]+)'\)/g), (m) => m[1]!));
}
