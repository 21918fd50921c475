/*
 * The entry point and allocator every Corral C tool links (tools link with
 * -nostartfiles, so this _start replaces wasi-libc's crt1).
 *
 * cabi_realloc: the component adapter (wasi_snapshot_preview1 -> wasi:cli)
 * allocates its own buffers through the core module's exported cabi_realloc.
 * Without it the adapter falls back to a small static arena and traps on
 * allocations of about 1 MiB and more (large stdin reads, big outputs).
 *
 * _start: in a command module, wasm-ld wraps every export except _start in
 * calls to the constructors and destructors, unless the program calls
 * __wasm_call_ctors itself. With that wrapper, the adapter's first
 * allocation ran the stdio destructors in the middle of a write: the first
 * printf output of a tool was lost. Calling the constructors here turns the
 * wrappers off, and leaves no _initialize export, so the same module also
 * runs as a plain preview1 command (node:wasi, wasmtime).
 */
#include <stdlib.h>
#include <wasi/api.h>

extern void __wasm_call_ctors(void);
extern void __wasm_call_dtors(void);
extern int __main_void(void);

__attribute__((export_name("cabi_realloc")))
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
  (void)old_size;
  (void)align; /* malloc alignment (16) covers every canonical ABI type */
  /* dlmalloc's realloc(p, 0) frees and returns NULL, which the canonical ABI
   * would read as out-of-memory; a zero-sized request needs a valid pointer. */
  return realloc(ptr, new_size ? new_size : 1);
}

__attribute__((export_name("_start")))
void _start(void) {
  __wasm_call_ctors();
  int status = __main_void();
  __wasm_call_dtors();
  if (status != 0) __wasi_proc_exit((__wasi_exitcode_t)status);
}
