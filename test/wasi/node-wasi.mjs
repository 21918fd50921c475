// Runs one program under node:wasi, the reference host, in a process of its
// own (matrix.mjs starts it): node:wasi runs the guest on the main thread
// and some of its calls block for good (poll_oneoff on an absolute
// monotonic clock), which only killing a process can end.
//   node node-wasi.mjs PROGRAM.wasm GUEST HOSTDIR ARG...
// stdin, stdout and stderr are the program's; the environment comes as
// JSON in CORRAL_CONFORMANCE_ENV; the exit status is the program's.
import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';

const [wasm, guest, folder, ...args] = process.argv.slice(2);
const wasi = new WASI({
  version: 'preview1',
  args,
  env: JSON.parse(process.env.CORRAL_CONFORMANCE_ENV ?? '{}'),
  preopens: { [guest]: folder },
  stdin: 0,
  stdout: 1,
  stderr: 2,
  returnOnExit: true,
});
const instance = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(wasm)), wasi.getImportObject());
process.exitCode = wasi.start(instance);
