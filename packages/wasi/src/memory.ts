/**
 * Memory caps for core wasm modules.
 *
 * A worker's `resourceLimits` bound the JS heap, not wasm memories, so a tool
 * could grow its memory until the host runs out. Corral rewrites the maximum
 * of every memory a module defines before compiling it; `memory.grow` past
 * the cap then fails inside the tool (malloc returns NULL) instead of
 * exhausting the host.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';

export const WASM_PAGE_BYTES = 65536;

const SECTION_MEMORY = 5;

/** Return a copy of `module` whose defined memories have at most `maxPages` pages. */
export function capMemory(module: Uint8Array, maxPages: number, toolName = 'tool'): Uint8Array {
  if (module.length < 8 || module[0] !== 0 || module[1] !== 0x61 || module[2] !== 0x73 || module[3] !== 0x6d) {
    throw new TypeError('not a core wasm module');
  }
  const out: number[][] = [Array.from(module.subarray(0, 8))];
  let pos = 8;
  while (pos < module.length) {
    const id = module[pos]!;
    const [size, sizeLen] = readU32(module, pos + 1);
    const bodyStart = pos + 1 + sizeLen;
    const bodyEnd = bodyStart + size;
    if (bodyEnd > module.length) throw new TypeError('truncated wasm section');
    if (id === SECTION_MEMORY) {
      const body = rewriteMemorySection(module.subarray(bodyStart, bodyEnd), maxPages, toolName);
      out.push([id, ...writeU32(body.length), ...body]);
    } else {
      out.push(Array.from(module.subarray(pos, bodyEnd)));
    }
    pos = bodyEnd;
  }
  return Uint8Array.from(out.flat());
}

function rewriteMemorySection(body: Uint8Array, maxPages: number, toolName: string): number[] {
  const [count, countLen] = readU32(body, 0);
  let pos = countLen;
  const out: number[] = [...writeU32(count)];
  for (let i = 0; i < count; i++) {
    const flags = body[pos++]!;
    if (flags & 0x04) throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} uses 64-bit memory, which Corral does not run.`);
    const shared = flags & 0x02;
    const [min, minLen] = readU32(body, pos);
    pos += minLen;
    let max = maxPages;
    if (flags & 0x01) {
      const [declared, maxLen] = readU32(body, pos);
      pos += maxLen;
      max = Math.min(declared, maxPages);
    }
    if (min > max) {
      throw new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `${toolName} needs at least ${Math.ceil((min * WASM_PAGE_BYTES) / 2 ** 20)} MB of memory at start; its spec allows ${Math.floor((maxPages * WASM_PAGE_BYTES) / 2 ** 20)} MB (resources.memory_mb).`,
        { resource: 'memory', min_pages: min, max_pages: maxPages },
      );
    }
    out.push(0x01 | shared, ...writeU32(min), ...writeU32(max));
  }
  return out;
}

function readU32(bytes: Uint8Array, at: number): [value: number, length: number] {
  let value = 0;
  let shift = 0;
  let pos = at;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined || shift > 28) throw new TypeError('bad LEB128 in wasm module');
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, pos - at];
    shift += 7;
  }
}

function writeU32(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}
