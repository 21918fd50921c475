/**
 * What a wasm binary imports and exports, read from its sections without
 * compiling it (a browser's main thread may not compile more than a few KiB
 * synchronously, and a componentize-js component embeds a 10 MB module):
 * the imports and exports of a core module, the core modules a component
 * embeds, and the one check built on them that nothing else makes before a
 * tool runs — a preview1 module adapted into a component must export
 * `cabi_realloc`.
 *
 * Layouts are from the core spec's binary format (sections, imports,
 * exports; the memory64, GC and custom-page-sizes proposals for the forms an
 * import's type may take) and the component model's Binary.md (a component
 * is a sequence of sections; id 1 holds a whole core module, id 4 a whole
 * nested component). Every length is checked against the bytes that remain,
 * so a malformed file ends in E_REGISTRATION, never a hang.
 */
import { CorralError, ErrorCodes } from './errors.js';
import { MalformedWasm as Malformed, WasmReader as Reader } from './wasm-reader.js';

export type CoreExternKind = 'function' | 'table' | 'memory' | 'global' | 'tag';

export interface CoreImport {
  module: string;
  name: string;
  kind: CoreExternKind;
}

export interface CoreExport {
  name: string;
  kind: CoreExternKind;
}

/** A core module's imports and exports, in the order the binary lists them. */
export interface CoreModuleInterface {
  imports: CoreImport[];
  exports: CoreExport[];
}

/** Something wrong with a tool's wasm, in words a tool author can act on. */
export interface WasmProblem {
  message: string;
  /** How to fix it. */
  hint?: string;
}

const KINDS: CoreExternKind[] = ['function', 'table', 'memory', 'global', 'tag'];
const HEADER = 8;
const CORE_SECTION_IMPORT = 2;
const CORE_SECTION_EXPORT = 7;
const CORE_SECTION_START = 8;
const COMPONENT_SECTION_START = 9;
const COMPONENT_SECTION_CORE_MODULE = 1;
const COMPONENT_SECTION_COMPONENT = 4;
/**
 * The most imports and exports a core module may have: V8's limits
 * (kV8MaxWasmImports, kV8MaxWasmExports) and wasmparser's, so no engine runs
 * a module with more. Counted before anything is kept, so a file of
 * millions of 4-byte imports costs no more than this many objects.
 */
const MAX_IMPORTS = 100_000;
const MAX_EXPORTS = 100_000;
/**
 * The most core modules, and nested components, read in one component
 * (wasmparser's MAX_WASM_MODULES and MAX_WASM_COMPONENTS per component are
 * 1,000): bounds what is kept, and how deep the walk recurses.
 */
const MAX_MODULES = 1_000;
const MAX_COMPONENTS = 1_000;

/** Each section as [id, body start, body end], after checking its size fits. */
function* sections(bytes: Uint8Array, start: number, end: number): Generator<[number, number, number]> {
  const r = new Reader(bytes, start, end);
  while (r.pos < end) {
    const id = r.byte();
    const size = r.u32();
    if (size > end - r.pos) throw new Malformed(`section ${id} claims ${size} bytes; ${end - r.pos} remain`, r.pos);
    yield [id, r.pos, r.pos + size];
    r.pos += size;
  }
}

/** A reference or value type: one byte, or 0x63/0x64 (ref null ht / ref ht) and a heap type. */
function skipValType(r: Reader): void {
  const b = r.byte();
  if (b === 0x63 || b === 0x64) r.skipLeb(10);
}

/** limits: a flags byte, the minimum, the maximum when flag 1 is set, a page size when flag 8 is. */
function skipLimits(r: Reader): void {
  const at = r.pos;
  const flags = r.byte();
  if (flags > 0x0f) throw new Malformed(`unknown limits flags 0x${flags.toString(16)}`, at);
  r.skipLeb(10);
  if (flags & 0x01) r.skipLeb(10);
  if (flags & 0x08) r.u32();
}

function externKind(r: Reader): CoreExternKind {
  const at = r.pos;
  const kind = KINDS[r.byte()];
  if (!kind) throw new Malformed(`unknown import or export kind 0x${r.bytes[at]!.toString(16)}`, at);
  return kind;
}

function readModuleInterface(bytes: Uint8Array, start: number, end: number): CoreModuleInterface {
  const imports: CoreImport[] = [];
  const exports: CoreExport[] = [];
  for (const [id, bodyStart, bodyEnd] of sections(bytes, start, end)) {
    if (id !== CORE_SECTION_IMPORT && id !== CORE_SECTION_EXPORT) continue;
    const r = new Reader(bytes, bodyStart, bodyEnd);
    const count = r.u32();
    const [kept, most, what] =
      id === CORE_SECTION_EXPORT ? [exports.length, MAX_EXPORTS, 'exports'] : [imports.length, MAX_IMPORTS, 'imports'];
    if (count > most - kept) throw new Malformed(`more than ${most} ${what}, the most a WebAssembly engine accepts`, bodyStart);
    for (let left = count; left > 0; left--) {
      if (id === CORE_SECTION_EXPORT) {
        const name = r.name();
        const kind = externKind(r);
        r.u32();
        exports.push({ name, kind });
        continue;
      }
      const module = r.name();
      const name = r.name();
      const kind = externKind(r);
      // importdesc: func typeidx | tabletype | memtype | globaltype | tag (0x00 typeidx)
      if (kind === 'function') r.u32();
      else if (kind === 'table') skipValType(r), skipLimits(r);
      else if (kind === 'memory') skipLimits(r);
      else if (kind === 'global') skipValType(r), r.byte();
      else r.byte(), r.u32();
      imports.push({ module, name, kind });
    }
    if (r.pos !== bodyEnd) throw new Malformed(`section ${id} has bytes after its last entry`, r.pos);
  }
  return { imports, exports };
}

function malformed(err: unknown, source: string, what: string): never {
  if (!(err instanceof Malformed)) throw err;
  throw new CorralError(ErrorCodes.REGISTRATION, `${source} is not a valid WebAssembly ${what}: ${err.message}.`, {
    source,
    reason: err.message,
  });
}

/** The imports and exports of a core module (version 1). Throws E_REGISTRATION when the bytes cannot be read. */
export function coreModuleInterface(bytes: Uint8Array, source = 'module'): CoreModuleInterface {
  try {
    if (bytes.length < HEADER) throw new Malformed('too short for a wasm header', 0);
    return readModuleInterface(bytes, HEADER, bytes.length);
  } catch (err) {
    return malformed(err, source, 'module');
  }
}

/**
 * Every core module a component embeds, its nested components' too, in the
 * order of the binary. Throws E_REGISTRATION when the bytes cannot be read.
 */
export function componentCoreModules(bytes: Uint8Array, source = 'component'): Uint8Array[] {
  const found: Uint8Array[] = [];
  let components = 0;
  const walk = (start: number, end: number) => {
    for (const [id, bodyStart, bodyEnd] of sections(bytes, start, end)) {
      // Both bodies begin with their own 8-byte preamble.
      if (bodyEnd - bodyStart < HEADER && (id === COMPONENT_SECTION_CORE_MODULE || id === COMPONENT_SECTION_COMPONENT)) {
        throw new Malformed(`section ${id} is too short to hold a module or component`, bodyStart);
      }
      if (id === COMPONENT_SECTION_CORE_MODULE) {
        if (found.length === MAX_MODULES) throw new Malformed(`more than ${MAX_MODULES} core modules`, bodyStart);
        found.push(bytes.subarray(bodyStart, bodyEnd));
      } else if (id === COMPONENT_SECTION_COMPONENT) {
        if (++components > MAX_COMPONENTS) throw new Malformed(`more than ${MAX_COMPONENTS} nested components`, bodyStart);
        walk(bodyStart + HEADER, bodyEnd);
      }
    }
  };
  try {
    if (bytes.length < HEADER) throw new Malformed('too short for a wasm header', 0);
    walk(HEADER, bytes.length);
  } catch (err) {
    return malformed(err, source, 'component');
  }
  return found;
}

/**
 * Whether instantiating runs code of the binary's own: a core module's start
 * section, or in a component a start section of its own or of a core module
 * it embeds. Throws E_REGISTRATION when the bytes cannot be read.
 */
export function hasStartFunction(bytes: Uint8Array, kind: 'module' | 'component', source: string = kind): boolean {
  const hasSection = (at: Uint8Array, id: number) => {
    for (const [found] of sections(at, HEADER, at.length)) if (found === id) return true;
    return false;
  };
  try {
    if (bytes.length < HEADER) throw new Malformed('too short for a wasm header', 0);
    if (kind === 'module') return hasSection(bytes, CORE_SECTION_START);
  } catch (err) {
    return malformed(err, source, kind);
  }
  const modules = componentCoreModules(bytes, source);
  try {
    return hasSection(bytes, COMPONENT_SECTION_START) || modules.some((module) => hasSection(module, CORE_SECTION_START));
  } catch (err) {
    return malformed(err, source, kind);
  }
}

/** The module name a preview1 program imports WASI from. */
const PREVIEW1 = 'wasi_snapshot_preview1';

/**
 * The hint for a component whose preview1 module lacks `cabi_realloc`, one
 * text for `corral validate` and registration alike.
 */
export const CABI_REALLOC_HINT =
  'export cabi_realloc from the core module before `jco new --wasi-command`; in C: ' +
  '__attribute__((export_name("cabi_realloc"))) void *cabi_realloc(void *p, size_t old, size_t align, size_t n) ' +
  '{ return realloc(p, n); }';

/**
 * A component made from a preview1 module (`jco new --wasi-command`,
 * `wasm-tools component new --adapt`) whose module does not export
 * `cabi_realloc`. The preview1 adapter then allocates its buffers with
 * `memory.grow` instead of the module's allocator, and a large read comes
 * back short (a 500 KB stdin read as 0 bytes) or traps with "assertion
 * failed at adapter line …"; a tool that passes its small tests fails on
 * real inputs. Undefined when the component has no such module.
 */
export function adapterReallocProblem(component: Uint8Array, source = 'component'): WasmProblem | undefined {
  // One module's lists at a time: only whether it misses cabi_realloc is kept.
  const missing = componentCoreModules(component, source).some((bytes, index) => {
    const { imports, exports } = coreModuleInterface(bytes, `${source} (core module ${index})`);
    return imports.some((i) => i.module === PREVIEW1) && !exports.some((e) => e.name === 'cabi_realloc' && e.kind === 'function');
  });
  if (!missing) return undefined;
  return {
    message:
      `${source} is a preview1 module adapted into a component, and that module does not export cabi_realloc: ` +
      `the preview1 adapter then cannot allocate large buffers, so a large input is read short or the tool traps ` +
      `("assertion failed at adapter line …")`,
    hint: CABI_REALLOC_HINT,
  };
}
