/**
 * The options of `corral.exec` (Node and browser), checked and turned into
 * an ExecRequest. Everything is passed on exactly as given — argv,
 * environment, directory names — and every bad value is refused before the
 * program starts, with the option named.
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { MountBinding } from '@corral/core';
import type { ExecRequest } from './executor.js';

export interface ExecOptions {
  /** argv[0]. Default 'main.wasm'; the CLI passes the file's name. */
  argv0?: string;
  /** Arguments after argv[0]. */
  args?: string[];
  /** The whole environment: nothing else is added. */
  env?: Record<string, string>;
  /** Directories the program may reach (preopens), in this order. Guest names are used as given: `.`, `data`, `/work`. */
  mounts?: MountBinding[];
  /** Bytes, or chunks read only as the program asks (a Node stream is one). Default: empty. */
  stdin?: Uint8Array | AsyncIterable<Uint8Array>;
  /** Output as the program writes it; when given, the result holds none of that stream. */
  onStdout?: (chunk: Uint8Array) => void | Promise<void>;
  onStderr?: (chunk: Uint8Array) => void | Promise<void>;
  /** Which of stdin, stdout, stderr the program should see as terminals (the CLI passes its own). */
  terminals?: [boolean, boolean, boolean];
  /** Cap on each wasm memory. Default 512. */
  memoryMb?: number;
  /** Bytes the program may add to files in writable directories. Default 256. */
  diskMb?: number;
  /** Wall-clock limit; 0 (the default) for none. */
  timeoutMs?: number;
  /** Output kept when captured, per stream. Default 16 MiB. */
  outputLimitBytes?: number;
  signal?: AbortSignal;
  /** Called when a component has to be transpiled before it runs (its first run; cached afterwards). */
  onPrepare?: () => void;
}

export const EXEC_DEFAULTS = Object.freeze({ memoryMb: 512, diskMb: 256, timeoutMs: 0, outputLimitBytes: 16 * 2 ** 20 });

/** wasm32 memories cannot grow past 4 GiB. */
const MAX_MEMORY_MB = 4096;
const MB = 2 ** 20;

export function execRequest(options: ExecOptions = {}): ExecRequest {
  if (typeof options !== 'object' || options === null) bad('options', 'must be an object');
  // Every value is read once and the copy is what is checked and used: a
  // getter or a Proxy answering differently on a second read would
  // otherwise pass the checks with one value and run with another (a NUL
  // in a guest name, a directory mounted twice).
  const argv0 = options.argv0 ?? 'main.wasm';
  cString(argv0, 'argv0');
  const givenArgs = options.args ?? [];
  if (!Array.isArray(givenArgs)) bad('args', 'must be an array of strings');
  const args: unknown[] = Array.from(givenArgs);
  args.forEach((arg, i) => {
    cString(arg, `args[${i}]`);
  });
  const givenEnv = options.env ?? {};
  if (typeof givenEnv !== 'object' || givenEnv === null || Array.isArray(givenEnv)) bad('env', 'must be an object of strings');
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(givenEnv) as [string, unknown][]) {
    cString(name, 'env name');
    if (name === '' || name.includes('=')) bad(`env ${JSON.stringify(name)}`, 'a name must be non-empty and have no "="');
    cString(value, `env ${name}`);
    env[name] = value;
  }
  const givenMounts = options.mounts ?? [];
  if (!Array.isArray(givenMounts)) bad('mounts', 'must be an array');
  const guests = new Set<string>();
  const mounts = Array.from(givenMounts as unknown[], (given, i) => {
    if (typeof given !== 'object' || given === null) bad(`mounts[${i}]`, 'must be an object');
    const mount = { ...given } as MountBinding;
    cString(mount.guest, `mounts[${i}].guest`);
    if (mount.guest === '') bad(`mounts[${i}].guest`, 'must not be empty');
    if (guests.has(mount.guest)) bad(`mounts[${i}].guest`, `${JSON.stringify(mount.guest)} is mounted twice`);
    guests.add(mount.guest);
    if (mount.access !== 'read' && mount.access !== 'read-write') bad(`mounts[${i}].access`, "must be 'read' or 'read-write'");
    return mount;
  });
  const stdin = options.stdin;
  if (
    stdin !== undefined &&
    !(stdin instanceof Uint8Array) &&
    typeof (stdin as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] !== 'function'
  ) {
    bad('stdin', 'must be a Uint8Array or an async iterable of Uint8Array chunks');
  }
  const onStdout = options.onStdout;
  const onStderr = options.onStderr;
  const onPrepare = options.onPrepare;
  if (onStdout !== undefined && typeof onStdout !== 'function') bad('onStdout', 'must be a function');
  if (onStderr !== undefined && typeof onStderr !== 'function') bad('onStderr', 'must be a function');
  if (onPrepare !== undefined && typeof onPrepare !== 'function') bad('onPrepare', 'must be a function');
  const terminals = options.terminals;
  if (terminals !== undefined && !Array.isArray(terminals)) bad('terminals', 'must be an array of three booleans');
  const memoryMb = whole(options.memoryMb ?? EXEC_DEFAULTS.memoryMb, 'memoryMb', 1, MAX_MEMORY_MB);
  const diskMb = whole(options.diskMb ?? EXEC_DEFAULTS.diskMb, 'diskMb', 0, Math.floor(Number.MAX_SAFE_INTEGER / MB));
  const timeoutMs = whole(options.timeoutMs ?? EXEC_DEFAULTS.timeoutMs, 'timeoutMs', 0, Number.MAX_SAFE_INTEGER);
  const outputLimitBytes = whole(options.outputLimitBytes ?? EXEC_DEFAULTS.outputLimitBytes, 'outputLimitBytes', 0, 2 ** 31);
  const signal = options.signal;
  if (signal !== undefined && !(typeof signal === 'object' && signal !== null && typeof signal.addEventListener === 'function')) {
    bad('signal', 'must be an AbortSignal');
  }
  return {
    name: argv0,
    args: args as string[],
    env,
    mounts,
    ...(stdin !== undefined ? { stdin } : {}),
    ...(onStdout ? { onStdout } : {}),
    ...(onStderr ? { onStderr } : {}),
    ...(terminals ? { terminals: [!!terminals[0], !!terminals[1], !!terminals[2]] } : {}),
    memoryLimitBytes: memoryMb * MB,
    diskLimitBytes: diskMb * MB,
    outputLimitBytes,
    timeoutMs,
    ...(signal ? { signal } : {}),
    ...(onPrepare ? { onPrepare } : {}),
  };
}

function bad(option: string, problem: string): never {
  throw new CorralError(ErrorCodes.INPUT_VALIDATION, `exec: ${option} ${problem}.`, { option });
}

/** A string a C program can receive: no NUL, which would cut it short. */
function cString(value: unknown, option: string): asserts value is string {
  if (typeof value !== 'string') bad(option, 'must be a string');
  if (value.includes('\0')) bad(option, 'must not contain a NUL character');
}

function whole(value: unknown, option: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    bad(option, `must be a whole number from ${min} to ${max} (got ${String(value)})`);
  }
  return value;
}
