/** Building wasm binaries byte by byte, for tests of what Corral reads from them. */
export const u32 = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};

/** A section: id, then its body's size, then the body. */
export const section = (id: number, body: number[]) => [id, ...u32(body.length), ...body];

/** A vector: its length, then its items. */
export const vec = (items: number[][]) => [...u32(items.length), ...items.flat()];
