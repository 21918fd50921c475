/**
 * Making a failed `memory.grow` visible to the host.
 *
 * A tool that asks for more memory than its cap allows gets -1 from
 * `memory.grow`, then a NULL from malloc, then exits or traps however its
 * language does: the host sees a failure, not why. Whether it ran out of
 * memory decides its error code (E_RESOURCE_EXHAUSTED, which a fallback
 * policy answers with more memory, or E_UNEXPECTED_EXIT), and where its
 * memory ended is no proof either way: under a small cap a failed request
 * of 1 MiB leaves the memory far from the cap, and a tool may fail for
 * another reason after growing near it.
 *
 * So each `memory.grow` in a module's code is rewritten into a call to a
 * function added at the end of the module: it grows the same memory by the
 * same amount, returns the same result, and sets an exported global
 * (GROW_FAILED_EXPORT) to 1 when the result is -1. Indices of what exists
 * do not move: the function, its type and the global are appended to their
 * index spaces. The function bodies that may hold one (with one memory:
 * those with the bytes of `memory.grow 0`) are decoded instruction by
 * instruction (the core spec's binary format, with the SIMD, atomics, bulk
 * memory, reference types, tail call and exception handling proposals); a
 * module with an instruction this decoder does not know there, or anything
 * it cannot read, is left as it is, and
 * the host falls back on where the memory ended (memory-watch.ts). Only
 * custom sections that name code offsets (DWARF) go stale, as they do
 * under any rewrite.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { concatBytes, readU32, writeU32 } from './limits.js';

/** The global a rewritten module exports: 1 once a `memory.grow` of its returned -1. */
export const GROW_FAILED_EXPORT = 'corral:memory-grow-failed';

const SECTION_TYPE = 1;
const SECTION_IMPORT = 2;
const SECTION_FUNCTION = 3;
const SECTION_MEMORY = 5;
const SECTION_GLOBAL = 6;
const SECTION_EXPORT = 7;
const SECTION_CODE = 10;
/** Where each known section stands (the core spec's order; tags, 13, after memories, data counts, 12, before code). */
const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

/** V8's limits on what a module may have (kV8MaxWasm*), which the additions must stay within. */
const MAX_EXPORTS = 100_000;
const MAX_FUNCTIONS = 1_000_000;
const MAX_TYPES = 1_000_000;
const MAX_GLOBALS = 1_000_000;
const MAX_FUNCTION_BYTES = 7_654_321;

/** Why a module is left as it is: nothing of it is rewritten, and no failure is thrown. */
class Unreadable extends Error {}

/** A module with its `memory.grow`s watched, and how many it had (0: the bytes are the module's own). */
export interface WatchedGrowth {
  bytes: Uint8Array<ArrayBuffer>;
  grows: number;
}

/**
 * `module` with every `memory.grow` watched (see the file comment), or null
 * when it cannot be rewritten (the host then cannot tell a failed grow).
 * GROW_FAILED_EXPORT is Corral's: a tool's module that exports it is
 * refused (E_REGISTRATION), but for one Corral `prepared` itself (a core
 * module of a prepared component), which it marks as watched already.
 */
export function watchGrowth(module: Uint8Array<ArrayBuffer>, { prepared = false, toolName = 'tool' } = {}): WatchedGrowth | null {
  try {
    return rewrite(module, prepared, toolName);
  } catch (err) {
    if (err instanceof Unreadable) return null;
    throw err;
  }
}

interface Section {
  id: number;
  /** From its id byte to its end. */
  whole: Uint8Array;
  body: Uint8Array;
}

/** A memory.grow in a function body: where its opcode is and where its memory index ends, and that index. */
interface GrowSite {
  at: number;
  end: number;
  memory: number;
}

function rewrite(module: Uint8Array<ArrayBuffer>, prepared: boolean, toolName: string): WatchedGrowth {
  const sections: Section[] = [];
  for (let pos = 8; pos < module.length; ) {
    const id = module[pos]!;
    const [size, sizeLen] = leb(module, pos + 1);
    const bodyStart = pos + 1 + sizeLen;
    if (bodyStart + size > module.length) throw new Unreadable();
    sections.push({ id, whole: module.subarray(pos, bodyStart + size), body: module.subarray(bodyStart, bodyStart + size) });
    pos = bodyStart + size;
  }
  const find = (id: number) => sections.find((s) => s.id === id);
  const exports = exportNames(find(SECTION_EXPORT)?.body);
  if (exports.has(GROW_FAILED_EXPORT)) {
    // Watched already, when Corral prepared it (prepareComponent); a tool's own would decide its error code, or crash the host reading it.
    if (prepared) return { bytes: module, grows: 0 };
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `${toolName} exports ${GROW_FAILED_EXPORT}, a name Corral reserves for its own use; rename that export.`,
      { exports: [GROW_FAILED_EXPORT] },
    );
  }
  // Without a memory, nothing to watch (an adapter's shim and fixup modules, which indirection.ts recognises by their shape).
  const imported = importedCounts(find(SECTION_IMPORT)?.body);
  const memoryCount = imported.memories + countOf(find(SECTION_MEMORY)?.body);
  if (memoryCount === 0) return { bytes: module, grows: 0 };

  // The function bodies that have memory.grows, where they are in the code section, and where those are.
  const code = find(SECTION_CODE);
  const changed: Array<{ start: number; end: number; sites: GrowSite[] }> = [];
  const r = new Reader(code?.body ?? new Uint8Array([0]));
  const bodies = r.u32();
  const bodiesStart = r.pos;
  for (let i = 0; i < bodies; i++) {
    const start = r.pos;
    const size = r.u32();
    if (size > r.end - r.pos) throw new Unreadable();
    // With one memory, a body without the bytes of `memory.grow 0` is not decoded: most are not.
    const sites =
      memoryCount > 1 || mayGrowMemory0(r.bytes.subarray(r.pos, r.pos + size)) ? growSites(r.bytes, r.pos, r.pos + size) : undefined;
    r.pos += size;
    if (sites) changed.push({ start, end: r.pos, sites });
  }
  if (r.pos !== r.end) throw new Unreadable();
  const memories = [...new Set(changed.flatMap((b) => b.sites.map((s) => s.memory)))];

  // The index spaces the additions go at the end of.
  const types = countOf(find(SECTION_TYPE)?.body);
  const functions = countOf(find(SECTION_FUNCTION)?.body);
  if (functions !== bodies) throw new Unreadable();
  const globals = countOf(find(SECTION_GLOBAL)?.body);
  const globalIndex = imported.globals + globals;
  // A module at an engine's limits must not be pushed past one by what is added (V8's, wasmparser's alike).
  if (exports.size + 1 > MAX_EXPORTS || imported.functions + functions + memories.length > MAX_FUNCTIONS) throw new Unreadable();
  if (types + 1 > MAX_TYPES || globalIndex + 1 > MAX_GLOBALS) throw new Unreadable();
  const growFunction = new Map(memories.map((memory, i) => [memory, imported.functions + functions + i]));

  // What is appended to each section, and how many entries: the global and its export always (a
  // module without memory.grow has it too, never set, so that the export alone says "watched").
  const added = new Map<number, { count: number; entries: number[] }>([
    // (global (mut i32) (i32.const 0))
    [SECTION_GLOBAL, { count: 1, entries: [0x7f, 0x01, 0x41, 0x00, 0x0b] }],
    [SECTION_EXPORT, { count: 1, entries: [...name(GROW_FAILED_EXPORT), 0x03, ...writeU32(globalIndex)] }],
  ]);
  /** The code section's body, in parts copied once into the module: unchanged bytes in runs, each changed body with its new size. */
  let newCode: Uint8Array[] | undefined;
  if (memories.length > 0) {
    // (func (param i32) (result i32)), one per memory grown
    added.set(SECTION_TYPE, { count: 1, entries: [0x60, 0x01, 0x7f, 0x01, 0x7f] });
    added.set(SECTION_FUNCTION, { count: memories.length, entries: memories.flatMap(() => writeU32(types)) });
    newCode = [Uint8Array.from(writeU32(bodies + memories.length))];
    let from = bodiesStart;
    for (const body of changed) {
      const rewritten = replaceGrows(r.bytes, body, growFunction);
      if (rewritten.length > MAX_FUNCTION_BYTES) throw new Unreadable();
      newCode.push(r.bytes.subarray(from, body.start), Uint8Array.from(writeU32(rewritten.length)), rewritten);
      from = body.end;
    }
    newCode.push(r.bytes.subarray(from));
    for (const memory of memories) {
      const fn = growFunctionBody(memory, globalIndex);
      newCode.push(Uint8Array.from([...writeU32(fn.length), ...fn]));
    }
  }

  const out: Uint8Array[] = [module.subarray(0, 8)];
  const emitted = new Set<number>();
  const emit = (id: number, body: Uint8Array) => out.push(Uint8Array.from([id, ...writeU32(body.length)]), body);
  /** Each addition the module has no section for, placed before the first known section after it (-1: at the end). */
  const emitMissingBefore = (id: number) => {
    const order = SECTION_ORDER.indexOf(id);
    for (const [missing, { count, entries }] of added) {
      if (emitted.has(missing) || find(missing) || (id !== -1 && SECTION_ORDER.indexOf(missing) >= order)) continue;
      emit(missing, Uint8Array.from([...writeU32(count), ...entries]));
      emitted.add(missing);
    }
  };
  for (const section of sections) {
    if (section.id !== 0) {
      if (!SECTION_ORDER.includes(section.id)) throw new Unreadable();
      emitMissingBefore(section.id);
    }
    const addition = added.get(section.id);
    if (section.id === SECTION_CODE && newCode) {
      // Not joined first: a fresh buffer's first write is page faults, ~25 ms for 8 MB on this VM.
      out.push(Uint8Array.from([SECTION_CODE, ...writeU32(newCode.reduce((n, part) => n + part.length, 0))]), ...newCode);
    } else if (addition) {
      const sr = new Reader(section.body);
      const count = sr.u32();
      emit(
        section.id,
        concatBytes([Uint8Array.from(writeU32(count + addition.count)), section.body.subarray(sr.pos), Uint8Array.from(addition.entries)]),
      );
    } else {
      out.push(section.whole);
    }
    emitted.add(section.id);
  }
  emitMissingBefore(-1);
  return { bytes: concatBytes(out), grows: changed.reduce((n, b) => n + b.sites.length, 0) };
}

/** A function (param i32) (result i32) that grows `memory` by its argument and marks the global when that fails. */
function growFunctionBody(memory: number, global: number): number[] {
  return [
    0x00, // no locals
    0x20,
    0x00, // local.get 0
    0x40,
    ...writeU32(memory), // memory.grow
    0x22,
    0x00, // local.tee 0
    0x41,
    0x7f, // i32.const -1
    0x46, // i32.eq
    0x04,
    0x40, // if
    0x41,
    0x01, // i32.const 1
    0x24,
    ...writeU32(global), // global.set
    0x0b, // end
    0x20,
    0x00, // local.get 0
    0x0b, // end
  ];
}

/**
 * Whether a function body may hold a `memory.grow` of memory 0: its opcode
 * 0x40 followed by 0x00, or by 0x80 (a longer encoding of 0). A native
 * search, where decoding runs the interpreter over every instruction: a
 * 48 KB module's code took ~10 ms to decode in a fresh worker, and one body
 * of its 65 has those bytes.
 */
function mayGrowMemory0(body: Uint8Array): boolean {
  for (let at = body.indexOf(0x40); at !== -1; at = body.indexOf(0x40, at + 1)) {
    const next = body[at + 1];
    if (next === 0x00 || next === 0x80) return true;
  }
  return false;
}

/** A function body (its locals and code, without its size) with each memory.grow made a call to `growFunction` of its memory. */
function replaceGrows(
  code: Uint8Array,
  body: { start: number; end: number; sites: GrowSite[] },
  growFunction: Map<number, number>,
): Uint8Array {
  const parts: Uint8Array[] = [];
  let from = body.start + readU32(code, body.start)[1];
  for (const site of body.sites) {
    parts.push(code.subarray(from, site.at), Uint8Array.from([0x10, ...writeU32(growFunction.get(site.memory)!)]));
    from = site.end;
  }
  parts.push(code.subarray(from, body.end));
  return concatBytes(parts);
}

/**
 * What follows each one-byte opcode, for the decoder's hot loop: NONE, one
 * LEB128 number (LEB), a memarg (MEMARG: alignment, maybe a memory index,
 * offset), or something the loop hands to `skipOther`. UNKNOWN: an opcode
 * this decoder does not know (the GC prefix 0xFB among them).
 */
const NONE = 0;
const LEB = 1;
const MEMARG = 2;
const OTHER = 3;
const UNKNOWN = 4;
const IMMEDIATES = (() => {
  const kinds = new Uint8Array(256).fill(UNKNOWN);
  const set = (kind: number, ...ops: number[]) => {
    for (const op of ops) kinds[op] = kind;
  };
  // unreachable, nop, else, throw_ref, end, return, catch_all, drop, select, ref.is_null
  set(NONE, 0x00, 0x01, 0x05, 0x0a, 0x0b, 0x0f, 0x19, 0x1a, 0x1b, 0xd1);
  for (let op = 0x45; op <= 0xc4; op++) kinds[op] = NONE; // numeric, sign extension
  // catch, throw, rethrow, br, br_if, call, return_call, call_ref, return_call_ref, delegate,
  // local.*, global.*, table.get/set, memory.size, i32/i64.const (signed, skipped alike), ref.func
  set(LEB, 0x07, 0x08, 0x09, 0x0c, 0x0d, 0x10, 0x12, 0x14, 0x15, 0x18, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x3f, 0x41, 0x42, 0xd2);
  for (let op = 0x28; op <= 0x3e; op++) kinds[op] = MEMARG; // loads and stores
  // block, loop, if, try, br_table, call_indirect, return_call_indirect, select t*, f32/f64.const,
  // memory.grow, ref.null, and the 0xFC, 0xFD and 0xFE prefixes
  set(OTHER, 0x02, 0x03, 0x04, 0x06, 0x0e, 0x11, 0x13, 0x1c, 0x43, 0x44, 0x40, 0xd0, 0xfc, 0xfd, 0xfe);
  return kinds;
})();

/**
 * Decode the function body at `start`..`end` of `code` (its locals and
 * instructions) and return where its memory.grows are, or undefined when
 * it has none. The hot loop steps over LEB128 numbers without reading them
 * (a byte past the end reads as undefined, which ends a number; the end is
 * checked once, after the loop).
 */
function growSites(code: Uint8Array, start: number, end: number): GrowSite[] | undefined {
  const r = new Reader(code, start, end);
  for (let groups = r.u32(); groups > 0; groups--) {
    r.u32();
    valType(r);
  }
  let sites: GrowSite[] | undefined;
  let pos = r.pos;
  while (pos < end) {
    const op = code[pos]!;
    const kind = IMMEDIATES[op]!;
    pos++;
    if (kind === NONE) continue;
    if (kind === LEB) {
      while (code[pos++]! & 0x80);
      continue;
    }
    if (kind === MEMARG) {
      const align = code[pos]!;
      while (code[pos++]! & 0x80);
      if (align & 0x40) while (code[pos++]! & 0x80);
      while (code[pos++]! & 0x80);
      continue;
    }
    if (kind === UNKNOWN) throw new Unreadable();
    r.pos = pos;
    if (op === 0x40) {
      const memory = r.u32();
      // A longer encoding of the index is refused by engines without multi-memory; made a call, it would pass.
      if (r.pos !== pos + 1) throw new Unreadable();
      (sites ??= []).push({ at: pos - 1, end: r.pos, memory });
    } else {
      skipOther(r, op);
    }
    pos = r.pos;
  }
  if (pos !== end || code[end - 1] !== 0x0b) throw new Unreadable();
  return sites;
}

/** Step over the immediates of an OTHER instruction `op` (already read). */
function skipOther(r: Reader, op: number): void {
  switch (op) {
    case 0x02: // block
    case 0x03: // loop
    case 0x04: // if
    case 0x06: // try
      return blockType(r);
    case 0x0e: // br_table
      for (let n = r.u32() + 1; n > 0; n--) r.u32();
      return;
    case 0x11: // call_indirect
    case 0x13: // return_call_indirect
      r.u32();
      r.u32();
      return;
    case 0x1c: // select t*
      for (let n = r.u32(); n > 0; n--) valType(r);
      return;
    case 0x43: // f32.const
      r.take(4);
      return;
    case 0x44: // f64.const
      r.take(8);
      return;
    case 0xd0: // ref.null
      return heapType(r);
    case 0xfc:
      return miscImmediates(r, r.u32());
    case 0xfd:
      return simdImmediates(r, r.u32());
    case 0xfe:
      return atomicImmediates(r, r.u32());
  }
  throw new Unreadable();
}

/** 0xFC: saturating truncations, bulk memory and table instructions. */
function miscImmediates(r: Reader, sub: number): void {
  if (sub <= 7) return;
  const indices = MISC_INDICES[sub];
  if (indices === undefined) throw new Unreadable();
  for (let i = 0; i < indices; i++) r.u32();
}

/** The indices after each bulk memory and table instruction (memory.init: data and memory, ...). */
const MISC_INDICES: Record<number, number> = { 8: 2, 9: 1, 10: 2, 11: 1, 12: 2, 13: 1, 14: 2, 15: 1, 16: 1, 17: 1 };

/** 0xFD: SIMD (and relaxed SIMD, 0x100 and up, which have none). */
function simdImmediates(r: Reader, sub: number): void {
  if (sub <= 0x0b || sub === 0x5c || sub === 0x5d) return memArg(r);
  if (sub === 0x0c || sub === 0x0d) {
    r.take(16); // v128.const, i8x16.shuffle
    return;
  }
  if (sub >= 0x15 && sub <= 0x22) {
    r.byte(); // lane
    return;
  }
  if (sub >= 0x54 && sub <= 0x5b) {
    memArg(r);
    r.byte();
    return;
  }
  if (sub > 0x113) throw new Unreadable();
}

/** 0xFE: atomics. */
function atomicImmediates(r: Reader, sub: number): void {
  if (sub === 0x03) {
    r.byte(); // atomic.fence
    return;
  }
  if (sub <= 0x02 || (sub >= 0x10 && sub <= 0x4e)) return memArg(r);
  throw new Unreadable();
}

/** memarg: alignment (bit 6: a memory index follows), then offset. */
function memArg(r: Reader): void {
  const align = r.u32();
  if (align & 0x40) r.u32();
  r.leb();
}

/** blocktype: empty (0x40), a value type, or a type index (s33). */
function blockType(r: Reader): void {
  const b = r.peek();
  if (b === 0x40) {
    r.byte();
    return;
  }
  if ((b >= 0x7b && b <= 0x7f) || (b >= 0x69 && b <= 0x74) || b === 0x63 || b === 0x64) return valType(r);
  r.leb();
}

function valType(r: Reader): void {
  const b = r.byte();
  if ((b >= 0x7b && b <= 0x7f) || (b >= 0x69 && b <= 0x74)) return;
  if (b === 0x63 || b === 0x64) return heapType(r);
  throw new Unreadable();
}

function heapType(r: Reader): void {
  r.leb();
}

/** How many functions, globals and memories a module imports (they come first in their index spaces). */
function importedCounts(body: Uint8Array | undefined): { functions: number; globals: number; memories: number } {
  const counts = { functions: 0, globals: 0, memories: 0 };
  if (!body) return counts;
  const r = new Reader(body);
  for (let n = r.u32(); n > 0; n--) {
    r.take(r.u32());
    r.take(r.u32());
    const kind = r.byte();
    if (kind === 0x00) {
      r.u32();
      counts.functions++;
    } else if (kind === 0x01) {
      valType(r);
      limits(r);
    } else if (kind === 0x02) {
      limits(r);
      counts.memories++;
    } else if (kind === 0x03) {
      valType(r);
      r.byte();
      counts.globals++;
    } else if (kind === 0x04) {
      r.byte();
      r.u32();
    } else {
      throw new Unreadable();
    }
  }
  if (r.pos !== body.length) throw new Unreadable();
  return counts;
}

/** limits: flags (bit 0: a maximum; bit 3: a page size), minimum, maximum. */
function limits(r: Reader): void {
  const flags = r.byte();
  if (flags > 0x0f) throw new Unreadable();
  r.leb();
  if (flags & 0x01) r.leb();
  if (flags & 0x08) r.u32();
}

function exportNames(body: Uint8Array | undefined): Set<string> {
  const names = new Set<string>();
  if (!body) return names;
  const r = new Reader(body);
  // As the engine reads names: a leading U+FEFF is part of one, and bytes that are not UTF-8 make the module invalid.
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });
  for (let n = r.u32(); n > 0; n--) {
    let name: string;
    try {
      name = decoder.decode(r.take(r.u32()));
    } catch {
      throw new Unreadable();
    }
    names.add(name);
    r.byte();
    r.u32();
  }
  return names;
}

function countOf(body: Uint8Array | undefined): number {
  return body ? new Reader(body).u32() : 0;
}

function name(text: string): number[] {
  const bytes = new TextEncoder().encode(text);
  return [...writeU32(bytes.length), ...bytes];
}

/** A LEB128 u32, as limits.ts reads it, with what it throws made Unreadable. */
function leb(bytes: Uint8Array, at: number): [number, number] {
  try {
    return readU32(bytes, at);
  } catch {
    throw new Unreadable();
  }
}

/** A cursor over bytes that refuses to read past them. */
class Reader {
  pos: number;
  readonly end: number;
  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    end = bytes.length,
  ) {
    this.pos = start;
    this.end = end;
  }

  peek(): number {
    if (this.pos >= this.end) throw new Unreadable();
    return this.bytes[this.pos]!;
  }

  byte(): number {
    const b = this.peek();
    this.pos++;
    return b;
  }

  u32(): number {
    const [value, length] = leb(this.bytes, this.pos);
    this.pos += length;
    if (this.pos > this.end) throw new Unreadable();
    return value;
  }

  /** Step over a LEB128 number of any width up to 64 bits, signed or not. */
  leb(): void {
    for (let i = 0; i < 10; i++) if ((this.byte() & 0x80) === 0) return;
    throw new Unreadable();
  }

  take(length: number): Uint8Array {
    if (length > this.end - this.pos) throw new Unreadable();
    const out = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }
}
