/**
 * wasi:filesystem `metadata-hash`: which object a descriptor or a name
 * leads to, as a guest sees it (the preview1 adapter and Corral's preview1
 * host read its lower half as st_ino and d_ino).
 *
 * The interface says the hash "may also include a secret value chosen by
 * the implementation and not otherwise exposed", and that is what this is:
 * SipHash-2-4 of the backend's (dev, ino) under a key drawn once per worker.
 * Equal objects get equal hashes (hard links, a file and the listing entry
 * that names it, the same /tmp inode in two calls of one worker), and a
 * guest learns nothing of the host's own device and inode numbers, which
 * say how the host's disks are laid out and how many files it has made.
 * wasmtime hashes the same pair (with a fixed key).
 */

/**
 * The key, as four 32-bit words: k0 = (K[1], K[0]), k1 = (K[3], K[2]) (high, low).
 * Drawn at first use: Node loads WebCrypto (~14 ms) the first time `crypto` is touched.
 */
let K: Uint32Array | undefined;

export interface MetadataHash {
  lower: bigint;
  upper: bigint;
}

/** A fixed constant to make `upper` differ from `lower` (as wasmtime does: pi's bits). */
const UPPER_MASK = 0x400921fb54442d18n;

/** The metadata hash of the object a backend numbers (dev, ino). */
export function metadataHash(dev: bigint, ino: bigint): MetadataHash {
  let lower = sipHash24((K ??= crypto.getRandomValues(new Uint32Array(4))), dev, ino);
  // st_ino 0 reads as "unknown" to wasi-libc (its readdir then stats the name).
  if (lower === 0n) lower = 1n;
  return { lower, upper: lower ^ UPPER_MASK };
}

const MASK32 = 0xffffffffn;

/**
 * SipHash-2-4 (Aumasson and Bernstein) of the 16-byte message that is `a`
 * and `b` as little-endian u64s, under `key` ([k0 low, k0 high, k1 low, k1
 * high]). 64-bit words are kept as two 32-bit halves in local int32s, which
 * V8 keeps unboxed (BigInt arithmetic, or halves stored outside the
 * function, would allocate every step). Ten rounds in one loop: two per
 * message block (a, b, then the length block), then four to finalize.
 */
export function sipHash24(key: Uint32Array, a: bigint, b: bigint): bigint {
  const a64 = BigInt.asUintN(64, a);
  const b64 = BigInt.asUintN(64, b);
  // The blocks as [high, low]: a, b, and the last one, which holds the message length (16) in its top byte.
  const blocks = [Number(a64 >> 32n) | 0, Number(a64 & MASK32) | 0, Number(b64 >> 32n) | 0, Number(b64 & MASK32) | 0, 16 << 24, 0];
  const k0l = key[0]! | 0;
  const k0h = key[1]! | 0;
  const k1l = key[2]! | 0;
  const k1h = key[3]! | 0;
  // "somepseudorandomlygeneratedbytes"
  let v0h = k0h ^ 0x736f6d65;
  let v0l = k0l ^ 0x70736575;
  let v1h = k1h ^ 0x646f7261;
  let v1l = k1l ^ 0x6e646f6d;
  let v2h = k0h ^ 0x6c796765;
  let v2l = k0l ^ 0x6e657261;
  let v3h = k1h ^ 0x74656462;
  let v3l = k1l ^ 0x79746573;
  let l: number;
  let h: number;
  for (let i = 0; i < 10; i++) {
    if (i < 6 && i % 2 === 0) {
      v3h ^= blocks[i]!;
      v3l ^= blocks[i + 1]!;
    }
    if (i === 6) v2l ^= 0xff;
    // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    l = (v0l + v1l) | 0;
    v0h = (v0h + v1h + (l >>> 0 < v0l >>> 0 ? 1 : 0)) | 0;
    v0l = l;
    h = (v1h << 13) | (v1l >>> 19);
    l = (v1l << 13) | (v1h >>> 19);
    v1h = h ^ v0h;
    v1l = l ^ v0l;
    h = v0h;
    v0h = v0l;
    v0l = h;
    // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
    l = (v2l + v3l) | 0;
    v2h = (v2h + v3h + (l >>> 0 < v2l >>> 0 ? 1 : 0)) | 0;
    v2l = l;
    h = (v3h << 16) | (v3l >>> 16);
    l = (v3l << 16) | (v3h >>> 16);
    v3h = h ^ v2h;
    v3l = l ^ v2l;
    // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
    l = (v0l + v3l) | 0;
    v0h = (v0h + v3h + (l >>> 0 < v0l >>> 0 ? 1 : 0)) | 0;
    v0l = l;
    h = (v3h << 21) | (v3l >>> 11);
    l = (v3l << 21) | (v3h >>> 11);
    v3h = h ^ v0h;
    v3l = l ^ v0l;
    // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    l = (v2l + v1l) | 0;
    v2h = (v2h + v1h + (l >>> 0 < v2l >>> 0 ? 1 : 0)) | 0;
    v2l = l;
    h = (v1h << 17) | (v1l >>> 15);
    l = (v1l << 17) | (v1h >>> 15);
    v1h = h ^ v2h;
    v1l = l ^ v2l;
    h = v2h;
    v2h = v2l;
    v2l = h;
    if (i < 6 && i % 2 === 1) {
      v0h ^= blocks[i - 1]!;
      v0l ^= blocks[i]!;
    }
  }
  h = (v0h ^ v1h ^ v2h ^ v3h) >>> 0;
  l = (v0l ^ v1l ^ v2l ^ v3l) >>> 0;
  return (BigInt(h) << 32n) | BigInt(l);
}
