import { parse } from '@bytecodealliance/jco';

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
