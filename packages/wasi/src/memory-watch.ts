/**
 * The memories of one call's instance, each with the size it started with
 * and the maximum its module was capped at: to report the call's peak, and
 * to tell whether a failed call ran out of memory.
 *
 * A call ran out when a `memory.grow` of it failed: each core module's
 * grows are rewritten to record that (grow-watch.ts). Of a module that
 * could not be rewritten, running out is read from where its memories
 * ended: one grew during the call, to near its own maximum. Its own, not
 * the call's cap: the cap is split among a component's memories
 * (capComponentModules) and a module may declare a lower maximum. Near
 * allows for the block the allocator could not get: 2 MiB or an eighth of
 * the maximum, but at most half of the room the memory had when the call
 * started. A memory starts with 512 KiB or more (a pooled memory,
 * MemoryPool.pagesFor), half of a 1 MiB cap: measured from the cap alone,
 * one page grown there read as running out.
 */
import { definedMemories, WASM_PAGE_BYTES } from './limits.js';
import { GROW_FAILED_EXPORT } from './grow-watch.js';

/** Where a memory started and how far it may grow, in pages. */
export interface MemoryLimits {
  /** Its size when the call started; when left out, its size when watched. */
  startPages?: number | undefined;
  maxPages: number;
}

export class MemoryWatch {
  readonly #memories = new Map<WebAssembly.Memory, { startBytes: number; maxBytes: number }>();
  /** The GROW_FAILED_EXPORT global of each core instance that has one. */
  readonly #growFailed: WebAssembly.Global[] = [];
  /** Whether a core instance may grow a memory without the host seeing it fail. */
  #blind = false;

  /**
   * A core instance made for the call: `watched` when its module's grows
   * were rewritten (its exports then have the global; grow-watch.ts), not
   * when its module could not be.
   */
  instance(instance: WebAssembly.Instance, watched: boolean): void {
    if (!watched) {
      this.#blind = true;
      return;
    }
    const failed = instance.exports[GROW_FAILED_EXPORT];
    if (failed instanceof WebAssembly.Global) this.#growFailed.push(failed);
  }

  /**
   * Whether the call ran out of memory (see the file comment): once a grow
   * failed, whatever the tool did next, a refusal it handled included.
   */
  ranOut(): boolean {
    for (const failed of this.#growFailed) {
      try {
        if (failed.value === 1) return true;
      } catch {
        // Not an i32 (a v128 cannot be read from JS): not Corral's global, but a damaged cache's.
      }
    }
    return this.#blind && this.nearCap();
  }

  /** Watch `memory`; one already watched keeps the limits it was first given (a memory is shared by the instances that import it). */
  watch(memory: WebAssembly.Memory, limits: MemoryLimits): void {
    if (this.#memories.has(memory)) return;
    const startBytes = limits.startPages === undefined ? memory.buffer.byteLength : limits.startPages * WASM_PAGE_BYTES;
    this.#memories.set(memory, { startBytes, maxBytes: limits.maxPages * WASM_PAGE_BYTES });
  }

  /** The largest size a watched memory reached (memories only grow). */
  peakBytes(): number {
    let peak = 0;
    for (const memory of this.#memories.keys()) peak = Math.max(peak, memory.buffer.byteLength);
    return peak;
  }

  /** Whether a watched memory grew during the call to near its maximum (see the file comment). */
  nearCap(): boolean {
    for (const [memory, { startBytes, maxBytes }] of this.#memories) {
      const bytes = memory.buffer.byteLength;
      const slack = Math.min(Math.max(2 * 2 ** 20, maxBytes / 8), (maxBytes - startBytes) / 2);
      if (bytes > startBytes && bytes >= maxBytes - slack) return true;
    }
    return false;
  }
}

/**
 * The limits of the memories a core module exports, when it keeps its own
 * (a pooled memory is watched with its lease): its only memory's, when it
 * defines one and imports none. Else a memory it exports may be any it
 * defines (then the most one may have, and its size when the instance is
 * made for its start) or one it imports, from a module that exported it
 * first and was watched with its own limits; of a module that defines none,
 * the call's cap (`maxPages`).
 */
export function exportedMemoryLimits(capped: Uint8Array, importsMemory: boolean, maxPages: number): MemoryLimits {
  const defined = definedMemories(capped);
  if (defined.length === 1 && !importsMemory) return { startPages: defined[0]!.minPages, maxPages: defined[0]!.maxPages };
  return { maxPages: defined.length > 0 ? Math.max(...defined.map((m) => m.maxPages)) : maxPages };
}
