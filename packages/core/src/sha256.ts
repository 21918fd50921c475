/**
 * SHA-256 for the snapshot recorder: synchronously for small data (a call's
 * input and stdout are usually a few KiB), where the asynchronous
 * crypto.subtle.digest costs more in its hop to another thread and back than
 * in hashing; larger data still goes to crypto.subtle. Small data is hashed
 * by the host's native hash where it has one (node:crypto, through
 * process.getBuiltinModule: Node ≥ 20.16, Deno, Bun), else in plain JS here.
 * The registry hashes a tool's code once, natively at any size (`nativeUpTo`).
 */
import { sha256Hex } from './wasm.js';

/** Up to this many bytes are hashed synchronously, in well under 0.1 ms. */
const SMALL_BYTES = 8 * 1024;

interface NativeHash {
  update(data: Uint8Array | string): NativeHash;
  digest(encoding: 'hex'): string;
}
/** node:crypto's createHash, where the host offers it synchronously: ~2 µs for 2 KiB, against ~50 µs in the JS below. */
const nativeHash = ((): ((algorithm: 'sha256') => NativeHash) | undefined => {
  try {
    const host = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const crypto = host?.getBuiltinModule?.('node:crypto') as { createHash?: (algorithm: 'sha256') => NativeHash } | undefined;
    return typeof crypto?.createHash === 'function' ? crypto.createHash : undefined;
  } catch {
    return undefined;
  }
})();

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const encoder = new TextEncoder();

/**
 * Lowercase hex SHA-256 of `data` (a string is hashed as its UTF-8 bytes), like sha256Hex.
 * `nativeUpTo`: the most bytes hashed synchronously by the host's native hash (~2.5 ms a MiB).
 */
export async function sha256HexFast(data: Uint8Array | string, nativeUpTo = SMALL_BYTES): Promise<string> {
  // A string of n UTF-16 units is at most 3n bytes of UTF-8.
  if (nativeHash && (typeof data === 'string' ? data.length * 3 : data.length) <= nativeUpTo)
    return nativeHash('sha256').update(data).digest('hex');
  const bytes = typeof data === 'string' ? (data.length <= SMALL_BYTES ? encoder.encode(data) : null) : data;
  return bytes !== null && bytes.length <= SMALL_BYTES ? sha256Small(bytes) : sha256Hex(data);
}

/** SHA-256 (FIPS 180-4) of a small byte array, as lowercase hex. */
export function sha256Small(bytes: Uint8Array): string {
  const blocks = Math.ceil((bytes.length + 9) / 64);
  const padded = new Uint8Array(blocks * 64);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  const bits = bytes.length * 8;
  view.setUint32(padded.length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(padded.length - 4, bits >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
    }
    let [a, b, c, d, e, f, g, hh] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!];
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0]! + a) | 0;
    h[1] = (h[1]! + b) | 0;
    h[2] = (h[2]! + c) | 0;
    h[3] = (h[3]! + d) | 0;
    h[4] = (h[4]! + e) | 0;
    h[5] = (h[5]! + f) | 0;
    h[6] = (h[6]! + g) | 0;
    h[7] = (h[7]! + hh) | 0;
  }
  let hex = '';
  for (const word of h) hex += word.toString(16).padStart(8, '0');
  return hex;
}
