#!/usr/bin/env node
/**
 * Builds the run-code engines from their npm packages into the tool
 * folders (the .wasm files are not committed: see README.md):
 *
 *   js/run-code-js.wasm      `corral build js`: componentize-js 0.19.3
 *                            (StarlingMonkey) around js/src/index.js
 *   ruby/run-code-ruby.wasm  @ruby/3.4-wasm-wasi's ruby+stdlib.wasm made
 *                            into a WASI command that runs ruby/runner.rb
 *
 * Usage: node wasm-tools/run-code/build.mjs [js] [ruby]   (default: both)
 * Needs `npm install` and `npm run build` first.
 *
 * Why Ruby needs a rewrite: the npm package ships Ruby as a *reactor* for
 * its JavaScript bridge (@ruby/wasm-wasi): it exports `_initialize`,
 * `ruby-init`, `rb-eval-string-protect`, … and imports 24 functions of the
 * JS interop ABI (`rb-js-abi-host`, `canonical_abi`), but has no `_start`.
 * A WASI host (Corral's preview1 host, wasmtime) runs commands. So this
 * script, with binaryen (already installed: jco depends on it):
 *   - replaces each JS-interop import by a function of the same type that
 *     traps, except the resource handle functions, which Ruby calls for
 *     every value it hands out: `resource_new_*` / `resource_get_*` return
 *     their argument and `resource_drop_*` does nothing;
 *   - adds `_start`: `_initialize`, `ruby-init(["ruby","-EUTF-8","--disable-gems","-e_=0"])`,
 *     `ruby-init-loadpath`, then `rb-eval-string-protect(runner.rb)`;
 *     `proc_exit(1)` when that raised.
 * The result imports only wasi_snapshot_preview1 and runs the same under
 * Corral and `wasmtime run run-code-ruby.wasm < input.json`.
 */
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const RUBY_PACKAGE = '@ruby/3.4-wasm-wasi';
const RUBY_WASM = 'dist/ruby+stdlib.wasm';

const wanted = process.argv.slice(2);
const engines = wanted.length > 0 ? wanted : ['js', 'ruby'];
for (const engine of engines) {
  const started = performance.now();
  if (engine === 'js') buildJs();
  else if (engine === 'ruby') await buildRuby();
  else {
    console.error(`unknown engine ${engine}: js or ruby`);
    process.exit(2);
  }
  console.log(`${engine}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

function buildJs() {
  const cli = join(ROOT, 'packages', 'node', 'bin', 'corral.js');
  const run = spawnSync(process.execPath, [cli, 'build', join(HERE, 'js')], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}

async function buildRuby() {
  const require = createRequire(join(ROOT, 'package.json'));
  // The package exports its .wasm files (./dist/*.wasm), not its package.json.
  const source = require.resolve(`${RUBY_PACKAGE}/${RUBY_WASM}`);
  // binaryen is a dependency of jco (as for `corral build`): found from there, never from PATH.
  const fromJco = createRequire(createRequire(require.resolve('@corral/wasi')).resolve('@bytecodealliance/jco'));
  const binaryen = (await import(fromJco.resolve('binaryen'))).default;
  const script = await readFile(join(HERE, 'ruby', 'runner.rb'), 'utf8');
  const out = join(HERE, 'ruby', 'run-code-ruby.wasm');
  console.log(
    `ruby: ${relative(ROOT, source)} -> ${relative(ROOT, out)} (binaryen ${fromJco('binaryen/package.json').version}; about a minute)`,
  );
  const bytes = rubyCommand(binaryen, await readFile(source), script);
  await writeFile(out, bytes);
  console.log(`ruby: ${(bytes.length / 2 ** 20).toFixed(1)} MiB`);
}

/** The reactor made into a command whose _start runs `script`; see the header. */
function rubyCommand(binaryen, reactor, script) {
  const mod = binaryen.readBinary(reactor);
  try {
    mod.setFeatures(binaryen.Features.All);
    let procExit;
    const foreign = [];
    for (let i = 0; i < mod.getNumFunctions(); i++) {
      const info = binaryen.getFunctionInfo(mod.getFunctionByIndex(i));
      if (!info.module) continue;
      if (info.module === 'wasi_snapshot_preview1') {
        if (info.base === 'proc_exit') procExit = info.name;
      } else foreign.push(info);
    }
    if (!procExit) throw new Error('the Ruby module does not import proc_exit');
    for (const f of foreign) {
      const handle = f.module === 'canonical_abi' && /^resource_(new|get)_/.test(f.base);
      const drop = f.module === 'canonical_abi' && /^resource_drop_/.test(f.base);
      mod.removeFunction(f.name);
      mod.addFunction(f.name, f.params, f.results, [], handle ? mod.local.get(0, binaryen.i32) : drop ? mod.nop() : mod.unreachable());
    }
    const exported = (prefix) => {
      for (let i = 0; i < mod.getNumExports(); i++) {
        const info = binaryen.getExportInfo(mod.getExportByIndex(i));
        if (info.name === prefix || info.name.startsWith(`${prefix}:`)) return info.value;
      }
      throw new Error(`the Ruby module does not export ${prefix}`);
    };

    // The strings, laid out after a list<string> of the arguments: [ptr,len]* then the bytes, each NUL-terminated.
    const encoder = new TextEncoder();
    // --disable-gems: RubyGems costs about a second per run, and the standard library loads without it.
    const args = ['ruby', '-EUTF-8', '--disable-gems', '-e_=0'].map((a) => encoder.encode(`${a}\0`));
    const strings = [...args, encoder.encode(`${script}\0`)];
    const offsets = [];
    let size = args.length * 8;
    for (const s of strings) {
      offsets.push(size);
      size += s.length;
    }
    size = (size + 7) & ~7;
    const blob = new Uint8Array(size);
    for (const [i, s] of strings.entries()) blob.set(s, offsets[i]);
    const words = new DataView(blob.buffer);

    const i32 = binaryen.i32;
    const base = () => mod.local.get(0, i32);
    const at = (offset) => mod.i32.add(base(), mod.i32.const(offset));
    const body = [
      mod.call(exported('_initialize'), [], binaryen.none),
      mod.local.set(
        0,
        mod.call(exported('cabi_realloc'), [mod.i32.const(0), mod.i32.const(0), mod.i32.const(8), mod.i32.const(size)], i32),
      ),
    ];
    args.forEach((arg, i) => {
      body.push(mod.i32.store(i * 8, 4, base(), at(offsets[i])));
      body.push(mod.i32.store(i * 8 + 4, 4, base(), mod.i32.const(arg.length)));
    });
    for (let o = args.length * 8; o < size; o += 8) {
      const v = words.getBigUint64(o, true);
      if (v !== 0n) body.push(mod.i64.store(o, 8, base(), mod.i64.const(Number(v & 0xffffffffn) | 0, Number(v >> 32n) | 0)));
    }
    const script_ = strings.length - 1;
    body.push(
      mod.call(exported('ruby-init'), [base(), mod.i32.const(args.length)], binaryen.none),
      mod.call(exported('ruby-init-loadpath'), [], binaryen.none),
      // Returns a pointer to (value handle, state); state 0 is success.
      mod.local.set(1, mod.call(exported('rb-eval-string-protect'), [at(offsets[script_]), mod.i32.const(strings[script_].length)], i32)),
      mod.if(mod.i32.load(4, 4, mod.local.get(1, i32)), mod.call(procExit, [mod.i32.const(1)], binaryen.none)),
    );
    mod.addFunction('corral_start', binaryen.none, binaryen.none, [i32, i32], mod.block(null, body));
    mod.removeExport('_initialize');
    mod.addFunctionExport('corral_start', '_start');
    if (!mod.validate()) throw new Error('binaryen could not validate the rewritten Ruby module');
    return mod.emitBinary();
  } finally {
    mod.dispose();
  }
}
