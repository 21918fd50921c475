import { parse } from '@bytecodealliance/jco';
import { section, u32, vec } from './wasm-bytes.js';

/**
 * A command whose start function calls proc_exit(code) (a start function runs
 * before the host has the module's memory; exiting needs none), and whose
 * _start, never reached, writes to stdout.
 */
export function startExits(code: number): Promise<Uint8Array> {
  return parse(`(module
    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (data (i32.const 16) "\\20\\00\\00\\00\\05\\00\\00\\00")
    (data (i32.const 32) "after")
    (func $init (call $exit (i32.const ${code})))
    (start $init)
    (func (export "_start") (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 8)))))`);
}

/**
 * A command whose start function calls proc_exit(code), catches what unwinds
 * it (legacy wasm exception handling, `catch_all`), and then recurses until
 * the stack overflows, or returns; after `returns`, its _start loops forever
 * (run it only where a time limit stops it). Built byte by byte: jco's parser
 * takes only the newer `try_table`, which Node 20 does not run.
 */
export function startExitsAndCatches(code: number, then: 'overflows' | 'returns'): Uint8Array {
  const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];
  const body = (...bytes: number[]) => [...u32(bytes.length + 1), 0, ...bytes];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    1,
    0,
    0,
    0,
    ...section(
      1,
      vec([
        [0x60, 1, 0x7f, 0],
        [0x60, 0, 0],
      ]),
    ),
    ...section(2, vec([[...name('wasi_snapshot_preview1'), ...name('proc_exit'), 0, 0]])),
    ...section(3, vec([[1], [1], [1]])),
    ...section(5, vec([[0, 1]])),
    ...section(
      7,
      vec([
        [...name('memory'), 2, 0],
        [...name('_start'), 0, 3],
      ]),
    ),
    ...section(8, [2]),
    ...section(
      10,
      vec([
        // $rec: call $rec
        body(0x10, 1, 0x0b),
        // $init: try (call $exit (i32.const code)) catch_all end; call $rec (or nothing)
        body(0x06, 0x40, 0x41, ...u32(code), 0x10, 0, 0x19, 0x0b, ...(then === 'overflows' ? [0x10, 1] : []), 0x0b),
        // _start: nothing, or loop (br 0)
        then === 'overflows' ? body(0x0b) : body(0x03, 0x40, 0x0c, 0, 0x0b, 0x0b),
      ]),
    ),
  ]);
}

/** A command whose start function recurses until the stack overflows. */
export function startOverflows(): Promise<Uint8Array> {
  return parse(`(module
    (memory (export "memory") 1)
    (func $rec (call $rec))
    (start $rec)
    (func (export "_start")))`);
}
