/**
 * The WASI 0.2 imports of one component instance: exactly the interfaces
 * Corral provides (PROVIDED_INTERFACES), built fresh per instance and
 * answering for one call (its stdio, arguments, environment and preopens:
 * CallState), in objects with no prototype. A component importing anything else was refused when
 * it was loaded (component-imports.ts); here a name outside the list simply
 * does not exist, and `imports['constructor']` is undefined, not Object.
 *
 * Every function checks its arguments (guest.ts); nothing here keeps state
 * between calls or leaves a timer or promise behind.
 */
import { GuestTypeError, u32, u64 } from './guest.js';
import {
  IoError,
  InputStream,
  OutputStream,
  Pollable,
  bytesSource,
  deadlinePollable,
  inputStream,
  monotonicNs,
  outputStream,
  poll,
  readyPollable,
  realtimeNs,
} from './io.js';
import { Descriptor, DirectoryEntryStream, filesystemErrorCode } from './fs/filesystem.js';
import { ProcExit } from './outcome.js';
import type { GuestIo } from './request.js';

export interface Preview2Call extends GuestIo {
  /** The call's memory budget: no single host allocation for the guest is larger. */
  memoryLimitBytes: number;
}

/** A namespace object: only its own properties, nothing inherited. */
function ns(members: Record<string, unknown>): Record<string, unknown> {
  return Object.assign(Object.create(null) as Record<string, unknown>, members);
}

class TerminalInput {}
class TerminalOutput {}
for (const type of [TerminalInput, TerminalOutput]) {
  Object.setPrototypeOf(type.prototype, null);
  Object.setPrototypeOf(type, null);
}

/** What one call's imports hand its guest, made when the call opens. */
export interface CallState {
  readonly stdin: InputStream;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly terminals: readonly [boolean, boolean, boolean];
  readonly environment: ReadonlyArray<readonly [string, string]>;
  readonly args: readonly string[];
  readonly preopens: Preview2Call['preopens'];
  readonly memoryLimitBytes: number;
  /** wasi:random/insecure-seed's answer, drawn when first asked for (most tools never do: a draw costs ~10 µs). */
  seed?: [bigint, bigint];
}

export function callState(call: Preview2Call): CallState {
  return {
    stdin: inputStream(call.stdin instanceof Uint8Array ? bytesSource(call.stdin) : call.stdin),
    stdout: outputStream(call.stdout),
    stderr: outputStream(call.stderr),
    terminals: call.terminals ?? [false, false, false],
    environment: Object.entries(call.env).map(([k, v]) => [k, v] as const),
    args: [...call.args],
    preopens: call.preopens,
    memoryLimitBytes: call.memoryLimitBytes,
  };
}

/** The import object for jco's `instantiate`, keyed by interface name without version. */
export function preview2Imports(call: Preview2Call): Record<string, Record<string, unknown>> {
  const state = callState(call);
  return boundImports(() => state);
}

/**
 * The import object, answering for the call `current()` returns each time
 * the guest calls in: an instance made before its call (run.ts) is bound to
 * that call when it starts, and serves no other.
 */
export function boundImports(current: () => CallState): Record<string, Record<string, unknown>> {
  const randomBytes = (len: unknown): Uint8Array => {
    const n = u64(len, 'random byte length');
    // The guest could never receive more than its memory holds.
    if (n > BigInt(current().memoryLimitBytes)) throw new GuestTypeError(`random byte length ${n} exceeds the call's memory limit`);
    const out = new Uint8Array(Number(n));
    for (let at = 0; at < out.length; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
    return out;
  };
  const randomU64 = (): bigint => crypto.getRandomValues(new BigUint64Array(1))[0]!;

  const imports: Record<string, Record<string, unknown>> = Object.create(null);
  Object.assign(imports, {
    'wasi:cli/environment': ns({
      getEnvironment: () => current().environment.map(([k, v]) => [k, v]),
      getArguments: () => [...current().args],
      initialCwd: () => undefined,
    }),
    'wasi:cli/exit': ns({
      exit(status: unknown) {
        const tag = (status as { tag?: unknown } | null)?.tag;
        if (tag !== 'ok' && tag !== 'err') throw new GuestTypeError('exit status must be ok or err');
        throw new ProcExit(tag === 'ok' ? 0 : 1);
      },
      exitWithCode(code: unknown) {
        throw new ProcExit(u32(code, 'exit code') & 0xff);
      },
    }),
    'wasi:cli/stdin': ns({ getStdin: () => current().stdin }),
    'wasi:cli/stdout': ns({ getStdout: () => current().stdout }),
    'wasi:cli/stderr': ns({ getStderr: () => current().stderr }),
    'wasi:cli/terminal-input': ns({ TerminalInput }),
    'wasi:cli/terminal-output': ns({ TerminalOutput }),
    // Captured stdio is not a terminal; `corral exec` passes the host's on.
    'wasi:cli/terminal-stdin': ns({ getTerminalStdin: () => (current().terminals[0] ? new TerminalInput() : undefined) }),
    'wasi:cli/terminal-stdout': ns({ getTerminalStdout: () => (current().terminals[1] ? new TerminalOutput() : undefined) }),
    'wasi:cli/terminal-stderr': ns({ getTerminalStderr: () => (current().terminals[2] ? new TerminalOutput() : undefined) }),
    'wasi:clocks/monotonic-clock': ns({
      now: monotonicNs,
      resolution: () => 1000n,
      subscribeInstant: (when: unknown) => deadlinePollable(u64(when, 'instant')),
      subscribeDuration: (ns: unknown) => {
        const duration = u64(ns, 'duration');
        return duration === 0n ? readyPollable() : deadlinePollable(monotonicNs() + duration);
      },
    }),
    'wasi:clocks/wall-clock': ns({
      now: () => {
        const t = realtimeNs();
        return { seconds: t / 1_000_000_000n, nanoseconds: Number(t % 1_000_000_000n) };
      },
      resolution: () => ({ seconds: 0n, nanoseconds: 1000 }),
    }),
    'wasi:filesystem/types': ns({ Descriptor, DirectoryEntryStream, filesystemErrorCode }),
    'wasi:filesystem/preopens': ns({ getDirectories: () => current().preopens.map(([d, guest]) => [d, guest]) }),
    'wasi:io/error': ns({ Error: IoError }),
    'wasi:io/poll': ns({ Pollable, poll }),
    'wasi:io/streams': ns({ InputStream, OutputStream }),
    'wasi:random/random': ns({ getRandomBytes: randomBytes, getRandomU64: randomU64 }),
    'wasi:random/insecure': ns({ getInsecureRandomBytes: randomBytes, getInsecureRandomU64: randomU64 }),
    'wasi:random/insecure-seed': ns({
      insecureSeed: () => {
        const state = current();
        return [...(state.seed ??= [randomU64(), randomU64()])];
      },
    }),
  });
  return imports;
}
