// Prints Corral's WASI conformance matrix as a Markdown table: one row per
// behaviour (matrix.mjs), one column per host, each cell "pass" when the
// run printed and exited exactly as the specification says (expected/),
// then, for each failing cell, the first line where it differs.
//
//   npm run build && node test/wasi/table.mjs            # print it
//   node test/wasi/table.mjs --write                      # also update CONFORMANCE.md
//   node test/wasi/table.mjs --no-jco                     # skip the (slow) jco run column
//
// The jco run column runs each program as a component under `jco run`
// (jco's own preview2-shim for Node), over a host folder only.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CASES, HOSTS, expectedExit, expectedStdout, hostFolder, run } from './matrix.mjs';

const ROOT = new URL('../../', import.meta.url);
const JCO = 'jco run/host';
const withJco = !process.argv.includes('--no-jco');
const columns = withJco ? [...HOSTS, JCO] : HOSTS;

async function runJco(testCase) {
  const name = testCase.program ?? testCase.id;
  const dir = mkdtempSync(join(tmpdir(), 'corral-wasi-jco-'));
  const folder = hostFolder();
  try {
    writeFileSync(join(dir, `${name}.wasm`), readFileSync(new URL(`test/wasi/programs/${name}.component.wasm`, ROOT)));
    writeFileSync(join(dir, 'in'), testCase.stdin ?? '');
    const fds = [openSync(join(dir, 'in'), 'r'), openSync(join(dir, 'out'), 'w'), openSync(join(dir, 'err'), 'w')];
    let exit;
    try {
      const child = spawn(
        process.execPath,
        [
          new URL('node_modules/@bytecodealliance/jco/src/jco.js', ROOT).pathname,
          'run',
          '--jco-import',
          new URL('jco-preopens.mjs', import.meta.url).pathname,
          join(dir, `${name}.wasm`),
          ...(testCase.args ?? []),
        ],
        { stdio: fds, env: { ...(testCase.env ?? {}), CORRAL_CONFORMANCE_FOLDER: folder }, timeout: 60_000, killSignal: 'SIGKILL' },
      );
      exit = await new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', (code, signal) => resolve(signal ? `killed (${signal})` : code));
      });
    } finally {
      for (const fd of fds) closeSync(fd);
    }
    return { exit, stdout: readFileSync(join(dir, 'out'), 'utf8'), stderr: readFileSync(join(dir, 'err'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The first difference between a run and the specification, in a few words. */
function difference(testCase, host, outcome) {
  const want = expectedStdout(testCase).split('\n');
  const got = outcome.stdout.split('\n');
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    if (want[i] !== got[i]) {
      const ended = i >= got.length - 1 && !got[i];
      const line = ended ? `(output ends, exit ${outcome.exit})` : `\`${got[i]}\``;
      return `line ${i + 1}: ${line}, spec: ${want[i] === undefined ? '(no more output)' : `\`${want[i]}\``}`;
    }
  }
  return `exit ${outcome.exit}, spec: ${expectedExit(testCase, host)}`;
}

const rows = [];
const notes = [];
// One case at a time, its hosts side by side (the jco column is the slow one).
for (const testCase of CASES) {
  const outcomes = await Promise.all(columns.map((host) => (host === JCO ? runJco(testCase) : run(testCase, host))));
  const cells = columns.map((host, i) => {
    const o = outcomes[i];
    const ok = o.exit === expectedExit(testCase, host) && o.stdout === expectedStdout(testCase);
    if (!ok) notes.push(`- \`${testCase.id}\` on ${host}: ${difference(testCase, host, o)}`);
    return ok ? 'pass' : '**fail**';
  });
  rows.push(`| \`${testCase.id}\`: ${testCase.title} | ${cells.join(' | ')} |`);
  process.stderr.write('.');
}
process.stderr.write('\n');

const table = [
  `| behaviour | ${columns.join(' | ')} |`,
  `|---|${columns.map(() => '---').join('|')}|`,
  ...rows,
  '',
  'First difference from the specification, per failing cell:',
  '',
  ...notes,
].join('\n');
console.log(table);

if (process.argv.includes('--write')) {
  const file = new URL('CONFORMANCE.md', ROOT);
  const doc = readFileSync(file, 'utf8');
  const start = '<!-- table:start -->';
  const end = '<!-- table:end -->';
  const a = doc.indexOf(start);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) throw new Error(`CONFORMANCE.md needs ${start} and ${end}`);
  writeFileSync(file, `${doc.slice(0, a + start.length)}\n${table}\n${doc.slice(b)}`);
}
