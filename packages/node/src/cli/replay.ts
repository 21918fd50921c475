/**
 * `corral replay ID`: re-run a recorded call and say whether it still
 * does the same.
 */
import { CorralError, ErrorCodes, MemoryStore, type ExecutionSnapshot, type Tool } from '@corral/core';
import { Corral } from '../corral.js';
import { parseMountFlag } from '../mounts.js';
import {
  EXIT_OK,
  EXIT_TOOL_FAILED,
  UsageError,
  cell,
  indent,
  parse,
  parseEnvFlags,
  type Cli,
  type Print,
  flagValue,
  prepareProgress,
  toolDirsFlag,
} from './shared.js';
import { noStore, openExisting } from './store.js';

export const help = `corral replay ID [--tools DIR] [--mount HOST:GUEST[:ro|rw]] [--env NAME=VALUE] [--json] [--store PATH]

Run the tool version an execution snapshot recorded on its recorded input,
and compare stdout (SHA-256), exit code and error code with the record.
The wasm's SHA-256 says whether the tool's artifact changed since.
Mounts and environment values are not recorded: give them again.
Exit status: 0 identical, 1 different (or the call cannot be replayed), 2 misuse.`;

/**
 * `corral replay ID`: run the recorded tool version on the recorded input
 * and compare stdout (by SHA-256), exit code and error code with the record.
 * The wasm's SHA-256 tells whether the artifact itself changed. The replay
 * is not recorded in the store: it is a check, not something an agent did.
 */
export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      tools: { type: 'string', multiple: true },
      mount: { type: 'string', multiple: true },
      env: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      store: { type: 'string' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length !== 1)
    throw new UsageError('name one execution snapshot id, e.g. corral replay 1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed');
  const id = positionals[0]!;
  // Every flag is checked before the store is read: misuse says so first.
  const mounts = (values.mount ?? []).map((flag) => flagValue(() => parseMountFlag(flag)));
  const env = parseEnvFlags(values.env);
  const toolDirs = toolDirsFlag(values.tools);
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  let recorded: ExecutionSnapshot | null;
  try {
    recorded = await store.getExecution(id);
  } finally {
    await store.close();
  }
  if (!recorded)
    throw new CorralError(ErrorCodes.STORE, `No execution snapshot with id ${id} in ${store.location}`, {
      store: store.location,
      id,
    });
  if (recorded.input_json === null) {
    throw new CorralError(
      ErrorCodes.INPUT_VALIDATION,
      `Execution ${id} was recorded without its input (only its hash), so it cannot be replayed`,
      { id },
    );
  }
  if (recorded.version === null) {
    throw new CorralError(
      ErrorCodes.TOOL_NOT_FOUND,
      `Execution ${id} never resolved a tool (${recorded.error_code}); there is nothing to replay`,
      { id },
    );
  }

  const scratch = new MemoryStore('replay');
  const corral = await Corral.create({ toolDirs, store: scratch, size: 1, ...prepareProgress(io.stderr) });
  try {
    let tool: Tool;
    try {
      // The exact version recorded, not a range.
      tool = corral.registry.resolve(`${recorded.tool}@${recorded.version}`);
    } catch (err) {
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `${recorded.tool}@${recorded.version}, which execution ${id} ran, is not available; pass the folder it came from with --tools DIR`,
        { id, cause: (err as Error).message },
      );
    }
    const result = await corral.invokeTool(tool, JSON.parse(recorded.input_json), { mounts, env });
    const replayed = (await scratch.getExecution(result.snapshot!.id))!;
    const report = compare(recorded, replayed);
    // `ok` as in every --json answer: false when the command exits 1 (the replay differs).
    if (values.json) print(JSON.stringify({ ok: report.identical, ...report }, null, 2));
    else printReport(report, print);
    return report.identical ? EXIT_OK : EXIT_TOOL_FAILED;
  } finally {
    await corral.close();
  }
}

interface Side {
  wasm_sha256: string | null;
  stdout_sha256: string | null;
  exit_code: number | null;
  error_code: string | null;
  stdout_head: string | null;
}

interface ReplayReport {
  id: string;
  tool: string;
  version: string | null;
  identical: boolean;
  artifact_changed: boolean;
  differences: string[];
  recorded: Side;
  replayed: Side;
}

function compare(recorded: ExecutionSnapshot, replayed: ExecutionSnapshot): ReplayReport {
  const side = (e: ExecutionSnapshot): Side => ({
    wasm_sha256: e.wasm_sha256,
    stdout_sha256: e.stdout_sha256,
    exit_code: e.exit_code,
    error_code: e.error_code,
    stdout_head: e.stdout_head,
  });
  const differences = (['wasm_sha256', 'stdout_sha256', 'exit_code', 'error_code'] as const).filter((k) => recorded[k] !== replayed[k]);
  return {
    id: recorded.id,
    tool: recorded.tool,
    version: recorded.version,
    identical: differences.length === 0,
    artifact_changed: differences.includes('wasm_sha256'),
    differences,
    recorded: side(recorded),
    replayed: side(replayed),
  };
}

function printReport(r: ReplayReport, print: Print): void {
  print(`replay of ${cell(r.id)} (${cell(`${r.tool}@${r.version}`)}): ${r.identical ? 'identical' : 'DIFFERENT'}`);
  const short = (v: string | number | null) => (v === null ? '-' : String(v).slice(0, 16));
  const line = (label: string, a: string | number | null, b: string | number | null) =>
    print(`  ${label.padEnd(14)} ${a === b ? `${short(a)} (same)` : `recorded ${short(a)}, now ${short(b)}`}`);
  line('wasm sha256', r.recorded.wasm_sha256, r.replayed.wasm_sha256);
  line('stdout sha256', r.recorded.stdout_sha256, r.replayed.stdout_sha256);
  line('exit code', r.recorded.exit_code, r.replayed.exit_code);
  line('error', r.recorded.error_code, r.replayed.error_code);
  if (r.artifact_changed) print('  The tool artifact changed since the recording (same name and version, different wasm).');
  if (r.recorded.stdout_sha256 !== r.replayed.stdout_sha256) {
    print(`recorded stdout (first 1 KiB):\n${indent(r.recorded.stdout_head ?? '')}`);
    print(`replayed stdout (first 1 KiB):\n${indent(r.replayed.stdout_head ?? '')}`);
  }
}
