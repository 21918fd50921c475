/**
 * Views of a preview1 guest's linear memory, taken afresh when it grows,
 * and the reads and writes the calls make through them. A range outside
 * the memory is EFAULT.
 */
import { E, Errno, MAX_IOVS } from './abi.js';

export class GuestMemory {
  #memory: WebAssembly.Memory | undefined;
  #buffer: ArrayBufferLike | undefined;
  /** The whole memory as bytes, as of the last `refresh`. */
  u8 = new Uint8Array(0);
  /** The whole memory as a DataView, as of the last `refresh`. */
  dv = new DataView(new ArrayBuffer(0));

  /** The instance's memory (its `memory` export). */
  bind(memory: WebAssembly.Memory): void {
    this.#memory = memory;
  }

  /** A grown memory has a new buffer: take fresh views of it. Called on entry to every call. */
  refresh(call: string): void {
    const memory = this.#memory;
    if (!memory) throw new Error(`the module called ${call} before its memory was bound`);
    const buffer = memory.buffer;
    if (buffer !== this.#buffer) {
      this.#buffer = buffer;
      this.u8 = new Uint8Array(buffer);
      this.dv = new DataView(buffer);
    }
  }

  /** A view of guest memory; EFAULT when the range is outside it. */
  bytes(ptr: number, len: number): Uint8Array {
    ptr >>>= 0;
    len >>>= 0;
    if (ptr + len > this.u8.length) throw new Errno(E.FAULT);
    return this.u8.subarray(ptr, ptr + len);
  }

  u32(ptr: number, value: number): void {
    this.dv.setUint32(ptr >>> 0, value, true);
  }

  u64(ptr: number, value: bigint): void {
    this.dv.setBigUint64(ptr >>> 0, value, true);
  }

  /** An `iovec_array`/`ciovec_array` as views of guest memory. */
  iovs(ptr: number, count: number): Uint8Array[] {
    if (count >>> 0 > MAX_IOVS) throw new Errno(E.INVAL);
    const table = this.bytes(ptr, (count >>> 0) * 8);
    const dv = this.dv;
    const out: Uint8Array[] = [];
    for (let at = table.byteOffset; at < table.byteOffset + table.length; at += 8) {
      out.push(this.bytes(dv.getUint32(at, true), dv.getUint32(at + 4, true)));
    }
    return out;
  }
}
