/**
 * Caps on what a core wasm module can grow, applied to its bytes before it
 * is compiled (every core module Corral runs: a preview1 tool, and each core
 * module of a transpiled component).
 *
 * A worker's `resourceLimits` bound the JS heap, not wasm memories, and a
 * tool that grows without limit takes the whole host down with it (60
 * funcref tables grown to 10 million entries each kill Node with "Reached
 * heap limit"). So Corral rewrites the limits of what a module defines:
 *
 *   - memories: each gets a maximum, and the maxima of one module's memories
 *     add up to at most the memory cap (resources.memory_mb);
 *   - tables: each gets a maximum, and the maxima of one module's tables add
 *     up to at most TABLE_ENTRIES_PER_PAGE entries per page of the memory
 *     cap (see tableBudget);
 *   - the core modules of one component share those caps
 *     (capComponentModules).
 *
 * `memory.grow` / `table.grow` past a cap then fail inside the tool (-1, a
 * NULL from malloc) instead of exhausting the host. A module whose minimums
 * alone exceed a cap is refused (E_RESOURCE_EXHAUSTED, resource memory).
 *
 * What this rewrite cannot bound is refused at load (E_REGISTRATION): wasm GC
 * types (structs and arrays live on the JS heap, one allocation per
 * `struct.new`), 64-bit memories and tables, tables with initializer
 * expressions, memories with custom page sizes, shared tables. Imported
 * memories and tables need no cap here: in a component they are another
 * core module's (capped there), and a preview1 tool may import only
 * functions (checkPreview1Module).
 *
 * Layouts are from the core spec's binary format (and the GC, memory64 and
 * custom-page-sizes proposals for what is refused). Every length is checked
 * against the bytes that remain; malformed input is E_REGISTRATION.
 */
import { CorralError, ErrorCodes, type ErrorDetails } from '@corral/core/errors';

export const WASM_PAGE_BYTES = 65536;

/**
 * Table entries a module may have in all, per 64 KiB page of its memory cap:
 * 1/16 of the memory cap counted in 8-byte entries (65536 / 16 / 8 = 512),
 * so 8,192 entries per MB of resources.memory_mb, 2,097,152 at the 256 MB
 * default. On Node 20 a table grown by `table.grow` costs about 16 bytes of
 * JS heap per entry (8 when created at its size), so a module's tables hold
 * at most about 1/8 of memory_mb on the heap.
 */
export const TABLE_ENTRIES_PER_PAGE = WASM_PAGE_BYTES / 16 / 8;

/** The most table entries one module may define in all, for a memory cap of `maxPages`. */
export function tableBudget(maxPages: number): number {
  return maxPages * TABLE_ENTRIES_PER_PAGE;
}

const SECTION_TYPE = 1;
const SECTION_TABLE = 4;
const SECTION_MEMORY = 5;
const SECTION_START = 8;

class Malformed extends Error {}

/** Refused at load: something this rewrite cannot bound. */
function refuse(toolName: string, what: string, details: ErrorDetails<'E_REGISTRATION'> = {}): CorralError {
  return new CorralError(
    ErrorCodes.REGISTRATION,
    `${toolName} ${what}, which Corral does not run: it could allocate outside the tool's memory cap.`,
    details,
  );
}

/** How much of the caps one module may use, when several modules of a component share them. */
export interface ModuleShare {
  /** Pages all this module's memories may add up to (default: maxPages). */
  memoryPages?: number;
  /** Entries all this module's tables may add up to (default: tableBudget(maxPages)). */
  tableEntries?: number;
}

/**
 * Cap every core module of a component so that together they stay within
 * one call's caps: the memory cap is split among the modules that define
 * memories, the table budget among those that define tables. (A component
 * made from one preview1 module defines its memory in one module, so that
 * module gets the whole cap; without the split, a component of N modules
 * would get N times it.)
 */
export function capComponentModules(
  modules: Readonly<Record<string, Uint8Array>>,
  maxPages: number,
  toolName = 'tool',
): Record<string, Uint8Array<ArrayBuffer>> {
  const defined = Object.values(modules).map((bytes) => definedSections(bytes));
  const withMemory = Math.max(1, defined.filter((d) => d.memory).length);
  const withTable = Math.max(1, defined.filter((d) => d.table).length);
  const share: ModuleShare = {
    memoryPages: Math.floor(maxPages / withMemory),
    tableEntries: Math.floor(tableBudget(maxPages) / withTable),
  };
  return Object.fromEntries(Object.entries(modules).map(([name, bytes]) => [name, capModule(bytes, maxPages, toolName, share)]));
}

/**
 * Whether a core module defines a memory or a table: its caps are rewritten
 * into the module, so each instance of it has them whole. A component may
 * instantiate such a module once per call (ComponentRunner refuses more).
 */
export function definesMemoryOrTable(module: Uint8Array): boolean {
  const found = definedSections(module);
  return found.memory || found.table;
}

/**
 * Whether instantiating a core module may run its code: it has a start
 * function (or sections that cannot be read, to be safe).
 */
export function mayRunAtInstantiation(module: Uint8Array): boolean {
  const found = definedSections(module);
  return found.start || !found.read;
}

/** Whether a module defines memories or tables (a non-empty memory or table section), and a start function. */
function definedSections(module: Uint8Array): { memory: boolean; table: boolean; start: boolean; read: boolean } {
  const found = { memory: false, table: false, start: false, read: false };
  let pos = 8;
  try {
    while (pos < module.length) {
      const id = module[pos]!;
      const [size, sizeLen] = readU32(module, pos + 1);
      const bodyStart = pos + 1 + sizeLen;
      if (id === SECTION_MEMORY || id === SECTION_TABLE) {
        const [count] = readU32(module, bodyStart);
        if (count > 0) found[id === SECTION_MEMORY ? 'memory' : 'table'] = true;
      }
      if (id === SECTION_START) found.start = true;
      pos = bodyStart + size;
    }
    found.read = pos === module.length;
  } catch {
    // Malformed: capModule says so, with the reason.
  }
  return found;
}

/**
 * The limits of the memories a capped module defines (capModule gave each a
 * maximum), in pages, in index order after any it imports; [] when it
 * defines none or cannot be read.
 */
export function definedMemories(module: Uint8Array): Array<{ minPages: number; maxPages: number }> {
  try {
    let pos = 8;
    while (pos < module.length) {
      const id = module[pos]!;
      const [size, sizeLen] = readU32(module, pos + 1);
      const bodyStart = pos + 1 + sizeLen;
      if (id === SECTION_MEMORY) {
        const r = new Reader(module.subarray(bodyStart, bodyStart + size));
        const memories: Array<{ minPages: number; maxPages: number }> = [];
        for (let count = r.u32(); count > 0; count--) {
          const flags = r.byte();
          const minPages = r.u32();
          if (!(flags & 0x01)) return [];
          memories.push({ minPages, maxPages: r.u32() });
        }
        return memories;
      }
      pos = bodyStart + size;
    }
  } catch {
    // Not readable: capModule would have refused it.
  }
  return [];
}

/**
 * Return a copy of `module` whose defined memories and tables have maxima
 * within the caps for `maxPages` pages of memory (see the file comment), or
 * within `share` of them.
 */
export function capModule(module: Uint8Array, maxPages: number, toolName = 'tool', share: ModuleShare = {}): Uint8Array<ArrayBuffer> {
  if (module.length < 8 || module[0] !== 0 || module[1] !== 0x61 || module[2] !== 0x73 || module[3] !== 0x6d || module[4] !== 1) {
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a core WebAssembly module (version 1).`);
  }
  try {
    // Unchanged sections are copied as they are (views until the final copy).
    const out: Uint8Array[] = [module.subarray(0, 8)];
    let pos = 8;
    while (pos < module.length) {
      const id = module[pos]!;
      const [size, sizeLen] = readU32(module, pos + 1);
      const bodyStart = pos + 1 + sizeLen;
      if (size > module.length - bodyStart) throw new Malformed(`section ${id} runs past the end of the module`);
      const bodyEnd = bodyStart + size;
      const body = module.subarray(bodyStart, bodyEnd);
      if (id === SECTION_TYPE) checkTypes(body, toolName);
      if (id === SECTION_MEMORY || id === SECTION_TABLE) {
        const rewritten =
          id === SECTION_MEMORY
            ? rewriteMemories(body, share.memoryPages ?? maxPages, toolName)
            : rewriteTables(body, share.tableEntries ?? tableBudget(maxPages), maxPages, toolName);
        out.push(Uint8Array.from([id, ...writeU32(rewritten.length), ...rewritten]));
      } else {
        out.push(module.subarray(pos, bodyEnd));
      }
      pos = bodyEnd;
    }
    return concatBytes(out);
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} is not a valid WebAssembly module: ${err.message}.`, {
      reason: err.message,
    });
  }
}

/**
 * type section: vec(rectype). Only plain function types are allowed:
 *   functype ::= 0x60 vec(valtype) vec(valtype)
 * Refused: rec groups (0x4E), subtypes (0x50, 0x4F), structs (0x5F), arrays
 * (0x5E), and anything unknown: a byte this parser does not know could hide
 * a GC type from it.
 */
function checkTypes(body: Uint8Array, toolName: string): void {
  const r = new Reader(body);
  for (let count = r.u32(); count > 0; count--) {
    const form = r.byte();
    if (form !== 0x60) {
      const what = GC_FORMS[form];
      throw refuse(toolName, what ? `uses wasm GC types (${what})` : `has a type of unknown form 0x${form.toString(16)}`, {
        type_form: form,
      });
    }
    for (let vec = 0; vec < 2; vec++) for (let n = r.u32(); n > 0; n--) skipValType(r, toolName);
  }
  if (r.pos !== body.length) throw new Malformed('the type section has bytes after its last type');
}

const GC_FORMS: Record<number, string> = {
  0x4e: 'a rec group',
  0x50: 'a subtype',
  0x4f: 'a final subtype',
  0x5f: 'a struct',
  0x5e: 'an array',
};

/**
 * valtype: one byte for numbers, v128 and the abbreviated reference types
 * (0x69..0x74, funcref 0x70, externref 0x6F), or 0x63/0x64 (ref null ht /
 * ref ht) then a heap type as s33. Anything else is refused, so this parser
 * never steps over bytes differently from the engine.
 */
function skipValType(r: Reader, toolName: string): void {
  const b = r.byte();
  if ((b >= 0x7b && b <= 0x7f) || (b >= 0x69 && b <= 0x74)) return;
  if (b === 0x63 || b === 0x64) return r.skipS33();
  throw refuse(toolName, `has a value type of unknown encoding 0x${b.toString(16)}`, { valtype: b });
}

interface Limits {
  min: number;
  max: number | undefined;
}

/**
 * memory section: vec(memtype), memtype ::= limits with flags
 *   bit 0: a maximum follows; bit 1: shared; bit 2: 64-bit (refused);
 *   bit 3: a custom page size follows (refused).
 */
function rewriteMemories(body: Uint8Array, maxPages: number, toolName: string): number[] {
  const r = new Reader(body);
  const memories: Array<Limits & { shared: number }> = [];
  for (let count = r.u32(); count > 0; count--) {
    const flags = r.byte();
    if (flags & 0x04) throw refuse(toolName, 'uses 64-bit memory');
    if (flags & 0x08) throw refuse(toolName, 'uses a memory with a custom page size');
    if (flags > 0x03) throw new Malformed(`unknown memory flags 0x${flags.toString(16)}`);
    const min = r.u32();
    const max = flags & 0x01 ? r.u32() : undefined;
    // Invalid, and the caps below would make it valid.
    if (max !== undefined && max < min) throw new Malformed('a memory has a maximum below its minimum');
    if (flags === 0x02) throw new Malformed('a shared memory has no maximum');
    memories.push({ min, max, shared: flags & 0x02 });
  }
  if (r.pos !== body.length) throw new Malformed('the memory section has bytes after its last memory');
  const totalMin = memories.reduce((sum, m) => sum + m.min, 0);
  if (totalMin > maxPages) {
    throw new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${toolName} needs at least ${Math.ceil((totalMin * WASM_PAGE_BYTES) / 2 ** 20)} MB of memory at start; its spec allows ${Math.floor((maxPages * WASM_PAGE_BYTES) / 2 ** 20)} MB (resources.memory_mb).`,
      { resource: 'memory', min_pages: totalMin, max_pages: maxPages },
    );
  }
  const maxima = shareBudget(memories, maxPages);
  const out = writeU32(memories.length);
  memories.forEach((m, i) => {
    out.push(0x01 | m.shared, ...writeU32(m.min), ...writeU32(maxima[i]!));
  });
  return out;
}

/**
 * table section: vec(table), table ::= reftype limits
 *   | 0x40 0x00 tabletype expr (a table with an initializer: refused).
 * Only funcref (0x70) and externref (0x6F) tables; limits flags 0x00 (min)
 * or 0x01 (min, max); 0x04/0x05 are 64-bit tables (refused), 0x02/0x03
 * shared ones (refused).
 */
function rewriteTables(body: Uint8Array, budget: number, maxPages: number, toolName: string): number[] {
  const r = new Reader(body);
  const tables: Array<Limits & { type: number }> = [];
  for (let count = r.u32(); count > 0; count--) {
    const type = r.byte();
    if (type === 0x40) throw refuse(toolName, 'defines a table with an initializer expression');
    if (type !== 0x70 && type !== 0x6f)
      throw refuse(toolName, `defines a table of reference type 0x${type.toString(16)}`, { reftype: type });
    const flags = r.byte();
    if (flags & 0x04) throw refuse(toolName, 'uses a 64-bit table');
    if (flags > 0x01) throw refuse(toolName, `defines a table with limits flags 0x${flags.toString(16)}`);
    const min = r.u32();
    const max = flags & 0x01 ? r.u32() : undefined;
    if (max !== undefined && max < min) throw new Malformed('a table has a maximum below its minimum');
    tables.push({ type, min, max });
  }
  if (r.pos !== body.length) throw new Malformed('the table section has bytes after its last table');
  const totalMin = tables.reduce((sum, t) => sum + t.min, 0);
  if (totalMin > budget) {
    throw new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${toolName} defines tables of ${totalMin} entries at start; a module may have ${budget} with its spec's ${Math.floor((maxPages * WASM_PAGE_BYTES) / 2 ** 20)} MB of memory (resources.memory_mb).`,
      { resource: 'memory', table_entries: totalMin, max_table_entries: budget },
    );
  }
  const maxima = shareBudget(tables, budget);
  const out = writeU32(tables.length);
  tables.forEach((t, i) => {
    out.push(t.type, 0x01, ...writeU32(t.min), ...writeU32(maxima[i]!));
  });
  return out;
}

/**
 * A maximum for each of `limits` so that the maxima add up to at most
 * `budget` (the minimums already fit). The room above the minimums is shared
 * out evenly, and what a limit does not want (its declared maximum is
 * lower) goes to the others: a fixed-size table beside a growable one
 * leaves the growable one the whole budget.
 */
function shareBudget(limits: readonly Limits[], budget: number): number[] {
  let room = budget - limits.reduce((sum, l) => sum + l.min, 0);
  const wants = limits.map((l) => (l.max === undefined ? Infinity : Math.max(0, l.max - l.min)));
  const maxima = limits.map((l) => l.min);
  const order = limits.map((_, i) => i).sort((a, b) => wants[a]! - wants[b]!);
  order.forEach((i, k) => {
    const give = Math.min(wants[i]!, Math.floor(room / (order.length - k)));
    maxima[i]! += give;
    room -= give;
  });
  return maxima;
}

/** A cursor over a section body that refuses to read past it. */
class Reader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.bytes.length) throw new Malformed('unexpected end of section');
    return this.bytes[this.pos++]!;
  }

  u32(): number {
    const [value, length] = readU32(this.bytes, this.pos);
    this.pos += length;
    return value;
  }

  skipS33(): void {
    for (let i = 0; i < 5; i++) if ((this.byte() & 0x80) === 0) return;
    throw new Malformed('a heap type longer than 5 bytes');
  }
}

/** A LEB128 u32 at `at`: its value and its length in bytes. */
export function readU32(bytes: Uint8Array, at: number): [value: number, length: number] {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    const byte = bytes[at + i];
    if (byte === undefined) throw new Malformed('unexpected end of module');
    value += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) {
      if (value > 0xffff_ffff) throw new Malformed('u32 out of range');
      return [value, i + 1];
    }
  }
  throw new Malformed('a u32 longer than 5 bytes');
}

/** The LEB128 encoding of a u32. */
export function writeU32(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

/** `parts` copied, in order, into one new array (each module rewrite ends with one). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
