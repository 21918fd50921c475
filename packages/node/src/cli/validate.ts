/** `corral validate`: a tool-spec.json checked against the tool contract, every problem listed. */
import { readFile } from 'node:fs/promises';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, parse, type Cli } from './shared.js';

export const help = `corral validate SPEC

Check a tool-spec.json against Corral's tool contract and list every problem.`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length !== 1) throw new UsageError('name one spec file, e.g. corral validate tool-spec.json');
  const path = positionals[0]!;
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new CorralError(ErrorCodes.REGISTRATION, `Cannot read ${path} as JSON: ${reason}`, { path });
  }
  const { validateSpec } = await import('@corral/core');
  const verdict = validateSpec(raw);
  if (values.json) print(JSON.stringify(verdict.ok ? { ok: true } : { ok: false, problems: verdict.problems }, null, 2));
  else if (verdict.ok) print(`${path}: valid (${verdict.spec.name}@${verdict.spec.version})`);
  else {
    print(`${path}: ${verdict.problems.length} problem${verdict.problems.length === 1 ? '' : 's'}`);
    // Paths and messages quote the spec's own keys and values: keep each problem on its line.
    for (const p of verdict.problems) print(`  ${forTerminal(`${p.path}: ${p.message}`, { oneLine: true })}`);
  }
  return verdict.ok ? EXIT_OK : EXIT_TOOL_FAILED;
}
