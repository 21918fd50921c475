/**
 * What every `corral` command shares: exit statuses, usage errors, flag
 * parsing, `--env` parsing and printing. Kept light (node:util, a stat,
 * and terminal.ts only): main.ts loads it for `--help` too.
 */
import { statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { PrepareEvent } from '@corral/wasi/host-kit';
import { closest } from '@corral/core/errors';
import { forTerminal } from '../terminal.js';

export { closest };

/** Exit statuses: the tool ran and succeeded, the tool failed, the command was misused. */
export const EXIT_OK = 0;
export const EXIT_TOOL_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * The command was misused: main prints the message and a pointer to the
 * command's --help, and exits EXIT_USAGE; with --json, also an envelope whose
 * error has the code E_USAGE (a code of the CLI only, like HTTP's own codes).
 */
export class UsageError extends Error {
  /** Added to the envelope's `error.details` (e.g. `{ option: '--bogus' }`). */
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.details = details;
  }
}

/** The code a misused command's --json envelope carries (ERRORS.md). */
export const E_USAGE = 'E_USAGE';

/** Prints to the terminal; main escapes what could act on it (see terminal.ts). */
export type Print = (text: string) => void;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** What a command is given besides its arguments. */
export interface Cli {
  io: CliIo;
  /** A line (or block) of output on stdout, escaped for the terminal. */
  print: Print;
  /** `corral: MESSAGE` on stderr, on one line, escaped for the terminal. */
  fail: (message: string) => void;
}

/** An error as --json prints it: CorralError's JSON shape, with E_USAGE for misuse. */
export interface ErrorJson {
  code: string;
  message: string;
  details: unknown;
  retryable: boolean;
}

/** One `corral` command: its --help text and what it does with its arguments. */
export interface Command {
  help: string;
  command(args: string[], cli: Cli): Promise<number>;
  /**
   * The --json envelope of a failure the command threw (misuse, a refused
   * file…). Default `{ ok: false, error }`; `run` gives its result's shape.
   */
  failure?(error: ErrorJson, args: string[]): object;
}

export function cliFor(io: CliIo): Cli {
  // Everything printed may quote a tool: no character in it gets to act on the terminal.
  return {
    io,
    print: (text) => void io.stdout.write(forTerminal(text.endsWith('\n') ? text : text + '\n')),
    fail: (message) => void io.stderr.write(`corral: ${forTerminal(message, { oneLine: true })}\n`),
  };
}

type Options = NonNullable<ParseArgsConfig['options']>;
type WithHelp<T extends Options> = {
  args: string[];
  options: T & { help: { type: 'boolean'; short: 'h' } };
  allowPositionals: boolean;
  strict: true;
};

/**
 * Flags whose value is a file or folder (or a store URL). An empty one (`--output ''`, often an unset
 * shell variable) names nothing: said as such, before it becomes the current folder or a bare ENOENT.
 */
const PATH_FLAGS = new Set([
  'output',
  'archive',
  'policy',
  'store',
  'dir',
  'input-file',
  'inputs',
  'wasm',
  'spec',
  'tools',
  'workflows',
  'token-file',
  'approver-token-file',
]);

/** Parse a command's flags (and -h/--help) strictly; a bad flag is a UsageError. */
export function parse<T extends Options>(args: string[], options: T, allowPositionals: boolean): ReturnType<typeof parseArgs<WithHelp<T>>> {
  const all = { ...options, help: { type: 'boolean', short: 'h' } } as const;
  let parsed: ReturnType<typeof parseArgs<WithHelp<T>>>;
  try {
    parsed = parseArgs({ args, options: all, allowPositionals, strict: true });
  } catch (err) {
    throw usageFromParseArgs(err, all);
  }
  for (const [name, value] of Object.entries(parsed.values)) {
    if (PATH_FLAGS.has(name) && (value === '' || (Array.isArray(value) && value.includes(''))))
      throw new UsageError(`--${name} needs a path, not an empty string.`, { option: `--${name}` });
  }
  return parsed;
}

/**
 * Node's parseArgs errors as sentences that say what to change: its own text
 * spans lines and, for an unknown option, ends in an unclosed quote.
 */
export function usageFromParseArgs(err: unknown, options: Options): UsageError {
  const { code, message } = err as NodeJS.ErrnoException;
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
  const flag = quoted.replace(/ <value>$/, '');
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = flag.startsWith('--')
        ? closest(
            flag,
            optionNames(options).filter((n) => n.startsWith('--')),
          )
        : undefined;
      return new UsageError(`unknown option ${flag}.${near ? ` Did you mean ${near}?` : ''}`, { option: flag });
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/does not take an argument/.test(message)) return new UsageError(`${flag} takes no value.`, { option: flag });
      if (/ambiguous/.test(message))
        return new UsageError(`${flag} needs a value; for one that starts with '-', write ${flag}=VALUE.`, { option: flag });
      return new UsageError(`${flag} needs a value.`, { option: flag });
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`unexpected argument '${quoted}': this command takes only options.`, { argument: quoted });
    default:
      return new UsageError(message.replace(/\s*\n\s*/g, ' '));
  }
}

function optionNames(options: Options): string[] {
  return Object.entries(options).flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]);
}

/**
 * A flag naming a file that must exist (`--spec`, `--wasm`): one that does
 * not is misuse of the command, said before anything starts.
 */
export function fileFlag(flag: string, path: string): string {
  let problem: string | undefined;
  try {
    if (statSync(path).isDirectory()) problem = 'it is a folder, not a file';
  } catch (err) {
    problem = fileProblem(err);
  }
  if (problem) throw new UsageError(`${flag} ${path}: ${problem} (looked for ${resolvePath(path)}).`, { option: flag });
  return path;
}

/** What an errno means to a person: "no such file" rather than ENOENT. */
export function fileProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'it is a folder, not a file',
    ENOTDIR: 'a part of the path is not a folder',
    ELOOP: 'too many symbolic links',
  };
  return (code && words[code]) ?? (err as Error).message;
}

/**
 * A flag parsed by library code that refuses it with E_INPUT_VALIDATION
 * (`--mount`): misuse of the command, so exit 2 like every other bad flag.
 */
export function flagValue<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if ((err as { code?: unknown }).code === 'E_INPUT_VALIDATION') throw new UsageError((err as Error).message);
    throw err;
  }
}

/**
 * The --tools folders, each checked to exist: a mistyped one would
 * otherwise run or serve without the tools the user meant, silently.
 */
export function toolDirsFlag(dirs: readonly string[] | undefined, flag = '--tools'): string[] {
  for (const dir of dirs ?? []) {
    let folder = false;
    try {
      folder = statSync(dir).isDirectory();
    } catch {
      // missing or unreadable: said below
    }
    if (!folder) throw new UsageError(`${flag} ${JSON.stringify(dir)}: no such folder.`);
  }
  return [...(dirs ?? [])];
}

/**
 * `--env` flags as an environment. Each is NAME=VALUE; with `fromShell`
 * (corral exec, as wasmtime) a bare NAME passes this shell's value of NAME.
 */
export function parseEnvFlags(flags: readonly string[] | undefined, { fromShell = false } = {}): Record<string, string> {
  return Object.fromEntries(
    (flags ?? []).map((flag) => {
      const eq = flag.indexOf('=');
      if (!fromShell) {
        if (eq <= 0) throw new UsageError(`bad --env ${JSON.stringify(flag)}: expected NAME=VALUE.`);
        return [flag.slice(0, eq), flag.slice(eq + 1)];
      }
      const name = eq === -1 ? flag : flag.slice(0, eq);
      if (name === '') throw new UsageError(`bad --env ${JSON.stringify(flag)}: expected NAME=VALUE or NAME`);
      const value = eq === -1 ? process.env[name] : flag.slice(eq + 1);
      if (value === undefined) throw new UsageError(`--env ${name}: this shell has no variable ${name} to pass on`);
      return [name, value];
    }),
  );
}

/**
 * The command that shows how to fix a tool refused at registration: a spec
 * file's every problem, by path (`corral validate`). Empty for other errors.
 */
export function registrationHint(err: { code: string; details?: unknown }): string {
  const source = (err.details as { source?: unknown } | undefined)?.source;
  if (err.code !== 'E_REGISTRATION' || typeof source !== 'string' || !source.endsWith('.json')) return '';
  return `; corral validate ${/^[\w./-]+$/.test(source) ? source : JSON.stringify(source)} lists every problem`;
}

/** How long a first transpile may take before the CLI says what it is doing. */
export const PROGRESS_AFTER_MS = 500;

/**
 * A progress line on stderr when a component's first transpile takes longer
 * than PROGRESS_AFTER_MS, so a 3 s first call does not look hung. Only on a
 * terminal, as npm shows progress: a pipe or a log gets what it asked for
 * and nothing else (stdout is never touched, so --json stays clean).
 */
export function prepareProgress(stderr: NodeJS.WritableStream & { isTTY?: boolean }): { onPrepare?: (event: PrepareEvent) => void } {
  if (!stderr.isTTY) return {};
  return {
    onPrepare: ({ name, finished }) => {
      const timer = setTimeout(
        () => stderr.write(`corral: preparing ${forTerminal(name, { oneLine: true })} (first run: compiling, cached for later runs)…\n`),
        PROGRESS_AFTER_MS,
      );
      void finished.then(() => clearTimeout(timer));
    },
  };
}

/** A recorded field shown on one line (a table cell, `name  value`): a newline in it must not fake a row. */
export const cell = (value: string) => forTerminal(value, { oneLine: true });

/** Split on \n only: /^/m would also start lines at \r and U+2028, inside what a tool printed. */
export function indent(text: string): string {
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
