/**
 * `corral exec` on a WASI program the team did not write: Yosys, the
 * hardware synthesis suite, as YoWASP ships it on npm (@yowasp/yosys, a
 * wasi-sdk preview1 command; pinned in package.json). What is checked is
 * what Yosys documents: its version banner (`yosys -V`, "Yosys X.Y (git
 * sha1 …)", X.Y matching the package's X.Y per YoWASP's README) and the
 * `stat` report of a synthesised design — here a 4-bit counter with a
 * synchronous reset, which must come out as four reset flip-flops plus
 * the adder's gates. `synth -noabc`: Yosys's ABC step moves a file into
 * fd 1 with fd_renumber onto a closed fd, which preview1 answers with
 * EBADF (the official suite and wasmtime agree; only jco's adapter allows
 * it), so that step needs a component build of Yosys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const BUNDLE = fileURLToPath(import.meta.resolve('@yowasp/yosys'));
const YOSYS = join(dirname(BUNDLE), 'yosys.core.wasm');
// The package's exports do not include package.json; it sits one folder above gen/.
const PACKAGE_JSON = join(dirname(BUNDLE), '..', 'package.json');

const COUNTER = `module counter(input clk, input rst, output reg [3:0] count);
  always @(posedge clk)
    if (rst) count <= 4'd0;
    else count <= count + 4'd1;
endmodule
`;

type Tree = { [name: string]: string | Uint8Array | Tree };
async function writeTree(dir: string, tree: Tree): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, value] of Object.entries(tree)) {
    if (typeof value === 'string' || value instanceof Uint8Array) await writeFile(join(dir, name), value);
    else await writeTree(join(dir, name), value);
  }
}

function corralExec(args: string[]) {
  return promisify(execFile)(process.execPath, [CLI, 'exec', ...args], { cwd: ROOT, maxBuffer: 16 * 2 ** 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corral-yosys-'));
  // Yosys's techmap and cell libraries, which the package keeps as a tree of strings.
  const { filesystem } = (await import(join(dirname(BUNDLE), 'resources-yosys.js'))) as { filesystem: { share: Tree } };
  await writeTree(join(dir, 'share'), filesystem.share);
  await writeTree(join(dir, 'work'), { 'counter.v': COUNTER });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('a third-party WASI program under corral exec (Yosys from @yowasp/yosys)', () => {
  it('prints its documented version banner', async () => {
    const run = await corralExec([YOSYS, '--', '-V']);
    expect(run.code).toBe(0);
    const { version } = JSON.parse(await readFile(PACKAGE_JSON, 'utf8')) as { version: string };
    const [major, minor] = version.split('.');
    expect(run.stdout).toMatch(new RegExp(`^Yosys ${major}\\.${minor} \\(git sha1 [0-9a-f]+, .*\\)\\n$`));
  });

  it('synthesises a counter from a mounted folder: four flip-flops', async () => {
    const run = await corralExec([
      YOSYS,
      '--dir',
      `${join(dir, 'share')}::/share:ro`,
      '--dir',
      `${join(dir, 'work')}::/work`,
      '--',
      '-q',
      '-p',
      'read_verilog /work/counter.v; synth -top counter -noabc; tee -q -o /work/stat.txt stat; write_json /work/counter.json',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const stat = await readFile(join(dir, 'work/stat.txt'), 'utf8');
    expect(stat).toMatch(/=== counter ===/);
    expect(stat).toMatch(/\$_SDFF_PP0_\s+4\n/);
    const netlist = JSON.parse(await readFile(join(dir, 'work/counter.json'), 'utf8'));
    expect(Object.keys(netlist.modules)).toEqual(['counter']);
    expect(netlist.modules.counter.ports.count.bits).toHaveLength(4);
  });

  it('fails plainly when it is not given the folder it needs', async () => {
    const run = await corralExec([YOSYS, '--', '-q', '-p', 'read_verilog /work/counter.v']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/ERROR: File `\/work\/counter\.v' not found/);
  });
});
