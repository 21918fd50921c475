/** `corral run`: one tool call, through the whole pipeline, recorded in the snapshot store. */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { InvokeResult, MountBinding } from '@corral/core';
import { forTerminal } from '../terminal.js';
import {
  EXIT_OK,
  EXIT_TOOL_FAILED,
  UsageError,
  parse,
  parseEnvFlags,
  type Cli,
  type ErrorJson,
  fileFlag,
  fileProblem,
  flagValue,
  prepareProgress,
  registrationHint,
  toolDirsFlag,
} from './shared.js';

export const help = `corral run NAME[@RANGE] [options]
corral run --wasm FILE --spec FILE [options]

Run a tool in a sandbox worker. The input is JSON, checked against the
tool's input_schema; the tool's JSON output is printed.
  --input JSON          the input (default: read from stdin when it is piped;
                        on a terminal one of --input, --input-file is needed)
  --input-file FILE     read the input from FILE
  --mount HOST:GUEST[:ro|rw]
                        bind a host folder to a mount the tool declares (repeatable)
  --env NAME=VALUE      give the tool a variable its spec lists (repeatable)
  --timeout MS          override the spec's timeout_ms
  --json                print the whole result envelope instead of the output
  --tools DIR           also load tools from DIR (repeatable)
  --wasm FILE --spec FILE
                        run this tool file instead of a registered tool
  --store PATH          record the call's snapshot in this SQLite file, or in
                        the PostgreSQL database at a postgres:// URL
                        (default: $CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db,
                        else ~/.local/share/corral/snapshots.db)
  --no-store            record nothing
  --no-record-input     record the input's SHA-256 but not the input itself
                        (such a call cannot be replayed)
  --store-max-mb MB     cap the store's size: past it the oldest records go,
                        archived (exported) ones first (default: $CORRAL_STORE_MAX_MB, else no cap)

Exit status: 0 the tool succeeded, 1 the tool failed, 2 the command was misused.`;

const OPTIONS = {
  input: { type: 'string' },
  'input-file': { type: 'string' },
  mount: { type: 'string', multiple: true },
  env: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  tools: { type: 'string', multiple: true },
  wasm: { type: 'string' },
  spec: { type: 'string' },
  store: { type: 'string' },
  'no-store': { type: 'boolean' },
  'no-record-input': { type: 'boolean' },
  'store-max-mb': { type: 'string' },
} as const;

/**
 * A failure before the call (misuse, input that is not JSON, a tool file
 * refused at registration) in the shape of the call's own --json envelope,
 * so a program reads one shape from `corral run --json` whatever happened.
 */
export function failure(error: ErrorJson, args: string[]): object {
  let tool: string | null = null;
  try {
    const { positionals } = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: false });
    tool = positionals[0]?.replace(/(.)@.*$/, '$1') ?? null;
  } catch {
    // the arguments were what failed: no tool to name
  }
  return {
    ok: false,
    tool,
    version: null,
    output: null,
    error,
    exit_code: null,
    duration_ms: 0,
    stdout_head: '',
    stderr_tail: '',
    stdout_truncated: false,
    stderr_truncated: false,
  };
}

export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values, positionals } = parse(args, OPTIONS, true);
  if (values.help) return (print(help), EXIT_OK);
  if (values.store !== undefined && values['no-store']) throw new UsageError('give --store PATH or --no-store, not both.');
  if (values['store-max-mb'] !== undefined && values['no-store']) throw new UsageError('--store-max-mb caps a store; --no-store has none.');
  // Most of a cold start is loading the pipeline: what the command needs loads at once, not one part after another.
  const [{ storeCapOptions }, { parseMountFlag }, { Corral }] = await Promise.all([
    import('./store.js'),
    import('../mounts.js'),
    import('../corral.js'),
  ]);
  const storeCap = storeCapOptions(values['store-max-mb']);
  const direct = values.wasm !== undefined || values.spec !== undefined;
  if (direct && (values.wasm === undefined || values.spec === undefined)) throw new UsageError('--wasm and --spec go together.');
  if (direct && positionals.length > 0) throw new UsageError('give either a tool NAME or --wasm/--spec, not both.');
  if (!direct && positionals.length !== 1)
    throw new UsageError('name one tool to run, e.g. corral run diff-summary --input-file diff.json');
  if (values.input !== undefined && values['input-file'] !== undefined) throw new UsageError('give --input or --input-file, not both.');
  if (direct) for (const flag of ['spec', 'wasm'] as const) fileFlag(`--${flag}`, values[flag]!);

  const mounts: MountBinding[] = (values.mount ?? []).map((flag) => flagValue(() => parseMountFlag(flag)));
  const env = parseEnvFlags(values.env);
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(`bad --timeout ${values.timeout}: expected milliseconds, e.g. 5000.`);
  }

  // No silent default on a terminal: stdin is read only when it is piped.
  if (values.input === undefined && values['input-file'] === undefined && io.stdin.isTTY) {
    const name = direct ? '--wasm FILE --spec FILE' : positionals[0]!;
    throw new UsageError(
      `no input for ${direct ? 'the tool' : name}, and stdin is a terminal: give --input JSON (--input '{}' for none) or --input-file FILE, or pipe it in (… | corral run ${name}).`,
    );
  }
  // Every flag is checked before the input is read: stdin may never end. An input
  // already in hand (--input, --input-file) is read first: there is nothing to
  // overlap, and a bad one then reports at once, even when the store is slow to
  // open (a PostgreSQL server that does not answer waits out its connect timeouts).
  const fromStdin = values.input === undefined && values['input-file'] === undefined;
  let input: unknown;
  if (!fromStdin) input = await readInput(values.input, values['input-file'], io.stdin);
  // Piped input may still be being produced: Corral starts meanwhile (its worker
  // boots, its tools load); an input that fails still reports first, as if
  // Corral had not been started.
  const store = values['no-store'] ? false : values.store;
  const toolDirs = toolDirsFlag(values.tools);
  const creating = Corral.create({
    toolDirs,
    bundled: !direct,
    size: 1,
    // One call, then exit: a spare worker would boot beside the output only to be stopped again.
    spareWorker: false,
    ...prepareProgress(io.stderr),
    ...(store !== undefined ? { store } : {}),
    ...(values['no-record-input'] ? { recordInputs: false } : {}),
    ...storeCap,
  });
  // Its failure is reported below, once the input is read; not as an unhandled rejection before.
  creating.catch(() => undefined);
  try {
    if (fromStdin) input = await readInput(undefined, undefined, io.stdin);
  } catch (err) {
    await creating.then((corral) => corral.close()).catch(() => undefined);
    throw err;
  }
  const corral = await creating;
  try {
    const options = { mounts, env, ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
    let result: InvokeResult;
    if (direct) {
      const [{ loadToolFiles }, { Registry }] = await Promise.all([import('../tool-folder.js'), import('@corral/core')]);
      const tool = await loadToolFiles(new Registry(), resolve(values.spec!), resolve(values.wasm!));
      result = await corral.invokeTool(tool, input, options);
    } else {
      const name = positionals[0]!;
      const skipped = await loadErrorsFor(name, corral.loadErrors);
      // The tool is in a --tools folder but could not be loaded: that is the answer, not "no such tool".
      if (skipped.length > 0 && !corral.registry.list().some((t) => t.spec.name === name.replace(/(.)@.*$/, '$1'))) throw skipped[0];
      result = await corral.invoke(name, input, options);
      if (result.error?.code === ErrorCodes.TOOL_NOT_FOUND && corral.loadErrors.length > 0) {
        for (const err of corral.loadErrors)
          io.stderr.write(
            `corral: skipped, could not load: ${forTerminal(err.message + ` (${err.code})` + registrationHint(err), { oneLine: true })}\n`,
          );
        // A program reading --json sees why too, not only a person reading stderr.
        result.error.details.load_errors = corral.loadErrors.map((err) => ({
          code: err.code,
          message: err.message + registrationHint(err),
        }));
      }
    }
    if (values.json) {
      print(JSON.stringify(result, null, 2));
    } else if (result.ok) {
      print(JSON.stringify(result.output, null, 2));
    } else {
      const err = result.error;
      process.stderr.write(`corral: ${forTerminal(err.message, { oneLine: true })} (${err.code})\n`);
      if (err.code === ErrorCodes.INPUT_VALIDATION && err.details.reason === 'unbound_mount') {
        const flags = (err.details.unbound ?? []).map((guest) => `--mount HOSTDIR:${guest}`).join(' ');
        process.stderr.write(`corral: give the tool a folder: ${forTerminal(flags, { oneLine: true })} (add :ro for read-only)\n`);
      }
    }
    // Never a silent drop: the result stands, but say that its record is missing.
    if (result.snapshot?.error) {
      process.stderr.write(
        `corral: warning: snapshot ${result.snapshot.id} not saved: ${forTerminal(result.snapshot.error, { oneLine: true })}\n`,
      );
    }
    return result.ok ? EXIT_OK : EXIT_TOOL_FAILED;
  } finally {
    await corral.close();
  }
}

async function readInput(
  inline: string | undefined,
  file: string | undefined,
  stdin: NodeJS.ReadableStream & { isTTY?: boolean },
): Promise<unknown> {
  let text: string;
  let from: string;
  if (inline !== undefined) {
    text = inline;
    from = '--input';
  } else if (file !== undefined) {
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--input-file ${file}: ${fileProblem(err)} (looked for ${resolve(file)}).`, { option: '--input-file' });
    }
    from = file;
  } else {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
    text = Buffer.concat(chunks).toString('utf8');
    from = 'stdin';
    // An empty pipe (`< /dev/null`, a script's closed stdin) is no input: {}.
    if (text.trim() === '') text = '{}';
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The input from ${from} is not valid JSON: ${(err as Error).message}`, { from });
  }
}

/**
 * The tools of --tools folders that failed to load under this name: the spec
 * that says `"name": NAME`, or whose folder is named NAME when the spec
 * cannot be read.
 */
async function loadErrorsFor(ref: string, errors: readonly CorralError[]): Promise<CorralError[]> {
  const name = ref.replace(/(.)@.*$/, '$1');
  const found: CorralError[] = [];
  for (const err of errors) {
    const where = (err.details as { source?: unknown }).source;
    if (typeof where !== 'string') continue;
    // A wasm that failed names its file: the spec beside it says which tool it was.
    const source = where.endsWith('.json') ? where : join(dirname(where), 'tool-spec.json');
    let named: unknown;
    try {
      named = (JSON.parse(await readFile(source, 'utf8')) as { name?: unknown }).name;
    } catch {
      named = basename(dirname(source));
    }
    if (named === name) found.push(err);
  }
  return found;
}
