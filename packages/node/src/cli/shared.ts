/**
 * What every `corral` command shares: exit statuses, usage errors, flag
 * parsing, `--env` parsing and printing. Kept light (node:util, a stat,
 * and terminal.ts only): main.ts loads it for `--help` too.
 */
import { statSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { forTerminal } from '../terminal.js';

/** Exit statuses: the tool ran and succeeded, the tool failed, the command was misused. */
export const EXIT_OK = 0;
export const EXIT_TOOL_FAILED = 1;
export const EXIT_USAGE = 2;

/** The command was misused: main prints the message and a pointer to --help, and exits EXIT_USAGE. */
export class UsageError extends Error {}

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

/** One `corral` command: its --help text and what it does with its arguments. */
export interface Command {
  help: string;
  command(args: string[], cli: Cli): Promise<number>;
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

/** Parse a command's flags (and -h/--help) strictly; a bad flag is a UsageError. */
export function parse<T extends Options>(args: string[], options: T, allowPositionals: boolean): ReturnType<typeof parseArgs<WithHelp<T>>> {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
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
export function toolDirsFlag(dirs: readonly string[] | undefined): string[] {
  for (const dir of dirs ?? []) {
    let folder = false;
    try {
      folder = statSync(dir).isDirectory();
    } catch {
      // missing or unreadable: said below
    }
    if (!folder) throw new UsageError(`--tools ${JSON.stringify(dir)}: no such folder.`);
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
