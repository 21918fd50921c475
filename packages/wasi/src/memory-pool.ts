/**
 * Linear memories reused from one call of a tool to the next (issue 15).
 *
 * A fresh instance of a module that defines its memory costs about 0.2 ms on
 * these machines, most of it the engine reserving and releasing the memory's
 * guarded address range (mmap, munmap, TLB shootdowns), not the module. So a
 * module that defines exactly one small memory is rewritten to import it
 * instead (`importOwnMemory`, applied after the caps of limits.ts), and each
 * call is handed a memory from its module's `MemoryPool`: a new one, or the
 * previous call's, zeroed.
 *
 * What a call sees stays independent of earlier calls:
 *   - every call starts with the same number of pages (`MemoryPool.pages`:
 *     the declared minimum, raised to POOLED_PAGES when the cap allows), new
 *     memory or reused; a memory that grew past that size is not reused, so
 *     its size tells the next call nothing;
 *   - a reused memory is zeroed before any guest code sees it, and active data
 *     segments are written again by instantiation, as for a new memory;
 *   - the maximum is the module's capped maximum, unchanged.
 * Starting with more than the declared minimum is what the core spec's
 * import matching allows (an imported memory may be larger than the
 * minimum), and wasi-libc's allocator takes the extra pages as heap.
 */
import { WASM_PAGE_BYTES, readU32, writeU32 } from './limits.js';

/** The module and field name a rewritten module imports its memory by. */
export const POOL_IMPORT_MODULE = 'corral:memory-pool';
const POOL_IMPORT_NAME = 'memory';

/**
 * Pages a pooled memory starts with (when the module's minimum is lower and
 * its cap allows): 512 KiB, room for what a component's adapter and a
 * small call allocate at start, so such calls never grow the memory and
 * their memory is reused. Zeroing it takes ~20 µs, after the call's result is sent.
 */
export const POOLED_PAGES = 8;

/**
 * Calls one memory serves before it is dropped for a new one. A new memory
 * is dear where page faults are (~10 µs per 4 KiB page first touched on
 * this project's VMs): zeroing it after its first call faults in every page
 * the guest left untouched, 1.3 ms for 512 KiB, where zeroing it again
 * takes 5 µs. So it is dropped rarely; it is dropped at all because V8
 * keeps (weakly) every instance a memory was given, and its young-generation
 * collections treat that as a strong reference, so the instances of a
 * long-lived memory wait for a full collection. Measured through the pool
 * (one worker, 100,000 echo calls from 4 callers; RSS every 10,000): 16
 * reuses ran 2,826 calls/s with RSS 145–156 MB, 256 ran 3,643 calls/s with
 * 155–165 MB, never dropping 3,463 calls/s with 158–172 MB; none grew
 * without bound (before the glue stopped being a module per compile, a
 * memory never dropped did).
 */
export const MAX_REUSES = 256;

/**
 * The largest declared minimum, in pages, a pooled memory may have: 2 MiB,
 * above a Rust tool's usual 17–19 pages. Zeroing a reused memory touches
 * every page, where a fresh memory's pages cost nothing until the guest
 * writes them.
 */
export const MAX_POOLED_PAGES = 32;

/**
 * Spare memories one worker keeps, across all its pools (the least recently
 * released dropped first): at most 64 × 2 MiB resident, and as many address
 * ranges reserved. A pool lives as long as its compiled code (code-cache.ts
 * bounds code bytes, not memories), so without this bound every small tool,
 * and every memory cap a call asked for, kept a spare: 512 KiB resident
 * apiece, and at ~13,000 memories V8 refuses any new one in the process.
 */
export const MAX_SPARES = 64;

const SECTION_IMPORT = 2;
const SECTION_MEMORY = 5;
const SECTION_DATA = 11;

/** A module rewritten to import the memory it defined, and that memory's limits. */
export interface PooledModule {
  bytes: Uint8Array<ArrayBuffer>;
  minPages: number;
  maxPages: number;
}

/**
 * Rewrite a capped module (every memory has a maximum) that defines exactly
 * one unshared memory (of at most MAX_POOLED_PAGES at start) and imports
 * none, so that it imports that memory from POOL_IMPORT_MODULE. Any other
 * module, or one that already imports from that name, is returned as null
 * and runs as it is. The memory keeps
 * index 0, so exports, data segments and code that name it are unchanged.
 */
export function importOwnMemory(module: Uint8Array): PooledModule | null {
  try {
    return rewrite(module);
  } catch {
    // Bytes this parser cannot read (a data or import section capModule does not
    // look into): left as they are, for the engine to refuse with its own reason
    // (E_REGISTRATION), not thrown as a failure of Corral's.
    return null;
  }
}

/**
 * Where each known section may stand (the core spec's order; tags, 13, come
 * after memories, data counts, 12, before code). An invalid module must stay
 * invalid: dropping a misplaced or second memory section made modules the
 * engine refuses valid.
 */
const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

function rewrite(module: Uint8Array): PooledModule | null {
  const sections: Array<{ id: number; start: number; end: number; body: Uint8Array }> = [];
  let pos = 8;
  let last = -1;
  while (pos < module.length) {
    const id = module[pos]!;
    const [size, sizeLen] = readU32(module, pos + 1);
    const bodyStart = pos + 1 + sizeLen;
    if (id !== 0) {
      const order = SECTION_ORDER.indexOf(id);
      if (order <= last) return null;
      last = order;
    }
    sections.push({ id, start: pos, end: bodyStart + size, body: module.subarray(bodyStart, bodyStart + size) });
    pos = bodyStart + size;
  }
  const memory = sections.find((s) => s.id === SECTION_MEMORY);
  if (!memory) return null;
  let at = 0;
  const [memories, memoriesLen] = readU32(memory.body, at);
  at += memoriesLen;
  const flags = memory.body[at++];
  // Exactly one memory with a maximum (capModule gave it one), not shared.
  if (memories !== 1 || flags !== 0x01) return null;
  const [minPages, minLen] = readU32(memory.body, at);
  at += minLen;
  const [maxPages, maxLen] = readU32(memory.body, at);
  if (at + maxLen !== memory.body.length) return null;
  // A larger memory keeps its own: a tool that declared 2 GiB and wrote nothing
  // left 2 GiB resident in its worker once zeroed, and its next call spent seconds zeroing.
  if (minPages > MAX_POOLED_PAGES) return null;
  // A data segment past the declared minimum must still fail instantiation, as with the module's own memory.
  const data = sections.find((s) => s.id === SECTION_DATA);
  if (data && !dataFits(data.body, minPages * WASM_PAGE_BYTES)) return null;

  const imports = sections.find((s) => s.id === SECTION_IMPORT);
  let importCount = 0;
  let oldEntries: Uint8Array = new Uint8Array(0);
  if (imports) {
    const parsed = importEntries(imports.body);
    if (parsed === null) return null;
    importCount = parsed.count;
    oldEntries = imports.body.subarray(parsed.entriesStart);
  }
  const encoder = new TextEncoder();
  const name = (s: string) => {
    const bytes = encoder.encode(s);
    return [...writeU32(bytes.length), ...bytes];
  };
  const entry = [...name(POOL_IMPORT_MODULE), ...name(POOL_IMPORT_NAME), 0x02, 0x01, ...writeU32(minPages), ...writeU32(maxPages)];
  const count = writeU32(importCount + 1);
  const importSection = concat([
    Uint8Array.from([SECTION_IMPORT, ...writeU32(count.length + oldEntries.length + entry.length), ...count]),
    oldEntries,
    Uint8Array.from(entry),
  ]);

  // The import section goes where the old one was, or before the first known section after it.
  const out: Uint8Array[] = [module.subarray(0, 8)];
  let placed = false;
  for (const s of sections) {
    if (s.id === SECTION_MEMORY) continue;
    if (s.id === SECTION_IMPORT) {
      out.push(importSection);
      placed = true;
      continue;
    }
    if (!placed && s.id !== 0 && s.id !== 1) {
      out.push(importSection);
      placed = true;
    }
    out.push(module.subarray(s.start, s.end));
  }
  if (!placed) out.push(importSection);
  const bytes = concat(out);
  return { bytes, minPages, maxPages };
}

/**
 * Whether every active data segment has a constant offset (`i32.const N`)
 * and ends within `bytes`. Anything else (an offset from a global, an
 * extended constant expression) is answered no: the module keeps its own memory.
 */
function dataFits(body: Uint8Array, bytes: number): boolean {
  let at = 0;
  const [count, countLen] = readU32(body, at);
  at += countLen;
  for (let i = 0; i < count; i++) {
    const [flags, flagsLen] = readU32(body, at);
    at += flagsLen;
    let offset = 0;
    if (flags === 0 || flags === 2) {
      if (flags === 2) {
        const [memoryIndex, indexLen] = readU32(body, at);
        if (memoryIndex !== 0) return false;
        at += indexLen;
      }
      if (body[at++] !== 0x41) return false; // i32.const
      const [value, valueLen] = readS32(body, at);
      at += valueLen;
      if (body[at++] !== 0x0b) return false; // end
      offset = value >>> 0;
    } else if (flags !== 1) {
      return false;
    }
    const [size, sizeLen] = readU32(body, at);
    at += sizeLen + size;
    if (flags !== 1 && offset + size > bytes) return false;
  }
  return at === body.length;
}

/** A signed LEB128 i32 at `at`: its value and its length in bytes. */
function readS32(bytes: Uint8Array, at: number): [value: number, length: number] {
  let value = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    const byte = bytes[at + i];
    if (byte === undefined) throw new RangeError('unexpected end of module');
    value |= (byte & 0x7f) << shift;
    shift += 7;
    if ((byte & 0x80) === 0) {
      if (shift < 32 && byte & 0x40) value |= -1 << shift;
      return [value, i + 1];
    }
  }
  throw new RangeError('an s32 longer than 5 bytes');
}

/**
 * The import section's entry count and where its entries start, or null when
 * the module imports a memory already or imports from POOL_IMPORT_MODULE.
 */
function importEntries(body: Uint8Array): { count: number; entriesStart: number } | null {
  const decoder = new TextDecoder();
  let at = 0;
  const [count, countLen] = readU32(body, at);
  at += countLen;
  const entriesStart = at;
  const name = () => {
    const [len, lenLen] = readU32(body, at);
    at += lenLen;
    const text = decoder.decode(body.subarray(at, at + len));
    at += len;
    return text;
  };
  for (let i = 0; i < count; i++) {
    if (name() === POOL_IMPORT_MODULE) return null;
    name();
    const kind = body[at++];
    switch (kind) {
      case 0x00: // function: type index
        at += readU32(body, at)[1];
        break;
      case 0x01: {
        // table: reftype, limits; a typed reference (ref null ht / ref ht) is
        // longer than a byte, and misread it could hide a memory import after it
        if (body[at] === 0x63 || body[at] === 0x64) return null;
        at++;
        const tableFlags = body[at++]!;
        at += readU32(body, at)[1];
        if (tableFlags & 0x01) at += readU32(body, at)[1];
        break;
      }
      case 0x02: // a memory is imported: leave the module alone
        return null;
      case 0x03: // global: valtype (a single byte for the types capModule lets through, or a ref type), mutability
        if (body[at] === 0x63 || body[at] === 0x64) return null;
        at += 2;
        break;
      default: // tags and anything newer: leave the module alone
        return null;
    }
  }
  return at === body.length ? { count, entriesStart } : null;
}

/**
 * The pooled memories one call has taken: `instantiate` hands a pooled
 * module its memory, `release` gives them all back once the call is over.
 */
export class MemoryLeases {
  readonly #taken: Array<[MemoryPool, WebAssembly.Memory]> = [];

  /** The imports for `module`, with its pooled memory added when it has a pool. */
  imports(pool: MemoryPool | undefined, imports: WebAssembly.Imports | undefined): WebAssembly.Imports {
    if (!pool) return imports ?? {};
    const memory = pool.acquire();
    this.#taken.push([pool, memory]);
    return { ...imports, [POOL_IMPORT_MODULE]: { [POOL_IMPORT_NAME]: memory } };
  }

  release(): void {
    for (const [pool, memory] of this.#taken.splice(0)) pool.release(memory);
  }
}

/** The pools of this worker that hold a spare, the least recently released first (a Set keeps insertion order). */
const withSpare = new Set<MemoryPool>();

/**
 * Zero every spare memory still holding its last call's data: a worker does
 * this once a call's reply is posted (worker-api.ts), so the next call of any
 * pooled module finds its memory clean. The timer `release` sets does the
 * same where no one calls this, but a worker answering back-to-back calls
 * reaches its timers late, and the next call then zeroed its memory itself.
 */
export function cleanSpareMemories(): void {
  for (const pool of withSpare) pool.cleanSpare();
}

/**
 * The memory of one pooled module, kept between its calls in one worker.
 * One call at a time uses it (a worker runs one call at a time, and a
 * module is instantiated once per call): `acquire` before instantiating,
 * `release` once the call is over.
 */
export class MemoryPool {
  /** Pages every call's memory starts with. */
  readonly pages: number;
  readonly maxPages: number;
  #spare: WebAssembly.Memory | undefined;
  /** The spare still holds the last call's data. */
  #dirty = false;
  /** Calls the spare has served. */
  #uses = 0;
  /** Its code was dropped from the worker's code cache: nothing is kept for a next call. */
  #disposed = false;

  constructor(module: PooledModule) {
    this.maxPages = module.maxPages;
    this.pages = Math.max(module.minPages, Math.min(POOLED_PAGES, module.maxPages));
  }

  acquire(): WebAssembly.Memory {
    const spare = this.#spare;
    this.#spare = undefined;
    withSpare.delete(this);
    if (!spare) {
      this.#uses = 1;
      return new WebAssembly.Memory({ initial: this.pages, maximum: this.maxPages });
    }
    this.#uses++;
    if (this.#dirty) this.#clean(spare);
    return spare;
  }

  /**
   * Keep the memory for the next call if it did not grow and has not served
   * MAX_REUSES calls; it is zeroed after the current task, or at the next acquire.
   */
  release(memory: WebAssembly.Memory): void {
    if (this.#disposed || memory.buffer.byteLength !== this.pages * WASM_PAGE_BYTES || this.#uses >= MAX_REUSES) return;
    this.#spare = memory;
    this.#dirty = true;
    withSpare.delete(this);
    withSpare.add(this);
    for (const pool of withSpare) {
      if (withSpare.size <= MAX_SPARES) break;
      pool.#spare = undefined;
      withSpare.delete(pool);
    }
    setTimeout(() => {
      if (this.#spare === memory && this.#dirty) this.#clean(memory);
    }, 0);
  }

  /** Drop the spare and keep none from now on (the module's code was evicted; a call still running gives its memory back to no one). */
  dispose(): void {
    this.#disposed = true;
    this.#spare = undefined;
    withSpare.delete(this);
  }

  /** Zero the spare now, if it holds the last call's data. */
  cleanSpare(): void {
    if (this.#spare && this.#dirty) this.#clean(this.#spare);
  }

  #clean(memory: WebAssembly.Memory): void {
    new Uint8Array(memory.buffer).fill(0);
    this.#dirty = false;
  }
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
