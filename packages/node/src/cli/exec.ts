/**
 * `corral exec`: run any WASI program under Corral's sandbox, as
 * `wasmtime run` would run it — raw stdio streamed both ways, argv and
 * environment exactly as given, the program's exit code as the command's.
 */
import { parseArgs } from 'node:util';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { isatty } from 'node:tty';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountBinding } from '@corral/core';
import { EXEC_DEFAULTS, execRequest } from '@corral/wasi';
import { WorkerExecutor } from '../executor.js';
import { hostSource } from '../mounts.js';
import { EXIT_USAGE, UsageError, parseEnvFlags, type Cli, usageFromParseArgs } from './shared.js';
import { forTerminal } from '../terminal.js';

export const help = `corral exec FILE.wasm [options] [-- ARGS...]

Run a WASI program (a preview1 command module or a wasi:cli command
component) in a sandbox worker, as 'wasmtime run' would: its stdin, stdout
and stderr are this command's (its output is not escaped), argv is FILE's
name and ARGS exactly as given, its environment is only what --env gives,
it sees only the --dir folders (no /tmp unless one is given), and there is
no network.
  --dir HOST[::GUEST][:ro]
                  give the program the folder HOST, named GUEST (default: HOST
                  as written, e.g. '.' or 'data'); read-write unless :ro (repeatable)
  --env NAME=VALUE
                  set a variable; --env NAME passes this shell's value (repeatable)
  --argv0 NAME    argv[0] (default: FILE's name)
  --memory-mb N   cap on the program's memory, in MiB (default ${EXEC_DEFAULTS.memoryMb})
  --disk-mb N     MiB it may add to files in its folders (default ${EXEC_DEFAULTS.diskMb})
  --timeout MS    stop it after MS milliseconds (default: no limit)

Example:
  corral exec fmt.wasm --dir ./src::src --env LANG=C -- src/a.c

Exit status: the program's own (1 for a code over 255); 134 when it
trapped; 125 when Corral could not run it or stopped it at a limit; 141
when the reader of its output went away; 2 when this command was misused.`;

export const EXIT_TRAP = 134;
export const EXIT_STOPPED = 125;
/** A shell's status for a process ended by SIGPIPE: the reader of our stdout went away. */
const EXIT_BROKEN_PIPE = 141;

const EXEC_OPTIONS = {
  dir: { type: 'string', multiple: true },
  env: { type: 'string', multiple: true },
  argv0: { type: 'string' },
  'memory-mb': { type: 'string' },
  'disk-mb': { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function command(args: string[], { io, fail }: Cli): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: EXEC_OPTIONS,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (err) {
    // Node's messages span lines and end with a period; the hint fits only an option we do not know.
    const { code, message } = err as NodeJS.ErrnoException;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const usage = usageFromParseArgs(err, EXEC_OPTIONS);
      throw new UsageError(`${usage.message} Put the program's own arguments after --.`, usage.details);
    }
    throw new UsageError(`${message.replace(/\s*\n\s*/g, ' ').replace(/\.$/, '')}.`);
  }
  const { values, positionals } = parsed;
  if (values.help) return (io.stdout.write(help + '\n'), 0);
  const [file, ...programArgs] = positionals;
  if (file === undefined) throw new UsageError('name the .wasm file to run, e.g. corral exec hello.wasm -- world');
  // A program name that follows `--` would be taken for an argument; say so plainly.
  const terminator = parsed.tokens.find((t) => t.kind === 'option-terminator');
  if (terminator && parsed.tokens.findIndex((t) => t.kind === 'positional') > parsed.tokens.indexOf(terminator)) {
    throw new UsageError('name the .wasm file before --, e.g. corral exec hello.wasm -- world');
  }

  const mounts = (values.dir ?? []).map(parseDirFlag);
  const env = parseEnvFlags(values.env, { fromShell: true });
  const number = (flag: 'memory-mb' | 'disk-mb' | 'timeout'): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) throw new UsageError(`--${flag} takes a whole number (got ${JSON.stringify(text)})`);
    return Number(text);
  };

  const limits = {
    ...optional('memoryMb', number('memory-mb')),
    ...optional('diskMb', number('disk-mb')),
    ...optional('timeoutMs', number('timeout')),
  };

  let wasm: Uint8Array;
  try {
    wasm = await readProgram(file);
  } catch (err) {
    fail(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return EXIT_STOPPED;
  }

  // The program's output is written as it comes, and the program waits
  // while our stdout is slow. If our reader goes away (`| head`), stop it,
  // as SIGPIPE would; the same for stderr (`2>&1 | head` or a closed
  // `2> >(…)`), whose unhandled EPIPE otherwise ended this process with
  // status 1, as if the program had failed. The listeners stay: writes
  // still queued fail the same way after the run.
  const stopped = new AbortController();
  io.stdout.on('error', () => stopped.abort(new Error('stdout closed')));
  io.stderr.on('error', () => stopped.abort(new Error('stderr closed')));
  // Settles once the chunk is handed to the OS (or failed): that is the backpressure.
  const write = (stream: NodeJS.WritableStream) => (chunk: Uint8Array) =>
    new Promise<void>((done) => void stream.write(chunk, () => done()));

  // One worker, no tool registry and no snapshot store: a program, not a tool.
  // One run, then exit: no spare worker booting beside it only to be stopped again.
  const executor = new WorkerExecutor({ size: 1, spareWorker: false });
  try {
    const result = await executor.exec(
      execRequest({
        argv0: values.argv0 ?? basename(file),
        args: programArgs,
        env,
        mounts,
        // Read stdin only when the program does, and only then touch process.stdin.
        stdin: { [Symbol.asyncIterator]: () => (process.stdin as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]() },
        onStdout: write(io.stdout),
        onStderr: write(io.stderr),
        terminals: [isatty(0), isatty(1), isatty(2)],
        ...limits,
        signal: stopped.signal,
        // Only on a terminal: the program's stderr is the command's, and a pipe gets it untouched.
        ...(isatty(2)
          ? {
              onPrepare: () =>
                io.stderr.write(`corral: preparing ${forTerminal(basename(file), { oneLine: true })} (first run only; cached after)…\n`),
            }
          : {}),
      }),
      wasm,
    );
    if (result.error) fail(`${result.error.message} (${result.error.code})`);
    // A process status keeps 8 bits: exit(256) would read as success. A code it cannot carry is 1.
    if (result.exited) return result.exitCode <= 255 ? result.exitCode : 1;
    return result.error?.details?.trap === true ? EXIT_TRAP : EXIT_STOPPED;
  } catch (err) {
    if (stopped.signal.aborted) return EXIT_BROKEN_PIPE;
    if (CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) {
      fail(asFlags(err.message, err.details.option));
      return EXIT_USAGE;
    }
    fail(err instanceof CorralError ? `${err.message} (${err.code})` : String((err as Error)?.message ?? err));
    return EXIT_STOPPED;
  } finally {
    await executor.close();
    // Stop reading our stdin if the program left some unread.
    process.stdin.destroy();
  }
}

/** corral.exec names its options as the API does (`exec: memoryMb …`); say the flag the user typed. */
function asFlags(message: string, option: unknown): string {
  if (typeof option !== 'string') return message;
  const flag = /^mounts\[\d+\]/.test(option) ? '--dir' : FLAGS[option];
  return flag && message.startsWith(`exec: ${option} `) ? `${flag} ${message.slice(`exec: ${option} `.length)}` : message;
}

const FLAGS: Record<string, string> = { memoryMb: '--memory-mb', diskMb: '--disk-mb', timeoutMs: '--timeout', argv0: '--argv0' };

/**
 * The program's bytes, from a regular file only: `/dev/zero` or a FIFO fed
 * without end was read until this process had taken gigabytes. Opened
 * without blocking, so a FIFO with no writer is refused rather than waited on.
 */
async function readProgram(file: string): Promise<Uint8Array> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
    return new Uint8Array(await handle.readFile());
  } finally {
    await handle.close();
  }
}

/** `HOST[::GUEST][:ro|:rw]`, as wasmtime's --dir: GUEST defaults to HOST as written. */
function parseDirFlag(flag: string): MountBinding {
  let spec = flag;
  let access: MountBinding['access'] = 'read-write';
  if (spec.endsWith(':ro') || spec.endsWith(':rw')) {
    access = spec.endsWith(':ro') ? 'read' : 'read-write';
    spec = spec.slice(0, -3);
  }
  const split = spec.indexOf('::');
  const host = split === -1 ? spec : spec.slice(0, split);
  const guest = split === -1 ? spec : spec.slice(split + 2);
  if (host === '' || guest === '')
    throw new UsageError(`bad --dir ${JSON.stringify(flag)}: expected HOST[::GUEST][:ro], e.g. ./data::/data:ro`);
  return { guest, access, source: hostSource(host) };
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}
