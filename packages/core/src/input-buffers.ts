/**
 * The buffers a runtime encodes call inputs into, kept from one call to the
 * next. Memory new to the process costs a page fault per 4 KiB page at its
 * first write: encoding 1 MB of JSON into a new buffer took 3–5 ms on this
 * project's 2-core VMs, into one written before 0.08 ms. A call's buffer
 * moves to its sandbox worker, and the executor hands it back when the call
 * is over (ExecutionRequest.returnStdin).
 */

/** Smaller inputs fit in memory the allocator already has: nothing to gain. */
const MIN_KEPT_BYTES = 64 * 1024;
/** Larger inputs are rare enough that keeping their buffer is not worth its memory. */
const MAX_KEPT_BYTES = 16 * 2 ** 20;
/** Buffers waiting for a call, at most, and their bytes together. */
const MAX_KEPT = 4;
const MAX_KEPT_TOTAL = 32 * 2 ** 20;

interface Kept {
  buffer: ArrayBuffer;
  /** Bytes from the start that may hold a past input; the rest is zero. */
  written: number;
}

export class InputBuffers {
  readonly #kept: Kept[] = [];
  /** The kept buffers' bytes together. */
  #keptBytes = 0;

  /**
   * A view of `length` zero or soon-overwritten bytes at the start of a
   * buffer: a kept one at most twice as large (its bytes past `length` are
   * zeroed, so no call's buffer carries another call's input), or a new one
   * with room for a slightly larger next input.
   */
  take(length: number): Uint8Array {
    if (length < MIN_KEPT_BYTES) return new Uint8Array(length);
    let best = -1;
    for (let i = 0; i < this.#kept.length; i++) {
      const size = this.#kept[i]!.buffer.byteLength;
      if (size >= length && size <= 2 * length && (best < 0 || size < this.#kept[best]!.buffer.byteLength)) best = i;
    }
    if (best < 0) return new Uint8Array(new ArrayBuffer(roomFor(length)), 0, length);
    const [{ buffer, written }] = this.#kept.splice(best, 1) as [Kept];
    this.#keptBytes -= buffer.byteLength;
    if (written > length) new Uint8Array(buffer, length, written - length).fill(0);
    return new Uint8Array(buffer, 0, length);
  }

  /** A buffer `take` gave out, back from its call; kept if there is room. */
  give(bytes: Uint8Array): void {
    const { buffer } = bytes;
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength < MIN_KEPT_BYTES || buffer.byteLength > MAX_KEPT_BYTES) return;
    if (this.#kept.length >= MAX_KEPT || this.#keptBytes + buffer.byteLength > MAX_KEPT_TOTAL) return;
    if (this.#kept.some((k) => k.buffer === buffer)) return;
    this.#kept.push({ buffer, written: bytes.byteOffset + bytes.byteLength });
    this.#keptBytes += buffer.byteLength;
  }
}

/** `length` and an eighth more, in whole 64 KiB (pages past what is written are never touched). */
function roomFor(length: number): number {
  return Math.ceil((length + (length >> 3)) / MIN_KEPT_BYTES) * MIN_KEPT_BYTES;
}
