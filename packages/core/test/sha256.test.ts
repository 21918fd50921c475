import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256HexFast, sha256Small } from '../src/sha256.js';

const reference = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');

describe('the recorder’s SHA-256', () => {
  it('matches node:crypto for every length across the padding and block boundaries', () => {
    const bytes = new Uint8Array(300).map((_, i) => (i * 131 + 7) & 0xff);
    for (let n = 0; n <= bytes.length; n++) expect(sha256Small(bytes.subarray(0, n)), `${n} bytes`).toBe(reference(bytes.subarray(0, n)));
  });

  it('hashes text with lone surrogates as TextEncoder encodes it (U+FFFD), whichever path takes it', async () => {
    // The same input must hash alike in Node (node:crypto) and in a browser (the JS hash).
    for (const text of ['\uD800', 'a\uDC00b', '\uDC00\uD800', '\uD800\uD800\uDC00', '', '\0é']) {
      const bytes = new TextEncoder().encode(text);
      expect(await sha256HexFast(text)).toBe(sha256Small(bytes));
      expect(await sha256HexFast(text)).toBe(reference(bytes));
    }
  });

  it('matches node:crypto for random data, small and large, bytes and UTF-8 text', async () => {
    for (const n of [1, 55, 56, 63, 64, 65, 1000, 8191, 8192, 8193, 100_000]) {
      const bytes = new Uint8Array(n).map(() => Math.floor(Math.random() * 256));
      expect(await sha256HexFast(bytes), `${n} bytes`).toBe(reference(bytes));
      const text = `é✓😀${'x'.repeat(n)}`;
      expect(await sha256HexFast(text), `${n} chars`).toBe(reference(text));
    }
  });
});
