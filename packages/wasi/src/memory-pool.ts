/**
 * Linear memories reused from one call of a tool to the next (issue 15).
 *
 * A fresh instance of a module that defines its memory costs about 0.2 ms on
 * these machines, most of it the engine reserving and releasing the memory's
 * guarded address range (mmap, munmap, TLB shootdowns), not the module. So a
 * module that defines exactly one small memory is rewritten to import it
 * instead (`importOwnMemory`, applied after the caps of limits.ts), and each
 * call is handed a memory from its module's `MemoryPool`: a new one, or an
 * earlier call's, zeroed.
 *
 * What a call sees stays independent of earlier calls:
 *   - every call starts with a number of pages set by its own input's size
 *     (`MemoryPool.pagesFor`: the declared minimum, raised to POOLED_PAGES
 *     when the cap allows, and to room for a large input), new memory or
 *     reused; a memory that grew past its start is not reused, so its size
 *     tells the next call nothing;
 *   - a reused memory is zeroed before any guest code sees it, and active data
 *     segments are written again by instantiation, as for a new memory;
 *   - the maximum is the module's capped maximum, unchanged.
 * Starting with more than the declared minimum is what the core spec's
 * import matching allows (an imported memory may be larger than the
 * minimum), and wasi-libc's allocator takes the extra pages as heap.
 */
import { WASM_PAGE_BYTES, concatBytes, readU32, writeU32 } from './limits.js';
import type { MemoryWatch } from './memory-watch.js';

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
 * released dropped first): at most MAX_SPARES_BYTES resident, and as many
 * address ranges reserved. A pool lives as long as its compiled code (code-cache.ts
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
  const importSection = concatBytes([
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
  const bytes = concatBytes(out);
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
  readonly #inputBytes: number;
  readonly #watch: MemoryWatch | undefined;
  readonly #taken: Array<[MemoryPool, WebAssembly.Memory]> = [];

  /**
   * `inputBytes`: the size of the call's input, which sets where its memories start (MemoryPool.pagesFor).
   * `watch`: where the call's memories are watched; each leased one is added, whether its module exports it or not.
   */
  constructor(inputBytes = 0, watch?: MemoryWatch) {
    this.#inputBytes = inputBytes;
    this.#watch = watch;
  }

  /** The imports for `module`, with its pooled memory added when it has a pool. */
  imports(pool: MemoryPool | undefined, imports: WebAssembly.Imports | undefined): WebAssembly.Imports {
    if (!pool) return imports ?? {};
    const startPages = pool.pagesFor(this.#inputBytes);
    const memory = pool.acquire(startPages);
    this.#watch?.watch(memory, { startPages, maxPages: pool.maxPages });
    this.#taken.push([pool, memory]);
    return { ...imports, [POOL_IMPORT_MODULE]: { [POOL_IMPORT_NAME]: memory } };
  }

  release(): void {
    for (const [pool, memory] of this.#taken.splice(0)) pool.release(memory);
  }
}

/**
 * Room a call's memory starts with for its input: reading it whole into a
 * buffer that doubles as it fills, then parsing it, took a Rust tool 4.05×
 * its input (diff-summary on 1 MB) past what it uses anyway (the first 256 KiB).
 */
const INPUT_ROOM = 4;
const ROOM_BEYOND_INPUT = 256 * 1024;

/**
 * The largest memory kept as a spare (16 MiB), and all of a worker's spares
 * together (64 MiB): a spare stays resident, where a new memory's pages cost
 * nothing until the guest writes them.
 */
export const MAX_SPARE_BYTES = 16 * 2 ** 20;
export const MAX_SPARES_BYTES = 64 * 2 ** 20;

/** A memory kept for the next call of its pool that starts with `pages`. */
interface Spare {
  /** Its pool's spares, by the pages they start with. */
  home: Map<number, Spare>;
  memory: WebAssembly.Memory;
  pages: number;
  /** It still holds the last call's data. */
  dirty: boolean;
}

/** This worker's spares, the least recently released first (a Set keeps insertion order), and their bytes. */
const spares = new Set<Spare>();
let sparesBytes = 0;

/** Whether this thread's host zeroes spares after each call itself (cleanSparesAfterEachCall); if not, a timer `release` sets does. */
let cleanedByHost = false;

/**
 * Zero every spare memory still holding its last call's data: a worker does
 * this once a call's reply is posted (worker-api.ts), so the next call of any
 * pooled module finds its memory clean. The timer `release` sets does the
 * same where no one calls this, but a worker answering back-to-back calls
 * reaches its timers late, and the next call then zeroed its memory itself.
 */
export function cleanSpareMemories(): void {
  for (const spare of spares) if (spare.dirty) clean(spare);
}

/**
 * Tell the pools of this thread that its host calls cleanSpareMemories after
 * every call (a sandbox worker does), so `release` sets no timer: a timer a
 * call cost a worker ~3% of its time. A spare still dirty when taken is
 * zeroed then, whoever was to do it.
 */
export function cleanSparesAfterEachCall(): void {
  cleanedByHost = true;
}

function clean(spare: Spare): void {
  new Uint8Array(spare.memory.buffer).fill(0);
  spare.dirty = false;
}

function dropSpare(spare: Spare): void {
  if (!spares.delete(spare)) return;
  sparesBytes -= spare.pages * WASM_PAGE_BYTES;
  if (spare.home.get(spare.pages) === spare) spare.home.delete(spare.pages);
}

/**
 * The memories of one pooled module, kept between its calls in one worker.
 * One call at a time uses a memory (a worker runs one call at a time, and a
 * module is instantiated once per call): `acquire` before instantiating,
 * `release` once the call is over. A call starts with `pagesFor` its input,
 * and is given a spare of that size when there is one: what a call sees
 * depends on its own input only.
 */
export class MemoryPool {
  /** Pages a call with a small input starts with. */
  readonly pages: number;
  readonly maxPages: number;
  /** Spares by the pages they start with. */
  readonly #spares = new Map<number, Spare>();
  /** Each memory out on a call: the pages it started with, and the calls it has served. */
  readonly #out = new WeakMap<WebAssembly.Memory, { pages: number; uses: number }>();
  /** Its code was dropped from the worker's code cache: nothing is kept for a next call. */
  #disposed = false;

  constructor(module: PooledModule) {
    this.maxPages = module.maxPages;
    this.pages = Math.max(module.minPages, Math.min(POOLED_PAGES, module.maxPages));
  }

  /**
   * Pages a call with `inputBytes` of input starts with: `pages`, or room
   * for reading and parsing that input (INPUT_ROOM), whichever is more, up
   * to a quarter of the cap. Rounded up to an eighth of a power of two, so
   * calls of similar sizes share spares. A call that grows its memory is not
   * given it again, and pays a page fault (~10 µs here) for every 4 KiB it
   * touches past its start: ~7 ms of a 1 MB diff-summary call before this room.
   *
   * Why a quarter: an allocator that only takes memory by growing it (Zig's,
   * Rust's dlmalloc outside WASI) leaves the start unused, so the room comes
   * off what it may grow into; and a memory that starts near the cap has
   * little room left to grow, where outcome.ts tells running out of memory
   * by a memory that grew to near the cap.
   */
  pagesFor(inputBytes: number): number {
    const wanted = Math.ceil((INPUT_ROOM * inputBytes + ROOM_BEYOND_INPUT) / WASM_PAGE_BYTES);
    if (wanted <= this.pages) return this.pages;
    const step = 2 ** Math.max(0, Math.floor(Math.log2(wanted)) - 3);
    return Math.min(Math.ceil(wanted / step) * step, Math.max(this.pages, Math.floor(this.maxPages / 4)));
  }

  acquire(pages: number = this.pages): WebAssembly.Memory {
    const spare = this.#spares.get(pages);
    if (!spare) {
      const memory = new WebAssembly.Memory({ initial: pages, maximum: this.maxPages });
      this.#out.set(memory, { pages, uses: 1 });
      return memory;
    }
    dropSpare(spare);
    if (spare.dirty) clean(spare);
    const served = this.#out.get(spare.memory)!;
    served.uses++;
    return spare.memory;
  }

  /**
   * Keep the memory for the next call that starts with its size, if it did
   * not grow (its size then tells that call nothing), has not served
   * MAX_REUSES calls and is not over MAX_SPARE_BYTES. It is zeroed after
   * the current task, or at the next acquire.
   */
  release(memory: WebAssembly.Memory): void {
    const served = this.#out.get(memory);
    if (!served || this.#disposed || served.uses >= MAX_REUSES) return;
    const bytes = served.pages * WASM_PAGE_BYTES;
    if (memory.buffer.byteLength !== bytes || bytes > MAX_SPARE_BYTES) return;
    const old = this.#spares.get(served.pages);
    if (old) dropSpare(old);
    const spare: Spare = { home: this.#spares, memory, pages: served.pages, dirty: true };
    this.#spares.set(served.pages, spare);
    spares.add(spare);
    sparesBytes += bytes;
    for (const oldest of spares) {
      if (spares.size <= MAX_SPARES && sparesBytes <= MAX_SPARES_BYTES) break;
      dropSpare(oldest);
    }
    if (cleanedByHost) return;
    setTimeout(() => {
      if (spare.dirty && spares.has(spare)) clean(spare);
    }, 0);
  }

  /** Drop the spares and keep none from now on (the module's code was evicted; a call still running gives its memory back to no one). */
  dispose(): void {
    this.#disposed = true;
    for (const spare of [...this.#spares.values()]) dropSpare(spare);
  }
}
