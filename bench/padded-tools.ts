/**
 * Many distinct preview1 tools made from one: a module (the p1-echo fixture,
 * test/fixtures/preview1/echo) with a custom section appended (its own name
 * and bytes, so its own SHA-256), padded to a chosen size so the code a
 * worker keeps can be weighed. Used by test/worker-memory.test.ts and
 * bench/memory.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function leb128(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** `echo` with a custom section named `name` holding `padBytes` bytes that start with the name. */
export function paddedEcho(echo: Uint8Array, name: string, padBytes: number): Uint8Array {
  const nameBytes = new TextEncoder().encode(name);
  const payload = new Uint8Array(padBytes);
  payload.set(nameBytes.subarray(0, padBytes));
  const body = [...leb128(nameBytes.length), ...nameBytes];
  const size = body.length + payload.length;
  const section = new Uint8Array([0, ...leb128(size), ...body]);
  const out = new Uint8Array(echo.length + section.length + payload.length);
  out.set(echo, 0);
  out.set(section, echo.length);
  out.set(payload, echo.length + section.length);
  return out;
}

/** `count` tool folders under `dir` (echo-0 … echo-N), each its own padded p1-echo. Returns their names. */
export function writePaddedTools(echo: Uint8Array, dir: string, count: number, padBytes: number): string[] {
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `echo-${i}`;
    const folder = join(dir, name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `${name}.wasm`), paddedEcho(echo, name, padBytes));
    writeFileSync(
      join(folder, 'tool-spec.json'),
      JSON.stringify({
        name,
        version: '1.0.0',
        description: `Echoes its JSON input (p1-echo padded to its own bytes, ${i})`,
        kind: 'module',
        component: `${name}.wasm`,
        input_schema: { type: 'object' },
        resources: { memory_mb: 16, timeout_ms: 10_000 },
      }),
    );
    names.push(name);
  }
  return names;
}
