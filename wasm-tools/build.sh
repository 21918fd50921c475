#!/usr/bin/env bash
# Builds Corral's first-party WASI tools (run from anywhere; `npm run
# build:tools` runs it from the repo root).
#
# For each wasm-tools/<tool>/src/*.c, compiled with the C author's kit
# (packages/node/kit/c/corral.c):
#   <tool>/<tool>.module.wasm  the wasi_snapshot_preview1 core module
#   <tool>/<tool>.wasm         the wasi:cli command component
# Both are committed: the component is what tool-spec.json points at, the
# core module is the preview1 baseline.
#
# The steps are the ones `corral build` runs for any C tool: build.mjs calls
# buildC in packages/node/src/author/c.ts (its compiled dist/), so a
# first-party tool is built exactly as a third-party author's would be.
#
# Deterministic: sources are taken in byte order, source paths are mapped
# to relative ones, and the modules are stripped, so the same toolchain
# gives the same bytes. One trap avoided on purpose: when clang links with
# an -O flag it silently runs the first `wasm-opt` it finds on PATH (npm
# puts node_modules/.bin there, so `npm run build:tools` and `bash
# build.sh` once gave different bytes). buildC compiles with -O2 but links
# without it, then runs the wasm-opt that package-lock.json pins (binaryen,
# a jco dependency, found by module resolution) with the features clang
# targets, so nothing depends on PATH but clang itself.
#
# Toolchain: Debian `clang lld wasi-libc libclang-rt-dev-wasm32` (buildC
# names them when one is missing), and `npm install` + `npm run build`.
#
# Usage: wasm-tools/build.sh [tool ...]     (default: every tool)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LC_ALL=C
export SOURCE_DATE_EPOCH=0
exec node "$HERE/build.mjs" "$@"
