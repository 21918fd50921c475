/**
 * Fixtures for the browser tests, fetched from the vitest dev server (the
 * browser project's root is the repository root), and a diff made by real
 * git with its `git diff --numstat`.
 */
import type { BrowserCorral, Tool } from '@corral/browser';

/** Bytes of a file under the repository root, e.g. '/wasm-tools/diff-summary/diff-summary.wasm'. */
export async function fetchBytes(path: string): Promise<Uint8Array> {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Register the tool in a fixture folder (its tool-spec.json and the .wasm it names). */
export async function registerFolder(corral: BrowserCorral, dir: string): Promise<Tool> {
  const specText = new TextDecoder().decode(await fetchBytes(`${dir}/tool-spec.json`));
  const spec = JSON.parse(specText) as { component: string };
  return corral.register(specText, await fetchBytes(`${dir}/${spec.component}`), `${dir}/tool-spec.json`);
}

/**
 * `git diff --cached -M` in a scratch repository: a file added, one deleted,
 * a binary change, a two-hunk edit and a rename with an edit.
 */
export const REAL_DIFF = [
  'diff --git a/README.md b/README.md',
  'new file mode 100644',
  'index 0000000..5632bb9',
  '--- /dev/null',
  '+++ b/README.md',
  '@@ -0,0 +1,3 @@',
  '+# Corral',
  '+',
  '+Sandboxed tools.',
  'diff --git a/docs/old.md b/docs/old.md',
  'deleted file mode 100644',
  'index 12a6c0d..0000000',
  '--- a/docs/old.md',
  '+++ /dev/null',
  '@@ -1,4 +0,0 @@',
  '-# Notes',
  '-',
  '-Old notes that will be removed.',
  '-Second line.',
  'diff --git a/logo.bin b/logo.bin',
  'index 0f49c4a..0d4028e 100644',
  'Binary files a/logo.bin and b/logo.bin differ',
  'diff --git a/src/math.js b/src/math.js',
  'index 85756d3..730ce5c 100644',
  '--- a/src/math.js',
  '+++ b/src/math.js',
  '@@ -1,3 +1,4 @@',
  '+// Arithmetic helpers.',
  ' export function add(a, b) {',
  '   return a + b;',
  ' }',
  '@@ -5,3 +6,7 @@ export function add(a, b) {',
  ' export function sub(a, b) {',
  '   return a - b;',
  ' }',
  '+',
  '+export function mul(a, b) {',
  '+  return a * b;',
  '+}',
  'diff --git a/src/config.js b/src/settings.js',
  'similarity index 96%',
  'rename from src/config.js',
  'rename to src/settings.js',
  'index d443217..9a6f032 100644',
  '--- a/src/config.js',
  '+++ b/src/settings.js',
  '@@ -12,7 +12,7 @@ line 11 of the config loader',
  ' line 12 of the config loader',
  ' line 13 of the config loader',
  ' line 14 of the config loader',
  '-line 15 of the config loader',
  '+line fifteen of the config loader',
  ' line 16 of the config loader',
  ' line 17 of the config loader',
  ' line 18 of the config loader',
  '',
].join('\n');

/** `git diff --cached -M --numstat` of the same change ('-' for binary). */
export const REAL_NUMSTAT = `3\t0\tREADME.md
0\t4\tdocs/old.md
-\t-\tlogo.bin
5\t0\tsrc/math.js
1\t1\tsrc/{config.js => settings.js}`;

/** Parse numstat lines into path → [additions, deletions] (binary files count 0, as diff-summary reports them). */
export function parseNumstat(numstat: string): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const line of numstat.trim().split('\n')) {
    const [add, del, path] = line.split('\t') as [string, string, string];
    // 'src/{config.js => settings.js}' names the file after the rename.
    const after = path.replace(/\{[^}]* => ([^}]*)\}/, '$1');
    out.set(after, [add === '-' ? 0 : Number(add), del === '-' ? 0 : Number(del)]);
  }
  return out;
}
