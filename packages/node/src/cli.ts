import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { InvokeResult, MountBinding, Tool } from '@corral/core';
import { forTerminal } from './terminal.js';
import { EXEC_HELP, execCommand } from './cli-exec.js';
// Each command loads what it needs when it runs (the pipeline, SQLite,
// ajv): `corral exec` and `--help` start in a fraction of the time.
const corralModule = () => import('./corral.js');
const snapshotsModule = () => import('./cli-snapshots.js');

/** Exit statuses: the tool ran and succeeded, the tool failed, the command was misused. */
export const EXIT_OK = 0;
export const EXIT_TOOL_FAILED = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {}

export const HELP: Record<string, string> = {
  main: `corral — run sandboxed WASI tools for AI agents

Usage:
  corral tools [--json] [--tools DIR]          list the tools Corral can run
  corral run NAME[@RANGE] [options]            run a tool on a JSON input
  corral run --wasm FILE --spec FILE [options] run a tool file that is not registered
  corral exec FILE.wasm [options] [-- ARGS]    run any WASI program in the sandbox
  corral validate SPEC                         check a tool-spec.json
  corral cache clear                           drop transpiled components
  corral snapshots list|show|export|prune      read back or trim recorded calls
  corral replay ID                             re-run a recorded call and compare

Run 'corral COMMAND --help' for a command's options.`,
  tools: `corral tools [--json] [--tools DIR]

List the bundled tools and those found in each --tools DIR.
  --json        print the list as JSON
  --tools DIR   also load tools from DIR (repeatable)`,
  run: `corral run NAME[@RANGE] [options]
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

Exit status: 0 the tool succeeded, 1 the tool failed, 2 the command was misused.`,
  exec: EXEC_HELP,
  validate: `corral validate SPEC

Check a tool-spec.json against Corral's tool contract and list every problem.`,
  cache: `corral cache clear

Delete the transpiled components Corral keeps in its cache folder.`,
  snapshots: `corral snapshots list [--tool NAME] [--since WHEN] [--error CODE] [--decision ID]
                      [--status ok|failed|interrupted] [--limit N] [--json]
corral snapshots show ID [--json]
corral snapshots export [--format jsonl] [--output FILE]
corral snapshots prune (--older-than DURATION | --keep N) [--archive FILE]

Every call is recorded: an intent before the tool runs, a result after it.
A call with an intent and no result is 'interrupted' (the process stopped
mid-call, or the call is still running).
  list      newest first (50 unless --limit; 0 for all). WHEN is a duration
            back from now (2h, 7d) or a date (2026-11-29T09:00Z)
  show      one execution or decision, in full
  export    every record as JSON lines: decisions, then executions, oldest first
  prune     write the records it removes to an archive (JSONL, default beside
            the store in archive/) and only then delete them; prints the path.
            DURATION: 90s, 15m, 36h, 30d, 2w
  --store PATH   the store to read (default as for corral run)`,
  replay: `corral replay ID [--tools DIR] [--mount HOST:GUEST[:ro|rw]] [--env NAME=VALUE] [--json] [--store PATH]

Run the tool version an execution snapshot recorded on its recorded input,
and compare stdout (SHA-256), exit code and error code with the record.
The wasm's SHA-256 says whether the tool's artifact changed since.
Mounts and environment values are not recorded: give them again.
Exit status: 0 identical, 1 different (or the call cannot be replayed), 2 misuse.`,
};

export async function main(argv: string[], io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  const [command, ...rest] = argv;
  // Everything printed may quote a tool: no character in it gets to act on the terminal.
  const print = (text: string) => io.stdout.write(forTerminal(text.endsWith('\n') ? text : text + '\n'));
  const fail = (message: string) => io.stderr.write(`corral: ${forTerminal(message, { oneLine: true })}\n`);
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        print(HELP[rest[0] ?? 'main'] ?? HELP.main!);
        return command === undefined ? EXIT_USAGE : EXIT_OK;
      case 'tools':
        return await toolsCommand(rest, print);
      case 'run':
        return await runCommand(rest, print, io.stdin);
      case 'exec':
        return await execCommand(rest, io, fail, (message) => new UsageError(message));
      case 'validate':
        return await validateCommand(rest, print);
      case 'cache':
        return await cacheCommand(rest, print);
      case 'snapshots':
        return await (await snapshotsModule()).snapshotsCommand(rest, print);
      case 'replay':
        return await (await snapshotsModule()).replayCommand(rest, print);
      default:
        throw new UsageError(`unknown command '${command}'. Commands: tools, run, exec, validate, cache, snapshots, replay.`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      fail(err.message);
      io.stderr.write("Run 'corral --help' for usage.\n");
      return EXIT_USAGE;
    }
    if (err instanceof CorralError) {
      fail(`${err.message} (${err.code})`);
      return EXIT_TOOL_FAILED;
    }
    fail(err instanceof Error ? err.message : String(err));
    return EXIT_TOOL_FAILED;
  }
}

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals: boolean) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function toolsCommand(args: string[], print: (s: string) => void): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' }, tools: { type: 'string', multiple: true } }, false);
  if (values.help) return print(HELP.tools!), EXIT_OK;
  const { Corral } = await corralModule();
  const corral = await Corral.create({ toolDirs: values.tools ?? [], store: false });
  try {
    const tools = corral.registry.list();
    if (values.json) {
      print(JSON.stringify(tools.map(describeTool), null, 2));
    } else {
      const width = Math.max(4, ...tools.map((t) => `${t.spec.name}@${t.spec.version}`.length));
      for (const t of tools) print(`${`${t.spec.name}@${t.spec.version}`.padEnd(width)}  ${forTerminal(t.spec.description ?? '', { oneLine: true })}`);
      if (tools.length === 0) print('No tools found.');
    }
    for (const err of corral.loadErrors) process.stderr.write(`corral: skipped: ${forTerminal(err.message, { oneLine: true })} (${err.code})\n`);
    return EXIT_OK;
  } finally {
    await corral.close();
  }
}

function describeTool(tool: Tool) {
  const { spec } = tool;
  return {
    name: spec.name,
    version: spec.version,
    description: spec.description ?? '',
    source: tool.source,
    sha256: tool.wasmSha256,
    resources: spec.resources ?? {},
    mounts: spec.mounts ?? [],
    input_schema: spec.input_schema,
  };
}

async function runCommand(args: string[], print: (s: string) => void, stdin: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<number> {
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
    },
    true,
  );
  if (values.help) return print(HELP.run!), EXIT_OK;
  if (values.store !== undefined && values['no-store']) throw new UsageError('give --store PATH or --no-store, not both.');
  const direct = values.wasm !== undefined || values.spec !== undefined;
  if (direct && (values.wasm === undefined || values.spec === undefined)) throw new UsageError('--wasm and --spec go together.');
  if (direct && positionals.length > 0) throw new UsageError('give either a tool NAME or --wasm/--spec, not both.');
  if (!direct && positionals.length !== 1) throw new UsageError('name one tool to run, e.g. corral run diff-summary --input-file diff.json');
  if (values.input !== undefined && values['input-file'] !== undefined) throw new UsageError('give --input or --input-file, not both.');

  const { parseMountFlag } = await import('./mounts.js');
  const mounts: MountBinding[] = (values.mount ?? []).map((flag) => parseMountFlag(flag));
  const env = Object.fromEntries(
    (values.env ?? []).map((pair) => {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`bad --env ${JSON.stringify(pair)}: expected NAME=VALUE.`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new UsageError(`bad --timeout ${values.timeout}: expected milliseconds, e.g. 5000.`);
  }

  // Every flag is checked before the input is read: stdin may never end.
  const input = await readInput(values.input, values['input-file'], stdin);
  const store = values['no-store'] ? false : values.store;
  const { Corral } = await corralModule();
  const corral = await Corral.create({ toolDirs: values.tools ?? [], bundled: !direct, size: 1, ...(store !== undefined ? { store } : {}) });
  try {
    const options = { mounts, env, ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
    let result: InvokeResult;
    if (direct) {
      const [{ loadToolFiles }, { Registry }] = await Promise.all([import('./tool-folder.js'), import('@corral/core')]);
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
      process.stderr.write(`corral: warning: snapshot ${result.snapshot.id} not saved: ${forTerminal(result.snapshot.error, { oneLine: true })}\n`);
    }
    return result.ok ? EXIT_OK : EXIT_TOOL_FAILED;
  } finally {
    await corral.close();
  }
}

async function readInput(inline: string | undefined, file: string | undefined, stdin: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<unknown> {
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

async function validateCommand(args: string[], print: (s: string) => void): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, true);
  if (values.help) return print(HELP.validate!), EXIT_OK;
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

async function cacheCommand(args: string[], print: (s: string) => void): Promise<number> {
  const { values, positionals } = parse(args, {}, true);
  if (values.help) return print(HELP.cache!), EXIT_OK;
  if (positionals[0] !== 'clear' || positionals.length !== 1) throw new UsageError("the cache command takes 'clear'.");
  const { ComponentCache } = await import('./cache.js');
  const cache = new ComponentCache();
  print(`Removed ${await cache.clear()} cached component(s) from ${cache.dir}.`);
  return EXIT_OK;
}
