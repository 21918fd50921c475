/**
 * The two small core modules wit-component links a preview1 adapter with,
 * replaced by JavaScript (issue 15).
 *
 * A component built from a preview1 program holds its main module, the
 * adapter, and two modules that break the cycle between them: a shim whose
 * function i only calls entry k of a table it exports as `$imports`, passing
 * its own arguments on, and a fixup that only fills that table from its
 * imports once the adapter exists. jco's glue instantiates all four for
 * every call; the shim and fixup were ~10% of a call's instantiation, and
 * every call the main module makes into the adapter went through the table.
 *
 * Corral reads both byte for byte (readIndirection) and, only when they are
 * exactly that, instantiates neither: the shim's exports become JS functions
 * that call entry k of an array, and the fixup's instantiation fills the
 * array with the functions it was given (newIndirection). What runs is what
 * the component asked for, with nothing added: the array holds only what the
 * glue handed the fixup. Any other module, or a fixup handed another table,
 * is instantiated as it is.
 */
import { MalformedWasm, WasmReader as Reader } from '@corral/core/wasm';

/** A shim: export name → the table entry its function calls, and how many arguments it passes. */
export interface Shim {
  readonly kind: 'shim';
  readonly calls: ReadonlyArray<readonly [exportName: string, entry: number, params: number]>;
}

/** A fixup: table entry → the name of the import (in module '') placed there. */
export interface Fixup {
  readonly kind: 'fixup';
  readonly entries: ReadonlyArray<readonly [entry: number, importName: string]>;
}

const SECTION_CUSTOM = 0;
const SECTION_TYPE = 1;
const SECTION_IMPORT = 2;
const SECTION_FUNCTION = 3;
const SECTION_TABLE = 4;
const SECTION_EXPORT = 7;
const SECTION_ELEM = 9;
const SECTION_CODE = 10;

const FUNCREF = 0x70;
const NUMERIC = new Set([0x7f, 0x7e, 0x7d, 0x7c]);
const TABLE_NAME = '$imports';

/** A function type, as a string (param and result bytes): equal strings, equal types. */
type FuncType = string;

/** The shim or fixup these bytes are, or undefined for any other module (or bytes that cannot be read). */
export function readIndirection(module: Uint8Array): Shim | Fixup | undefined {
  try {
    const sections = readSections(module);
    if (!sections) return undefined;
    return readShim(sections) ?? readFixup(sections);
  } catch (err) {
    if (err instanceof MalformedWasm) return undefined;
    throw err;
  }
}

type Sections = Map<number, Reader>;

/** The sections of a module that holds only known sections, each once, custom ones skipped; undefined otherwise. */
function readSections(module: Uint8Array): Sections | undefined {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (module.length < 8 || header.some((b, i) => module[i] !== b)) return undefined;
  const file = new Reader(module, 8, module.length);
  const sections: Sections = new Map();
  while (file.pos < file.end) {
    const id = file.byte();
    const size = file.u32();
    if (size > file.end - file.pos) return undefined;
    const body = new Reader(module, file.pos, file.pos + size);
    file.pos += size;
    if (id === SECTION_CUSTOM) continue;
    if (sections.has(id)) return undefined;
    sections.set(id, body);
  }
  return sections;
}

/** Only these sections, and every one of them read to its end by the caller. */
function onlySections(sections: Sections, allowed: readonly number[]): boolean {
  return [...sections.keys()].every((id) => allowed.includes(id));
}

function done(r: Reader | undefined): boolean {
  return r === undefined || r.pos === r.end;
}

/** type section: plain function types of numeric values only. */
function readTypes(r: Reader | undefined): FuncType[] | undefined {
  if (!r) return [];
  const types: FuncType[] = [];
  for (let count = r.u32(); count > 0; count--) {
    if (r.byte() !== 0x60) return undefined;
    let type = '';
    for (let part = 0; part < 2; part++) {
      const n = r.u32();
      type += `${n}:`;
      for (let i = 0; i < n; i++) {
        const valtype = r.byte();
        if (!NUMERIC.has(valtype)) return undefined;
        type += valtype.toString(16);
      }
      type += '|';
    }
    types.push(type);
  }
  return types;
}

function paramCount(type: FuncType): number {
  return Number(type.slice(0, type.indexOf(':')));
}

/** limits ::= 0x00 min | 0x01 min max */
function readLimits(r: Reader): { min: number; max?: number } {
  const flag = r.byte();
  if (flag === 0x00) return { min: r.u32() };
  if (flag === 0x01) {
    const limits = { min: r.u32(), max: r.u32() };
    if (limits.max < limits.min) throw new MalformedWasm('a table whose maximum is below its minimum', r.pos);
    return limits;
  }
  throw new MalformedWasm(`table limits of kind 0x${flag.toString(16)}`, r.pos - 1);
}

/** A signed LEB128 of at most 5 bytes (core:i32, as i32.const carries it). */
function s32(r: Reader): number {
  const at = r.pos;
  let value = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    const b = r.byte();
    value |= (b & 0x7f) << shift;
    shift += 7;
    if ((b & 0x80) === 0) return shift < 32 && b & 0x40 ? value | (-1 << shift) : value;
  }
  throw new MalformedWasm('i32 longer than 5 bytes', at);
}

/** `0` or a decimal number without leading zeros: the names wit-component gives entries and their functions. */
const INDEX_NAME = /^(0|[1-9]\d*)$/;

/**
 * A shim: a type, function, table, export and code section and nothing
 * else; one funcref table of n entries, exported as `$imports`; each
 * function exported once by a decimal name, and its body exactly
 * `local.get 0 … local.get p-1; i32.const k; call_indirect (type t) 0; end`
 * with no locals, t its own type and k < n.
 */
function readShim(sections: Sections): Shim | undefined {
  if (!onlySections(sections, [SECTION_TYPE, SECTION_FUNCTION, SECTION_TABLE, SECTION_EXPORT, SECTION_CODE])) return undefined;
  const types = readTypes(sections.get(SECTION_TYPE));
  const functions = sections.get(SECTION_FUNCTION);
  const tables = sections.get(SECTION_TABLE);
  const exports = sections.get(SECTION_EXPORT);
  const code = sections.get(SECTION_CODE);
  if (!types || !functions || !tables || !exports || !code) return undefined;

  const typeOf: number[] = [];
  for (let count = functions.u32(); count > 0; count--) {
    const type = functions.u32();
    if (type >= types.length) return undefined;
    typeOf.push(type);
  }
  if (tables.u32() !== 1 || tables.byte() !== FUNCREF) return undefined;
  const tableSize = readLimits(tables).min;

  const exportOf = new Map<number, string>();
  const names = new Set<string>();
  let tableExported = false;
  for (let count = exports.u32(); count > 0; count--) {
    const name = exports.name();
    const kind = exports.byte();
    const index = exports.u32();
    if (names.has(name)) return undefined;
    names.add(name);
    if (kind === 0x01 && index === 0 && name === TABLE_NAME) tableExported = true;
    else if (kind === 0x00 && index < typeOf.length && INDEX_NAME.test(name) && !exportOf.has(index)) exportOf.set(index, name);
    else return undefined;
  }
  if (!tableExported) return undefined;

  const calls: Array<readonly [string, number, number]> = [];
  if (code.u32() !== typeOf.length) return undefined;
  for (let f = 0; f < typeOf.length; f++) {
    const size = code.u32();
    const end = code.pos + size;
    if (end > code.end) return undefined;
    const body = new Reader(code.bytes, code.pos, end);
    code.pos = end;
    if (body.u32() !== 0) return undefined; // no locals
    const params = paramCount(types[typeOf[f]!]!);
    for (let i = 0; i < params; i++) if (body.byte() !== 0x20 || body.u32() !== i) return undefined;
    if (body.byte() !== 0x41) return undefined;
    const entry = s32(body);
    if (body.byte() !== 0x11 || body.u32() !== typeOf[f] || body.byte() !== 0x00 || body.byte() !== 0x0b || !done(body)) return undefined;
    if (entry < 0 || entry >= tableSize) return undefined;
    const name = exportOf.get(f);
    if (name !== undefined) calls.push([name, entry, params]);
  }
  if (![sections.get(SECTION_TYPE), functions, tables, exports, code].every(done)) return undefined;
  return { kind: 'shim', calls };
}

/**
 * A fixup: a type, import and element section and nothing else; imports all
 * from module '', one of them the funcref table `$imports`, the rest
 * functions; one active element segment for table 0 at a constant offset,
 * listing imported functions only, within the table's declared minimum.
 */
function readFixup(sections: Sections): Fixup | undefined {
  if (!onlySections(sections, [SECTION_TYPE, SECTION_IMPORT, SECTION_ELEM])) return undefined;
  const types = readTypes(sections.get(SECTION_TYPE));
  const imports = sections.get(SECTION_IMPORT);
  const elems = sections.get(SECTION_ELEM);
  if (!types || !imports || !elems) return undefined;

  const functionNames: string[] = [];
  let tableMin: number | undefined;
  for (let count = imports.u32(); count > 0; count--) {
    if (imports.name() !== '') return undefined;
    const name = imports.name();
    const kind = imports.byte();
    if (kind === 0x00) {
      if (imports.u32() >= types.length) return undefined;
      functionNames.push(name);
    } else if (kind === 0x01 && name === TABLE_NAME && tableMin === undefined) {
      if (imports.byte() !== FUNCREF) return undefined;
      tableMin = readLimits(imports).min;
    } else {
      return undefined;
    }
  }
  if (tableMin === undefined) return undefined;

  // elem ::= 0:u32 e:expr y*:vec(funcidx)   (active, table 0, funcref), e ::= i32.const n end
  if (elems.u32() !== 1 || elems.u32() !== 0 || elems.byte() !== 0x41) return undefined;
  const offset = s32(elems);
  if (elems.byte() !== 0x0b) return undefined;
  const entries: Array<readonly [number, string]> = [];
  const count = elems.u32();
  if (offset < 0 || offset + count > tableMin) return undefined;
  for (let i = 0; i < count; i++) {
    const f = elems.u32();
    if (f >= functionNames.length) return undefined;
    entries.push([offset + i, functionNames[f]!]);
  }
  if (!done(imports) || !done(elems) || !done(sections.get(SECTION_TYPE))) return undefined;
  return { kind: 'fixup', entries };
}

/** A call through a table entry the fixup left empty, as call_indirect reports it. */
function uninitialized(): never {
  throw new WebAssembly.RuntimeError('null function or function signature mismatch');
}

/**
 * One instance's stand-ins for a shim and its fixup: `shimExports` for what
 * the shim would export, and `fill` for the fixup's instantiation, which
 * answers true only when handed this instance's own stand-in table.
 */
export interface Indirection {
  shimExports(shim: Shim): Record<string, unknown>;
  fill(fixup: Fixup, imports: WebAssembly.Imports | undefined): boolean;
}

export function newIndirection(): Indirection {
  const entries: Array<((...args: unknown[]) => unknown) | undefined> = [];
  // What the glue hands the fixup as `$imports`: recognised by identity, usable as nothing else.
  const table = Object.freeze(Object.create(null) as object);
  const forwarder = (entry: number, params: number) => {
    // Fixed arity for the usual counts: a rest parameter would allocate an array per call.
    switch (params) {
      case 0:
        return () => (entries[entry] ?? uninitialized)();
      case 1:
        return (a: unknown) => (entries[entry] ?? uninitialized)(a);
      case 2:
        return (a: unknown, b: unknown) => (entries[entry] ?? uninitialized)(a, b);
      case 3:
        return (a: unknown, b: unknown, c: unknown) => (entries[entry] ?? uninitialized)(a, b, c);
      case 4:
        return (a: unknown, b: unknown, c: unknown, d: unknown) => (entries[entry] ?? uninitialized)(a, b, c, d);
      default:
        return (...args: unknown[]) => (entries[entry] ?? uninitialized)(...args);
    }
  };
  return {
    shimExports(shim) {
      const exports = Object.create(null) as Record<string, unknown>;
      exports[TABLE_NAME] = table;
      for (const [name, entry, params] of shim.calls) exports[name] = forwarder(entry, params);
      return exports;
    },
    fill(fixup, imports) {
      const given = (imports as Record<string, Record<string, unknown> | undefined> | undefined)?.[''];
      if (given?.[TABLE_NAME] !== table) return false;
      const found = fixup.entries.map(([entry, name]) => [entry, given[name]] as const);
      // Instantiating the fixup would have failed on an import that is not a function.
      if (found.some(([, value]) => typeof value !== 'function')) return false;
      for (const [entry, value] of found) entries[entry] = value as (...args: unknown[]) => unknown;
      return true;
    },
  };
}

/**
 * The shims and fixups of one component that may be stood in for: all or
 * none. Each shim needs a fixup to fill its stand-in table, and no other
 * module may import a table (it could be handed the stand-in, which is no
 * table): otherwise every module is instantiated as it is.
 */
export function standIns(modules: ReadonlyMap<WebAssembly.Module, Uint8Array>): Map<WebAssembly.Module, Shim | Fixup> {
  const found = new Map<WebAssembly.Module, Shim | Fixup>();
  let shims = 0;
  for (const [module, bytes] of modules) {
    const read = readIndirection(bytes);
    if (read) {
      found.set(module, read);
      if (read.kind === 'shim') shims++;
    } else if (WebAssembly.Module.imports(module).some((entry) => entry.kind === 'table')) {
      return new Map();
    }
  }
  return shims > 0 && shims === found.size - shims ? found : new Map();
}
