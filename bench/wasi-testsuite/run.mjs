#!/usr/bin/env node
// Runs the official WASI test suite (WebAssembly/wasi-testsuite, its
// wasm32-wasip1 programs) on one host and prints the tests that fail and a
// count. The suite is not part of this repository: point at its `tests`
// folder (the branch prod/testsuite-base has the built programs).
//
//   node bench/wasi-testsuite/run.mjs TESTS_DIR [p1|exec|comp|node]   (default p1)
//
// `comp` wraps each module into a component with jco's preview1 adapter
// (node_modules' jco), or with the adapter file named by $CORRAL_ADAPTER.
//
// Each test runs in its own child process (one.mjs), killed after 20 s:
// the test's `root` folder is copied fresh and preopened as `/`, with its
// `args` and `env`; it passes when its exit code and stdout (when given)
// are what its .json says. CONFORMANCE.md has the counts this measured.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const [testsDir, mode = 'p1'] = process.argv.slice(2);
if (!testsDir || !existsSync(testsDir) || !['p1', 'exec', 'comp', 'node'].includes(mode)) {
  console.error('usage: node bench/wasi-testsuite/run.mjs TESTS_DIR [p1|exec|comp|node]');
  process.exit(2);
}
const one = new URL('./one.mjs', import.meta.url).pathname;
const programs = [];
for (const language of readdirSync(testsDir).sort()) {
  const dir = join(testsDir, language, 'testsuite', 'wasm32-wasip1');
  if (!existsSync(dir)) continue;
  for (const file of readdirSync(dir).sort())
    if (file.endsWith('.wasm')) programs.push({ name: `${language}/${file.slice(0, -5)}`, path: join(dir, file) });
}
let passed = 0;
for (const { name, path } of programs) {
  let outcome;
  try {
    outcome = JSON.parse(
      execFileSync(process.execPath, ['--no-warnings', one, mode, path], { encoding: 'utf8', timeout: 20_000 }).trim().split('\n').at(-1),
    );
  } catch (err) {
    outcome = { ok: false, exit: err.signal ? 'timeout' : 'crashed', stdout: '' };
  }
  if (outcome.ok) passed++;
  else console.log(`FAIL ${name}: exit ${outcome.exit}${outcome.stdout ? ` ${JSON.stringify(outcome.stdout.slice(0, 200))}` : ''}`);
}
console.log(`${mode}: ${passed} / ${programs.length} passed`);
