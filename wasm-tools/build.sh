#!/usr/bin/env bash
# Builds Corral's first-party WASI tools (run from anywhere; `npm run
# build:tools` runs it from the repo root).
#
# For each wasm-tools/<tool>/src/*.c (plus wasm-tools/common/*.c):
#   <tool>/<tool>.module.wasm  the wasi_snapshot_preview1 core module
#   <tool>/<tool>.wasm         the wasi:cli command component (jco new)
# Both are committed: the component is what tool-spec.json points at, the
# core module is the preview1 baseline.
#
# Deterministic: sources are taken in byte order, paths are made relative,
# and the modules are stripped, so the same toolchain gives the same bytes.
# One trap avoided on purpose: when clang links with an -O flag it silently
# runs the first `wasm-opt` it finds (npm puts node_modules/.bin on PATH, so
# `npm run build:tools` and `bash build.sh` gave different bytes). We compile
# with -O2 but link without it, then run the wasm-opt that package-lock.json
# pins (binaryen, a jco dependency) explicitly, with the same features clang
# targets, so nothing depends on PATH.
#
# Usage: wasm-tools/build.sh [tool ...]     (default: every tool)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0

CC="${CC:-clang}"
CFLAGS=(--target=wasm32-wasi -O2 -std=c11 -D_GNU_SOURCE
        -Wall -Wextra -Wno-unused-parameter
        -ffile-prefix-map="$REPO"=. -fno-ident)
# No tool formats floating point; the integer-only printf saves ~5 KiB.
# No -O here (see above).
LDFLAGS=(--target=wasm32-wasi -nostartfiles -Wl,--strip-all
         -lc-printscan-no-floating-point)
WASM_OPT_FLAGS=(-O2 --mvp-features --enable-sign-ext --enable-mutable-globals
                --strip-debug --strip-producers)

die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }

# ---- toolchain checks ---------------------------------------------------
if ! command -v "$CC" >/dev/null 2>&1; then
  die "'$CC' not found. Install the WASI C toolchain:
    sudo apt-get install clang lld wasi-libc libclang-rt-dev-wasm32"
fi
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <stdio.h>\nint main(void){puts("ok");return 0;}\n' >"$probe/p.c"
if ! "$CC" "${CFLAGS[@]}" "$probe/p.c" -o "$probe/p.wasm" 2>"$probe/err"; then
  cat "$probe/err" >&2
  die "'$CC --target=wasm32-wasi' cannot build a WASI program (missing wasm-ld,
wasi-libc headers/libc.a, or the wasm32 compiler-rt builtins). Install:
    sudo apt-get install clang lld wasi-libc libclang-rt-dev-wasm32"
fi

JCO="$REPO/node_modules/.bin/jco"
[ -x "$JCO" ] || die "jco not found at $JCO; run 'npm install' in $REPO first"
WASM_OPT="$REPO/node_modules/.bin/wasm-opt"
[ -x "$WASM_OPT" ] || die "wasm-opt (npm package binaryen) not found at $WASM_OPT; run 'npm install' in $REPO first"

# ---- build ----------------------------------------------------------------
mapfile -t common < <(cd "$REPO" && ls wasm-tools/common/*.c | sort)

if [ "$#" -gt 0 ]; then
  tools=("$@")
else
  mapfile -t tools < <(cd "$HERE" && for d in */src; do echo "${d%/src}"; done | sort)
fi
[ "${#tools[@]}" -gt 0 ] || die "no tools found under $HERE/*/src"

obj="$(mktemp -d)"
trap 'rm -rf "$probe" "$obj"' EXIT

cd "$REPO"  # relative source paths keep absolute paths out of the output
for tool in "${tools[@]}"; do
  dir="wasm-tools/$tool"
  [ -d "$dir/src" ] || die "no such tool: $tool (expected $dir/src)"
  mapfile -t srcs < <(ls "$dir"/src/*.c | sort)
  module="$dir/$tool.module.wasm"
  component="$dir/$tool.wasm"

  objs=()
  for src in "${srcs[@]}" "${common[@]}"; do
    o="$obj/$tool-$(echo "$src" | tr '/' '_').o"
    "$CC" "${CFLAGS[@]}" -c "$src" -o "$o"
    objs+=("$o")
  done
  "$CC" "${objs[@]}" "${LDFLAGS[@]}" -o "$obj/$tool.linked.wasm"
  "$WASM_OPT" "${WASM_OPT_FLAGS[@]}" "$obj/$tool.linked.wasm" -o "$module.tmp"
  chmod 644 "$module.tmp"
  mv "$module.tmp" "$module"
  "$JCO" new "$module" --wasi-command -o "$component.tmp" >/dev/null
  chmod 644 "$component.tmp"
  mv "$component.tmp" "$component"

  printf '%-14s %8d B module  %8d B component\n' "$tool" \
    "$(wc -c <"$module")" "$(wc -c <"$component")"
done
