/**
 * `corral exec` (issue 9): a whole command, start to exit, against the same
 * preview1 module under node:wasi started the same way (a fresh `node`
 * process); and bytes piped through a program (`shell cat`), where every
 * chunk crosses from the sandbox worker to the host's stdout.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, median, quantile, sample } from './stats.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const SHELL = join(ROOT, 'test/fixtures/exec/shell.wasm');
const SHELL_COMPONENT = join(ROOT, 'test/fixtures/exec/shell.component.wasm');

/** The reference: the same module, the same argv, under node:wasi in a fresh process. */
const NODE_WASI = `
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';
const [file, ...args] = process.argv.slice(2);
const wasi = new WASI({ version: 'preview1', args: ['shell.wasm', ...args], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(readFileSync(file));
process.exitCode = wasi.start(await WebAssembly.instantiate(module, wasi.getImportObject()));
`;

export async function benchExec(options: { quick: boolean }): Promise<string[][]> {
  const scratch = mkdtempSync(join(tmpdir(), 'corral-bench-exec-'));
  try {
    const reference = join(scratch, 'node-wasi.mjs');
    writeFileSync(reference, NODE_WASI);
    const runs = options.quick ? 5 : 20;
    const command = (argv: string[], input?: Buffer) => () =>
      execFileSync(process.execPath, argv, { input: input ?? '', maxBuffer: 256 * 2 ** 20, stdio: ['pipe', 'pipe', 'ignore'] });
    const nodeArgs = await sample(runs, command(['--no-warnings', reference, SHELL, 'args', 'x']), 2);
    const execArgs = await sample(runs, command([CLI, 'exec', SHELL, '--', 'args', 'x']), 2);
    // The component is transpiled on its first run and cached; later runs load the cache.
    const execComponent = await sample(runs, command([CLI, 'exec', SHELL_COMPONENT, '--', 'args', 'x']), 2);

    const megabytes = options.quick ? 16 : 64;
    const input = Buffer.alloc(megabytes * 2 ** 20, 'corral ');
    const pipeRuns = options.quick ? 2 : 5;
    const nodeCat = await sample(pipeRuns, command(['--no-warnings', reference, SHELL, 'cat'], input), 1);
    const execCat = await sample(pipeRuns, command([CLI, 'exec', SHELL, '--', 'cat'], input), 1);
    const rate = (ms: number) => `${(megabytes / (ms / 1000)).toFixed(0)} MB/s`;
    const ratio = (a: number[], b: number[]) => `${(median(a) / median(b)).toFixed(2)}x`;
    return [
      ['node:wasi in a fresh process: `shell args x` (baseline)', fmt(median(nodeArgs)), fmt(quantile(nodeArgs, 0.99)), '1.00x'],
      ['`corral exec shell.wasm -- args x` (preview1)', fmt(median(execArgs)), fmt(quantile(execArgs, 0.99)), ratio(execArgs, nodeArgs)],
      [
        '`corral exec shell.component.wasm -- args x` (cached transpile)',
        fmt(median(execComponent)),
        fmt(quantile(execComponent, 0.99)),
        ratio(execComponent, nodeArgs),
      ],
      [
        `node:wasi: ${megabytes} MiB through \`shell cat\` (baseline)`,
        `${fmt(median(nodeCat))} (${rate(median(nodeCat))})`,
        fmt(quantile(nodeCat, 0.99)),
        '1.00x',
      ],
      [
        `\`corral exec\`: ${megabytes} MiB through \`shell cat\``,
        `${fmt(median(execCat))} (${rate(median(execCat))})`,
        fmt(quantile(execCat, 0.99)),
        ratio(execCat, nodeCat),
      ],
    ];
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
