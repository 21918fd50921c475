/**
 * C tools: the files `corral init NAME --lang c` writes, and the build that
 * turns `src/*.c` into a wasi:cli command component. `wasm-tools/build.sh`
 * builds the first-party tools through `buildC` too, so there is one list
 * of flags and one set of lessons.
 *
 * The build: clang --target=wasm32-wasi compiles every `src/*.c` and the
 * kit's corral.c (packages/node/kit/c, shipped in this package), links with
 * -nostartfiles (the kit defines _start and exports cabi_realloc), wasm-opt
 * optimizes the core module, and jco's preview1 command adapter wraps it
 * into a component. Nothing is looked up on PATH but the C compiler: the
 * optimizer and the componentizer are found by module resolution, and clang
 * links without -O because with it clang runs whatever `wasm-opt` is on PATH.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MissingToolchain, writeBuilt, type BuildContext, type Language, type Scaffold } from './language.js';
import { packagePath } from '../package-files.js';
import { WASM_OPT_FLAGS, wasmOptScript, wrapInCommandAdapter } from './toolchain.js';

/** The kit's folder: corral.h, corral.c and their README. */
export const C_KIT_DIR = packagePath('kit/c/');

/** The Debian packages that make `clang --target=wasm32-wasi` work. */
export const C_TOOLCHAIN_PACKAGES = 'clang lld wasi-libc libclang-rt-dev-wasm32';

const CFLAGS = [
  '--target=wasm32-wasi',
  '-O2',
  '-std=c11',
  '-D_GNU_SOURCE',
  '-Wall',
  '-Wextra',
  '-Wno-unused-parameter',
  // No compiler name or version in the output, so a build is the same bytes anywhere.
  '-fno-ident',
];
// No -O here: with one, clang runs the first `wasm-opt` on PATH after linking.
const LDFLAGS = ['--target=wasm32-wasi', '-nostartfiles', '-Wl,--strip-all'];

export interface CBuildOptions {
  /** The tool folder: its `src/*.c` are compiled. */
  dir: string;
  /** The component to write. */
  out: string;
  /** Also keep the optimized preview1 core module here (the first-party tools commit it). */
  moduleOut?: string;
  /** A progress line per step. */
  log?: (line: string) => void;
  /** Extra flags for the link, e.g. `-lc-printscan-no-floating-point` for a tool that never formats a double. */
  ldflags?: string[];
  /** The C compiler; default `$CC`, else `clang`. */
  cc?: string;
}

/** Builds a C tool folder into a component (and optionally its core module). */
export async function buildC(opts: CBuildOptions): Promise<void> {
  const log = opts.log ?? (() => {});
  const dir = resolve(opts.dir);
  const cc = opts.cc ?? (process.env.CC || 'clang');
  const sources = (await cSources(dir)).map((f) => `src/${f}`);
  if (sources.length === 0) throw new Error(`${join(dir, 'src')} has no .c files to build`);
  await checkToolchain(cc);

  const tmp = await mkdtemp(join(tmpdir(), 'corral-c-build-'));
  try {
    // Paths in the output (assert's __FILE__) are made relative: the tool's
    // sources as src/..., the kit's as corral-kit/..., wherever both live.
    const kit = C_KIT_DIR.replace(/\/$/, '');
    const prefixMaps = [`-ffile-prefix-map=${kit}=corral-kit`, `-ffile-prefix-map=${dir}=.`];
    const units = [...sources, join(kit, 'corral.c')];
    const objects: string[] = [];
    for (const [i, src] of units.entries()) {
      log(`compiling ${src.startsWith(kit) ? 'corral.c (the kit)' : src}`);
      const obj = join(tmp, `${i}.o`);
      await compilerStep(cc, [...CFLAGS, ...prefixMaps, '-I', kit, '-c', src, '-o', obj], dir, log);
      objects.push(obj);
    }
    log('linking');
    const linked = join(tmp, 'linked.wasm');
    await compilerStep(cc, [...objects, ...LDFLAGS, ...(opts.ldflags ?? []), '-o', linked], dir, log);

    log('optimizing (wasm-opt)');
    const optimized = join(tmp, 'module.wasm');
    const opt = await run(process.execPath, [wasmOptScript(), ...WASM_OPT_FLAGS, linked, '-o', optimized], dir);
    if (opt.code !== 0) throw new Error(`wasm-opt failed on the linked module:\n${opt.output}`);
    const module = await readFile(optimized);
    checkExports(module);

    log('componentizing (jco, preview1 command adapter)');
    const component = await wrapInCommandAdapter(module);

    if (opts.moduleOut) await writeBuilt(opts.dir, opts.moduleOut, module);
    await writeBuilt(opts.dir, opts.out, component);
    log(`wrote ${opts.out} (${component.byteLength} bytes)`);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** The `.c` files directly in DIR/src, in byte order (so every machine links them alike). */
async function cSources(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(join(dir, 'src'));
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.c')).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

const checked = new Map<string, Promise<void>>();

/**
 * Compile and link a one-line program once per compiler: a missing clang,
 * wasm-ld, wasi-libc or wasm32 compiler-rt each fails here, and the user is
 * told which packages to install rather than shown a linker error.
 */
function checkToolchain(cc: string): Promise<void> {
  // PATH is part of the key: the same name may find another compiler, or none.
  const key = `${cc}\0${process.env.PATH ?? ''}`;
  let probe = checked.get(key);
  if (!probe) {
    probe = probeToolchain(cc);
    checked.set(key, probe);
    probe.catch(() => checked.delete(key));
  }
  return probe;
}

async function probeToolchain(cc: string): Promise<void> {
  const tmp = await mkdtemp(join(tmpdir(), 'corral-c-probe-'));
  try {
    await writeFile(join(tmp, 'p.c'), '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n');
    let r: RunResult;
    try {
      // No -O: with one, clang would also run whatever wasm-opt is on PATH, and a broken one would fail the probe.
      r = await run(cc, ['--target=wasm32-wasi', 'p.c', '-o', 'p.wasm'], tmp);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new MissingToolchain(
          `The C compiler '${cc}' was not found. Building a C tool needs clang for WebAssembly: sudo apt-get install ${C_TOOLCHAIN_PACKAGES}`,
        );
      }
      throw err;
    }
    if (r.code !== 0) {
      throw new MissingToolchain(
        `'${cc} --target=wasm32-wasi' cannot build a WASI program (wasm-ld, the wasi-libc headers and libc.a, ` +
          `or the wasm32 compiler-rt builtins are missing). Install: sudo apt-get install ${C_TOOLCHAIN_PACKAGES}\n${r.output.trimEnd()}`,
      );
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Runs a compiler step; its warnings go to the log, its errors into the thrown Error. */
async function compilerStep(cc: string, args: string[], cwd: string, log: (line: string) => void): Promise<void> {
  const r = await run(cc, args, cwd);
  if (r.code !== 0) throw new Error(r.output.trimEnd() || `${cc} exited with code ${r.code}`);
  for (const line of r.output.trimEnd().split('\n')) if (line) log(line);
}

interface RunResult {
  code: number;
  /** stdout and stderr, interleaved as they came. */
  output: string;
}

function run(cmd: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    // LC_ALL=C keeps compiler messages and ordering the same on every machine.
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, LC_ALL: 'C', SOURCE_DATE_EPOCH: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.stderr.on('data', (b: Buffer) => chunks.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/**
 * The preview1 adapter needs `cabi_realloc` (without it, inputs of about a
 * megabyte trap), and a command needs `_start`: a tool that defines its own
 * and drops the kit's would build fine and fail later.
 */
interface WasmModuleClass {
  new (bytes: Uint8Array): object;
  exports(module: object): { name: string }[];
}

function checkExports(module: Uint8Array): void {
  // This package's TypeScript lib has no DOM types, where WebAssembly's are declared.
  const { Module } = (globalThis as unknown as { WebAssembly: { Module: WasmModuleClass } }).WebAssembly;
  const names = Module.exports(new Module(module)).map((e) => e.name);
  for (const want of ['_start', 'cabi_realloc']) {
    if (!names.includes(want))
      throw new Error(`the linked module does not export ${want}; link the kit's corral.c and do not define ${want} yourself`);
  }
}

// ---- corral init NAME --lang c ------------------------------------------

const EXAMPLE_INPUT = { text: 'The quick brown fox jumps over the lazy dog', min_length: 5 };
const EXAMPLE_OUTPUT = { long_words: ['quick', 'brown', 'jumps'], words: 9 };

function spec(name: string): object {
  return {
    name,
    version: '0.1.0',
    description: 'Counts the words of a text and lists the long ones. (A C tool made by `corral init`: make it yours.)',
    component: `${name}.wasm`,
    input_schema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'Words are runs of bytes that are not ASCII whitespace.' },
        min_length: { type: 'integer', minimum: 1, default: 5, description: 'Shortest word (in bytes) listed in long_words.' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: {
        long_words: { type: 'array', items: { type: 'string' }, description: 'Words of at least min_length bytes, in text order.' },
        words: { type: 'integer', minimum: 0 },
      },
      required: ['long_words', 'words'],
      additionalProperties: false,
    },
    resources: { cpu_cores: 0.5, memory_mb: 64, disk_mb: 0, timeout_ms: 5000, network_access: ['none'] },
    mounts: [],
    env: [],
  };
}

function mainC(name: string): string {
  return `/*
 * ${name}: counts the words of a text and lists the long ones.
 *
 * Input:  {"text": "...", "min_length": 5}      (min_length is optional)
 * Output: {"long_words": ["quick", ...], "words": 9}
 *
 * corral.h is the Corral C kit: corral_input() reads the JSON input,
 * a corral_writer writes the output, corral_fail() reports an error in the
 * shape Corral expects. \`corral build\` compiles and links it for you.
 */
#include <stdint.h>

#include "corral.h"

static int is_space(char c) {
  return c == ' ' || c == '\\t' || c == '\\n' || c == '\\v' || c == '\\f' || c == '\\r';
}

int main(void) {
  const corral_value *input = corral_input();
  static const char *const fields[] = {"text", "min_length", NULL};
  corral_only_fields(input, fields, NULL);

  size_t len;
  const char *text = corral_require_string(input, "text", &len);
  int64_t min_length = corral_get_int(input, "min_length", 5);
  if (min_length < 1) corral_fail("\\"min_length\\" must be at least 1");

  corral_writer out;
  corral_writer_init(&out);
  corral_begin_object(&out);
  corral_key(&out, "long_words");
  corral_begin_array(&out);
  uint64_t words = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && is_space(text[i])) i++;
    size_t start = i;
    while (i < len && !is_space(text[i])) i++;
    if (i == start) break;
    words++;
    if ((int64_t)(i - start) >= min_length) corral_string(&out, text + start, i - start);
  }
  corral_end_array(&out);
  corral_key(&out, "words");
  corral_uint(&out, words);
  corral_end_object(&out);
  corral_output(&out);
  return 0;
}
`;
}

function readme(name: string): string {
  return `# ${name}

A Corral tool written in C. It counts the words of a text and lists the
long ones; replace that with what your tool does.

\`\`\`
src/main.c                       the tool (uses corral.h, the Corral C kit)
tool-spec.json                   its contract: input and output schemas, resources
examples/example.input.json      an input ...
examples/example.expected.json   ... and the output it must give
\`\`\`

Build and check it:

\`\`\`sh
corral build .      # clang + wasi-libc -> ${name}.wasm (a wasi:cli component)
corral test .       # runs examples/*.input.json, compares with *.expected.json
corral run ${name} --tools . --input '{"text": "hello brave new world"}'
\`\`\`

\`corral build\` needs clang for WebAssembly (Debian/Ubuntu:
\`sudo apt-get install ${C_TOOLCHAIN_PACKAGES}\`). It compiles \`src/*.c\`
with the kit, so add files there as the tool grows.

The tool's contract: one JSON object on stdin, one JSON value on stdout.
On bad input it prints \`{"error":{"message":"..."}}\` and exits 1 —
\`corral_fail()\` does that. Keep \`tool-spec.json\`'s schemas in step with
the code: Corral checks every input and output against them.
`;
}

export const c: Language = {
  name: 'c',

  scaffold(name: string): Scaffold {
    return {
      'tool-spec.json': `${JSON.stringify(spec(name), null, 2)}\n`,
      'src/main.c': mainC(name),
      'README.md': readme(name),
      'examples/example.input.json': `${JSON.stringify(EXAMPLE_INPUT, null, 2)}\n`,
      'examples/example.expected.json': `${JSON.stringify(EXAMPLE_OUTPUT, null, 2)}\n`,
    };
  },

  async detect(dir: string): Promise<boolean> {
    return (await cSources(dir)).length > 0;
  },

  async build(ctx: BuildContext): Promise<void> {
    await buildC({ dir: ctx.dir, out: ctx.out, log: ctx.log });
  },
};
