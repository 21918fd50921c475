/**
 * `corral validate` on a terminal says it is preparing the component the
 * spec names; that name is the spec's "component", which a hostile tool
 * folder fills with escape sequences (the file exists under that name). It
 * was printed raw: an OSC retitled the window, and OSC 52 writes the
 * clipboard. Run on a pty (util-linux `script`), in a child process.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const CLI = resolve(import.meta.dirname, '../../packages/node/bin/corral.js');
const FIXTURE = resolve(import.meta.dirname, '../fixtures/validate/with-realloc.wasm');
const root = mkdtempSync(join(tmpdir(), 'corral-validate-escape-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('the component name in the progress line is escaped', async () => {
  const name = '\u001b]0;owned\u0007\u001b[2J\u009b31mx.wasm';
  copyFileSync(FIXTURE, join(root, name));
  const spec = join(root, 'tool-spec.json');
  writeFileSync(
    spec,
    JSON.stringify({ name: 'esc', version: '1.0.0', description: 'x', component: name, input_schema: {}, output_schema: {} }),
  );
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const out = await new Promise<string>((done) =>
    execFile(
      'script',
      ['-qec', [process.execPath, CLI, 'validate', spec].map(quote).join(' '), '/dev/null'],
      {
        env: {
          ...process.env,
          CORRAL_STORE: join(root, 'snapshots.db'),
          CORRAL_POLICY: join(root, 'policy.json'),
          CORRAL_CACHE_DIR: join(root, 'cache'),
        },
        timeout: 120_000,
      },
      (_err, stdout) => done(stdout),
    ),
  );
  expect(out).toMatch(/preparing \\u001b\]0;owned\\u0007\\u001b\[2J\\u009b31mx\.wasm to check it/);
  for (const raw of ['\u001b', '\u0007', '\u009b']) expect(out).not.toContain(raw);
});
