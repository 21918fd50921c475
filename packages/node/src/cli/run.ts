/** `corral run`: one tool call, through the whole pipeline, recorded in the snapshot store. */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { InvokeResult, MountBinding } from '@corral/core';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, parse, parseEnvFlags, type Cli, flagValue, toolDirsFlag } from './shared.js';

export const help = `corral run NAME[@RANGE] [options]
corral run --wasm FILE --spec FILE [options]

Run a tool in a sandbox worker. The input is JSON, checked against the
tool's input_schema; the tool's JSON output is printed.
  --input JSON          the input (default: read from stdin when it is not a terminal)
  --input-file FILE     read the input from FILE
  --mount HOST:GUEST[:ro|rw]
                        bind a host folder to a mount the tool declares (repeatable)
  --env NAME=VALUE      give the tool a variable its spec lists (repeatable)
  --timeout MS          override the spec's timeout_ms
  --json                print the whole result envelope instead of the output
  --tools DIR           also load tools from DIR (repeatable)
  --wasm FILE --spec FILE
                        run this tool file instead of a registered tool
  --store PATH          record the call's snapshot in this SQLite file
                        (default: $CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db,
                        else ~/.local/share/corral/snapshots.db)
  --no-store            record nothing
  --no-record-input     record the input's SHA-256 but not the input itself
                        (such a call cannot be replayed)
  --store-max-mb MB     cap the store's size: past it the oldest records go,
                        archived (exported) ones first (default: $CORRAL_STORE_MAX_MB, else no cap)

Exit status: 0 the tool succeeded, 1 the tool failed, 2 the command was misused.`;

export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
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
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (values.store !== undefined && values['no-store']) throw new UsageError('give --store PATH or --no-store, not both.');
  if (values['store-max-mb'] !== undefined && values['no-store']) throw new UsageError('--store-max-mb caps a store; --no-store has none.');
  const { storeCapOptions } = await import('./store.js');
  const storeCap = storeCapOptions(values['store-max-mb']);
  const direct = values.wasm !== undefined || values.spec !== undefined;
  if (direct && (values.wasm === undefined || values.spec === undefined)) throw new UsageError('--wasm and --spec go together.');
  if (direct && positionals.length > 0) throw new UsageError('give either a tool NAME or --wasm/--spec, not both.');
  if (!direct && positionals.length !== 1)
    throw new UsageError('name one tool to run, e.g. corral run diff-summary --input-file diff.json');
  if (values.input !== undefined && values['input-file'] !== undefined) throw new UsageError('give --input or --input-file, not both.');

  const { parseMountFlag } = await import('../mounts.js');
  const mounts: MountBinding[] = (values.mount ?? []).map((flag) => flagValue(() => parseMountFlag(flag)));
  const env = parseEnvFlags(values.env);
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(`bad --timeout ${values.timeout}: expected milliseconds, e.g. 5000.`);
  }

  // Every flag is checked before the input is read: stdin may never end.
  const input = await readInput(values.input, values['input-file'], io.stdin);
  const store = values['no-store'] ? false : values.store;
  const { Corral } = await import('../corral.js');
  const toolDirs = toolDirsFlag(values.tools);
  const corral = await Corral.create({
    toolDirs,
    bundled: !direct,
    size: 1,
    ...(store !== undefined ? { store } : {}),
    ...(values['no-record-input'] ? { recordInputs: false } : {}),
    ...storeCap,
  });
  try {
    const options = { mounts, env, ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
    let result: InvokeResult;
    if (direct) {
      const [{ loadToolFiles }, { Registry }] = await Promise.all([import('../tool-folder.js'), import('@corral/core')]);
      const tool = await loadToolFiles(new Registry(), resolve(values.spec!), resolve(values.wasm!));
      result = await corral.invokeTool(tool, input, options);
    } else {
      result = await corral.invoke(positionals[0]!, input, options);
    }
    if (values.json) {
      print(JSON.stringify(result, null, 2));
    } else if (result.ok) {
      print(JSON.stringify(result.output, null, 2));
    } else {
      const err = result.error!;
      process.stderr.write(`corral: ${forTerminal(err.message, { oneLine: true })} (${err.code})\n`);
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
      throw new UsageError(`cannot read --input-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    from = file;
  } else if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
    text = Buffer.concat(chunks).toString('utf8');
    from = 'stdin';
    if (text.trim() === '') text = '{}';
  } else {
    text = '{}';
    from = 'default';
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `The input from ${from} is not valid JSON: ${(err as Error).message}`, { from });
  }
}
