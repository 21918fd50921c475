/** `corral validate`: a tool-spec.json checked against the tool contract, and the wasm it names, every problem listed. */
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, fileFlag, parse, type Cli } from './shared.js';

export const help = `corral validate SPEC|DIR [--json]

Check a tool-spec.json against Corral's tool contract, and the wasm file it
names the way the runtime will load it: the file exists and is WebAssembly,
its kind matches "kind", it imports only what Corral provides (WASI 0.2's
cli, clocks, filesystem, io and random for components; wasi_snapshot_preview1
for modules), a component made from a preview1 module exports cabi_realloc,
and it transpiles, compiles and instantiates (its entry point is not called)
in a sandbox worker, within resources.timeout_ms (at most 30 s).
Every problem is listed by its place in the spec, with a hint.

  --json    print { ok, problems: [{ path, message, hint? }] }

Exit status: 0 valid, 1 any problem, 2 the command was misused.`;

interface Problem {
  path: string;
  message: string;
  hint?: string;
}

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length !== 1) throw new UsageError('name one spec file, e.g. corral validate tool-spec.json');
  // A tool folder means its tool-spec.json, as for build and test; a spec file that is not there
  // is a mistyped argument (exit 2), as for every command.
  const given = positionals[0]!;
  const path = fileFlag('SPEC', isFolder(given) ? join(given, 'tool-spec.json') : given);
  if (path.endsWith('.wasm')) {
    throw new UsageError(`${path} is the tool's wasm; validate takes its tool-spec.json (or the tool's folder), which names the wasm.`, {
      argument: path,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse((await readFile(path, 'utf8')).replace(/^\uFEFF/, ''));
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new CorralError(ErrorCodes.REGISTRATION, `Cannot read ${path} as JSON: ${reason}`, { path });
  }
  const [{ validateSpec }, { checkToolWasm }] = await Promise.all([import('@corral/core'), import('../wasm-check.js')]);
  const verdict = validateSpec(raw);
  const problems: Problem[] = verdict.ok ? [] : [...verdict.problems];
  // The wasm is looked at even when the rest of the spec has problems, so one pass shows everything
  // to fix; not when "component" itself is one (missing, or a path that climbs out of the folder).
  if (!problems.some((p) => p.path === '/component')) problems.push(...(await checkToolWasm(raw, path)));
  const ok = problems.length === 0;

  if (values.json) print(JSON.stringify(ok ? { ok: true } : { ok: false, problems }, null, 2));
  else if (ok && verdict.ok) print(`${path}: valid (${verdict.spec.name}@${verdict.spec.version})`);
  else {
    print(`${path}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
    // Paths and messages quote the spec's own keys and values: keep each problem on its line.
    for (const p of problems) {
      print(`  ${forTerminal(`${p.path}: ${p.message}`, { oneLine: true })}`);
      if (p.hint) print(`    ${forTerminal(`hint: ${p.hint}`, { oneLine: true })}`);
    }
  }
  return ok ? EXIT_OK : EXIT_TOOL_FAILED;
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
