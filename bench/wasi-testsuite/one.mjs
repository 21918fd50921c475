// One wasi-testsuite program on one host; prints {"ok", "exit", "stdout"} as JSON.
// Used by run.mjs, one child process per test.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { WASI } from 'node:wasi';
import { ComponentRunner, Preview1Runner, transpileComponent } from '@corral/wasi';
import { hostMountOpeners } from '@corral/node';

const [mode, test] = process.argv.slice(2);
const configPath = test.replace(/\.wasm$/, '.json');
const config = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) : {};
const root = config.root ? mkdtempSync(join(tmpdir(), 'wasi-testsuite-')) : undefined;
if (root) cpSync(join(dirname(test), config.root), root, { recursive: true, verbatimSymlinks: true });
const args = [basename(test), ...(config.args ?? [])];
const env = config.env ?? {};
const bytes = new Uint8Array(readFileSync(test));
const CLI = new URL('../../packages/node/bin/corral.js', import.meta.url).pathname;
const ADAPTER =
  process.env.CORRAL_ADAPTER ??
  new URL('../../node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.command.wasm', import.meta.url);

let exit;
let stdout = '';
try {
  if (mode === 'exec') {
    const flags = [...(root ? ['--dir', `${root}::/`] : []), ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`])];
    const run = spawnSync(process.execPath, [CLI, 'exec', test, ...flags, '--', ...(config.args ?? [])], { input: '', encoding: 'utf8' });
    exit = run.status;
    stdout = run.stdout;
  } else if (mode === 'node') {
    const out = join(tmpdir(), `wasi-testsuite-out-${process.pid}`);
    const fd = openSync(out, 'w');
    const wasi = new WASI({ version: 'preview1', args, env, preopens: root ? { '/': root } : {}, stdout: fd, returnOnExit: true });
    exit = wasi.start(await WebAssembly.instantiate(await WebAssembly.compile(bytes), wasi.getImportObject()));
    closeSync(fd);
    stdout = readFileSync(out, 'utf8');
    rmSync(out);
  } else {
    const request = {
      toolName: basename(test),
      stdin: new Uint8Array(),
      args,
      env,
      mounts: root ? [{ guest: '/', access: 'read-write', source: { kind: 'host', path: root } }] : [],
      outputLimitBytes: 1 << 24,
      memoryLimitBytes: 512 << 20,
      diskLimitBytes: 256 << 20,
    };
    let result;
    if (mode === 'p1') result = await new Preview1Runner({ mountOpeners: hostMountOpeners() }).run('test', bytes, request);
    else {
      const { componentNew } = await import('@bytecodealliance/jco');
      const component = await componentNew(bytes, [['wasi_snapshot_preview1', readFileSync(ADAPTER)]]);
      result = await new ComponentRunner({ mountOpeners: hostMountOpeners() }).run('test', await transpileComponent(component), request);
    }
    exit = result.exitCode;
    stdout = new TextDecoder().decode(result.stdout);
  }
} catch (err) {
  exit = 'threw';
  stdout = String(err?.message ?? err);
} finally {
  if (root) rmSync(root, { recursive: true, force: true });
}
const ok = exit === (config.exit_code ?? 0) && (config.stdout === undefined || stdout === config.stdout);
console.log(JSON.stringify({ ok, exit, stdout: stdout.slice(0, 300) }));
