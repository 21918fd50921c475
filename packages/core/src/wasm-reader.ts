/**
 * A bounds-checked cursor over wasm binary bytes: what every parser of a
 * tool's wasm (its sections, a component's imports) reads with, so a
 * malformed or hostile file ends in MalformedWasm, never a read past the end.
 */

/** The bytes are not the wasm a parser expected; the message says where. */
export class MalformedWasm extends Error {
  constructor(what: string, at: number) {
    super(`${what} (at byte ${at})`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A cursor over `bytes[pos, end)` that refuses to read past `end`. */
export class WasmReader {
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  byte(): number {
    if (this.pos >= this.end) throw new MalformedWasm('unexpected end of section', this.pos);
    return this.bytes[this.pos++]!;
  }

  /** Unsigned LEB128 of at most 5 bytes (core:u32). */
  u32(): number {
    const at = this.pos;
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.byte();
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) {
        if (value > 0xffff_ffff) throw new MalformedWasm('u32 out of range', at);
        return value;
      }
    }
    throw new MalformedWasm('u32 longer than 5 bytes', at);
  }

  /** A LEB128 stepped over unread: 5 bytes at most for s33 (valtypes, type indices), 10 for u64 (memory64 limits). */
  skipLeb(maxBytes: 5 | 10): void {
    const at = this.pos;
    for (let i = 0; i < maxBytes; i++) if ((this.byte() & 0x80) === 0) return;
    throw new MalformedWasm(`LEB128 longer than ${maxBytes} bytes`, at);
  }

  /** core:name ::= len:u32 bytes, valid UTF-8. */
  name(): string {
    const len = this.u32();
    if (len > this.end - this.pos) throw new MalformedWasm(`a ${len}-byte name runs past the end of its section`, this.pos);
    const start = this.pos;
    this.pos += len;
    try {
      return utf8.decode(this.bytes.subarray(start, this.pos));
    } catch {
      throw new MalformedWasm('a name is not valid UTF-8', start);
    }
  }
}
