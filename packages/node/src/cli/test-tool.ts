/**
 * `corral test [DIR]`: run a tool's examples through Corral (the same
 * sandbox and checks as `corral run`) and compare each output with the
 * expected one, like snapshot tests.
 */
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { InvokeResult } from '@corral/core';
import { folderAsGiven } from '../folders.js';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, UsageError, indent, parse, prepareProgress, type Cli } from './shared.js';

export const help = `corral test [DIR] [--update]

Run each examples/NAME.input.json of the tool in DIR (default: the current
folder) through Corral and compare its output with examples/NAME.expected.json
(JSON equality: key order and spacing do not matter). A tool that fails
answers {"error": {...}}: the message it printed, or Corral's code and
message (E_INPUT_VALIDATION, ...), so failures can be examples too.
  --update   write what the tool answers now as the expected files

Nothing is recorded in the snapshot store: examples are not agents' calls.
A folder examples/workspace/ is bound, read-only, to a /workspace mount the
tool declares (tools that search or read a folder have examples too).

Exit status: 0 every example passed, 1 one failed (or the tool does not
load), 2 misuse or no examples.`;

export async function command(args: string[], { print, fail, io }: Cli): Promise<number> {
  const { values, positionals } = parse(args, { update: { type: 'boolean' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 1) throw new UsageError('test one tool folder at a time, e.g. corral test word-count');
  // `link/..` is the folder above the link's target, where `corral init --dir link/../x` made the tool.
  const dir = await folderAsGiven(positionals[0] ?? '.');
  const specPath = join(dir, 'tool-spec.json');
  const isFile = await stat(specPath).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) throw new UsageError(`${dir} has no tool-spec.json: is it a tool folder? (corral init NAME creates one)`);

  const examplesDir = join(dir, 'examples');
  const files = await readdir(examplesDir).catch(() => [] as string[]);
  const names = files
    .filter((f) => f.endsWith('.input.json'))
    .map((f) => f.slice(0, -'.input.json'.length))
    .sort();
  // An expected answer with no input beside it is a renamed or misspelled example: say so, not skip it silently.
  for (const f of files.filter((f) => f.endsWith('.expected.json') && !names.includes(f.slice(0, -'.expected.json'.length))))
    io.stderr.write(
      `corral: warning: ${forTerminal(join(relative(process.cwd(), examplesDir) || examplesDir, f), { oneLine: true })} has no .input.json beside it; it is not run\n`,
    );
  if (names.length === 0) {
    fail(`no examples: add ${relative(process.cwd(), examplesDir) || examplesDir}/NAME.input.json and NAME.expected.json.`);
    return EXIT_USAGE;
  }

  const [{ Corral }, { loadToolFiles }] = await Promise.all([import('../corral.js'), import('../tool-folder.js')]);
  // No store: example runs would bury the user's real calls in `corral snapshots list`.
  const corral = await Corral.create({ bundled: false, store: false, size: 1, ...prepareProgress(io.stderr) });
  try {
    let tool;
    try {
      tool = await loadToolFiles(corral.registry, specPath);
    } catch (err) {
      const message = (err as Error).message;
      fail(`${message}${/does not exist/.test(message) ? ` (run: corral build ${relative(process.cwd(), dir) || '.'})` : ''}`);
      return EXIT_TOOL_FAILED;
    }
    // examples/workspace/ is the folder a tool with a /workspace mount sees, read-only.
    const workspace = join(examplesDir, 'workspace');
    const hasWorkspace =
      (tool.spec.mounts ?? []).some((m) => m.guest === '/workspace') &&
      (await stat(workspace).then(
        (s) => s.isDirectory(),
        () => false,
      ));
    const mounts = hasWorkspace
      ? [{ guest: '/workspace', access: 'read' as const, source: { kind: 'host' as const, path: workspace } }]
      : [];
    io.stderr.write(`Testing ${tool.spec.name}@${tool.spec.version}: ${names.length} example${names.length === 1 ? '' : 's'}\n`);
    let failed = 0;
    for (const name of names) {
      const inputPath = join(examplesDir, `${name}.input.json`);
      const expectedPath = join(examplesDir, `${name}.expected.json`);
      const input = await readJson(inputPath);
      if (!input.ok) {
        failed++;
        print(`FAIL ${name}: ${input.message}`);
        continue;
      }
      const started = performance.now();
      const actual = answer(await corral.invokeTool(tool, input.value, { mounts }));
      const ms = Math.round(performance.now() - started);
      if (values.update) {
        await writeFile(expectedPath, `${JSON.stringify(actual, null, 2)}\n`);
        print(`UPDATED ${name} (${ms} ms)`);
        continue;
      }
      const expected = await readJson(expectedPath);
      if (!expected.ok) {
        failed++;
        print(`FAIL ${name}: ${expected.message}${expected.missing ? ' (corral test --update writes it)' : ''}`);
        continue;
      }
      const differences = diff(expected.value, actual, '$');
      if (differences.length === 0) {
        print(`PASS ${name} (${ms} ms)`);
        continue;
      }
      failed++;
      print(`FAIL ${name} (${ms} ms)`);
      const shown = differences.slice(0, 20);
      if (differences.length > shown.length) shown.push(`... and ${differences.length - shown.length} more`);
      print(indent(shown.join('\n')));
      print(indent(`expected: ${JSON.stringify(expected.value)}\nactual:   ${JSON.stringify(actual)}`));
    }
    if (values.update) return EXIT_OK;
    const passed = names.length - failed;
    print(`${passed} passed, ${failed} failed`);
    return failed === 0 ? EXIT_OK : EXIT_TOOL_FAILED;
  } finally {
    await corral.close();
  }
}

/** What the tool answered: its output, or {"error": ...} as it printed it (else Corral's code and message). */
export function answer(result: InvokeResult): unknown {
  if (result.ok) return result.output;
  const err = result.error!;
  const toolError = (err.details as { tool_error?: unknown } | undefined)?.tool_error;
  if (toolError && typeof toolError === 'object') return { error: toolError };
  return { error: { code: err.code, message: err.message } };
}

async function readJson(path: string): Promise<{ ok: true; value: unknown } | { ok: false; message: string; missing?: boolean }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    return {
      ok: false,
      missing,
      message: `${relative(process.cwd(), path)} ${missing ? 'does not exist' : `cannot be read: ${(err as Error).message}`}`,
    };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, message: `${relative(process.cwd(), path)} is not JSON: ${(err as Error).message}` };
  }
}

/**
 * Where two JSON values differ, one line per difference, by path
 * ($.files[2].name). Objects compare by key whatever the order; arrays by
 * position.
 */
export function diff(expected: unknown, actual: unknown, path: string): string[] {
  const show = (v: unknown) => forTerminal(JSON.stringify(v) ?? 'undefined', { oneLine: true });
  const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (kind(expected) !== kind(actual)) return [`${path}: expected ${show(expected)}, got ${show(actual)}`];
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const lines: string[] = [];
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      const at = `${path}[${i}]`;
      if (i >= actual.length) lines.push(`${at}: missing (expected ${show(expected[i])})`);
      else if (i >= expected.length) lines.push(`${at}: unexpected ${show(actual[i])}`);
      else lines.push(...diff(expected[i], actual[i], at));
    }
    return lines;
  }
  if (kind(expected) === 'object') {
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const lines: string[] = [];
    const keys = [...new Set([...Object.keys(e), ...Object.keys(a)])].sort();
    for (const key of keys) {
      const at = /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!Object.hasOwn(a, key)) lines.push(`${at}: missing (expected ${show(e[key])})`);
      else if (!Object.hasOwn(e, key)) lines.push(`${at}: unexpected ${show(a[key])}`);
      else lines.push(...diff(e[key], a[key], at));
    }
    return lines;
  }
  return Object.is(expected, actual) || expected === actual ? [] : [`${path}: expected ${show(expected)}, got ${show(actual)}`];
}
