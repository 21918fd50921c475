#!/usr/bin/env bash
# Builds Corral's WASI conformance programs: programs/NAME.c ->
# programs/NAME.wasm, wasi_snapshot_preview1 command modules, and
# programs/NAME.component.wasm, the same module made a wasi:cli command
# component with jco's preview1 adapter (browsers cannot run `jco new`). The built
# files are committed, so the tests need no C toolchain; rebuild after
# changing a program (npm run build:tools runs this too).
#
# Like every Corral C tool they link packages/node/kit/c/corral.c (its
# _start and cabi_realloc let the same module run under node:wasi, Corral's
# preview1 host, and as a component through jco's preview1 adapter).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
obj="$(mktemp -d)"
trap 'rm -rf "$obj"' EXIT

clang --target=wasm32-wasi -O2 -c -o "$obj/command.o" "$root/packages/node/kit/c/corral.c"
# Compile with -O2 but link without it: clang's link step runs whatever
# wasm-opt is on PATH when given -O.
for src in "$here"/programs/*.c; do
  name="$(basename "$src" .c)"
  out="$here/programs/$name.wasm"
  clang --target=wasm32-wasi -O2 -Wall -Werror -c -o "$obj/$name.o" "$src"
  clang --target=wasm32-wasi -nostartfiles -Wl,--strip-all -o "$out" "$obj/$name.o" "$obj/command.o"
  chmod 644 "$out"
  "$root/node_modules/.bin/jco" new "$out" --wasi-command -o "$here/programs/$name.component.wasm" >/dev/null
  printf '%-24s %8d B module, %8d B component\n' "$name.wasm" "$(wc -c <"$out")" "$(wc -c <"$here/programs/$name.component.wasm")"
done
