/**
 * Stdio that streams between a sandbox worker and its host while the guest
 * runs (`corral exec`): output is posted in chunks as the guest writes it,
 * and stdin is read on demand. The guest is synchronous, so a read posts a
 * request and sleeps on a shared word until the host has copied the answer
 * into shared memory; output waits the same way once WINDOW chunks are
 * unacknowledged, so a guest cannot flood the host faster than the host's
 * own stdout drains.
 *
 * Without SharedArrayBuffer (a browser page that is not cross-origin
 * isolated) there is no way to wait: stdin must be given whole, and output
 * is bounded only by the call's output limit.
 */
import { CappedSink, OutputLimitExceeded } from './outcome.js';
import { bytesSource, type ByteSink, type ByteSource } from './io.js';
import type { RunRequest, StdioChannel } from './request.js';

export type { StdioChannel } from './request.js';

/** Largest piece of output in one message, and of stdin in one read. */
export const STDIO_CHUNK = 64 * 1024;
/** Output messages the guest may have in flight before it waits for the host. */
const WINDOW = 16;

// Words of the shared control block.
const STDIN_STATE = 0; // IDLE, WAITING (worker asked), READY (bytes copied), EOF
const STDIN_LENGTH = 1;
const ACKED = 2; // output messages the host has handled (wrapping)
const DATA_OFFSET = 16;
const IDLE = 0;
const WAITING = 1;
const READY = 2;
const EOF = 3;

type WorkerMessage = { kind: 'out'; fd: 1 | 2; bytes: Uint8Array } | { kind: 'read'; max: number } | { kind: 'end' };

export interface StdioHandlers {
  /** Stdin: bytes given whole, or chunks pulled only as the guest reads. */
  stdin?: Uint8Array | AsyncIterable<Uint8Array>;
  /** Called in order for each chunk; the guest waits while several are unfinished. */
  onStdout?: (chunk: Uint8Array) => void | Promise<void>;
  onStderr?: (chunk: Uint8Array) => void | Promise<void>;
  terminals?: [boolean, boolean, boolean];
}

/** True where a worker can block on shared memory (Node; browsers only when cross-origin isolated). */
export function canShareMemory(): boolean {
  return typeof SharedArrayBuffer === 'function' && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false;
}

/**
 * The host's end: make the channel to send with the run request (transfer
 * its port), and serve the worker's messages until it says it has ended.
 */
export function openStdio(handlers: StdioHandlers): { channel: StdioChannel; ended: Promise<void>; close(): void } {
  const { port1, port2 } = new MessageChannel();
  const shared = canShareMemory() ? new SharedArrayBuffer(DATA_OFFSET + STDIO_CHUNK) : undefined;
  const control = shared ? new Int32Array(shared, 0, DATA_OFFSET / 4) : undefined;
  const data = shared ? new Uint8Array(shared, DATA_OFFSET, STDIO_CHUNK) : undefined;
  const given = handlers.stdin;
  const streamStdin = given !== undefined && !(given instanceof Uint8Array) && control !== undefined;
  const source = streamStdin ? chunkReader(given as AsyncIterable<Uint8Array>) : undefined;

  let outputs = Promise.resolve();
  let finish!: () => void;
  const ended = new Promise<void>((resolve) => (finish = resolve));
  port1.onmessage = (event: MessageEvent<WorkerMessage>) => {
    const message = event.data;
    if (message.kind === 'out') {
      const handler = message.fd === 1 ? handlers.onStdout : handlers.onStderr;
      outputs = outputs
        .then(() => handler?.(message.bytes))
        .catch(() => {}) // a closed pipe on the host side must not stop the guest's run from ending
        .then(() => {
          if (control) {
            Atomics.add(control, ACKED, 1);
            Atomics.notify(control, ACKED);
          }
        });
    } else if (message.kind === 'read' && control && data && source) {
      void source.read(Math.min(message.max, STDIO_CHUNK)).then(
        (chunk) => {
          if (chunk === null) {
            Atomics.store(control, STDIN_STATE, EOF);
          } else {
            data.set(chunk);
            Atomics.store(control, STDIN_LENGTH, chunk.length);
            Atomics.store(control, STDIN_STATE, READY);
          }
          Atomics.notify(control, STDIN_STATE);
        },
        () => {
          Atomics.store(control, STDIN_STATE, EOF);
          Atomics.notify(control, STDIN_STATE);
        },
      );
    } else if (message.kind === 'end') {
      void outputs.then(finish);
    }
  };
  const close = () => {
    port1.close();
    void source?.close();
    finish();
  };
  return {
    channel: {
      port: port2,
      ...(shared ? { shared } : {}),
      streamStdin,
      terminals: handlers.terminals ?? [false, false, false],
      forward: [handlers.onStdout !== undefined, handlers.onStderr !== undefined],
    },
    ended,
    close,
  };
}

/** Pull chunks from an async iterable, at most `max` bytes at a time, keeping the rest for the next read. */
function chunkReader(iterable: AsyncIterable<Uint8Array>) {
  const iterator = iterable[Symbol.asyncIterator]();
  let pending: Uint8Array = new Uint8Array(0);
  let done = false;
  return {
    async read(max: number): Promise<Uint8Array | null> {
      while (pending.length === 0 && !done) {
        const next = await iterator.next();
        if (next.done) done = true;
        else pending = next.value instanceof Uint8Array ? next.value : new TextEncoder().encode(String(next.value));
      }
      if (pending.length === 0) return null;
      const chunk = pending.subarray(0, max);
      pending = pending.subarray(chunk.length);
      return chunk;
    },
    async close(): Promise<void> {
      done = true;
      await iterator.return?.();
    },
  };
}

/** The worker's end: stdio for one run, and `end()` once the guest has stopped. */
export function workerStdio(
  channel: StdioChannel,
  givenStdin: Uint8Array,
  outputLimitBytes: number,
): { stdin: ByteSource; stdout: ByteSink; stderr: ByteSink; end(): void } {
  const { port, shared } = channel;
  const control = shared ? new Int32Array(shared, 0, DATA_OFFSET / 4) : undefined;
  const data = shared ? new Uint8Array(shared, DATA_OFFSET, STDIO_CHUNK) : undefined;
  let posted = 0;
  /** Bytes posted where the guest cannot be made to wait: bounded by the output limit instead. */
  let unpaced = 0;

  const sink = (fd: 1 | 2): ByteSink => ({
    write(bytes) {
      for (let at = 0; at < bytes.length; at += STDIO_CHUNK) {
        const piece = bytes.slice(at, at + STDIO_CHUNK);
        if (control) {
          // Wait while WINDOW messages are unhandled; `posted - acked` wraps like the counter.
          for (let acked = Atomics.load(control, ACKED); ((posted - acked) | 0) >= WINDOW; acked = Atomics.load(control, ACKED)) {
            Atomics.wait(control, ACKED, acked);
          }
        } else if ((unpaced += piece.length) > outputLimitBytes) {
          throw new OutputLimitExceeded(outputLimitBytes);
        }
        port.postMessage({ kind: 'out', fd, bytes: piece } satisfies WorkerMessage, [piece.buffer]);
        posted = (posted + 1) | 0;
      }
    },
  });

  const given = bytesSource(givenStdin);
  let stdinEnded = false;
  // Each round trip to the host costs tens of microseconds, so ask for a
  // whole chunk and serve small reads from it; the host answers with what
  // it has (a terminal's line), never waiting to fill the chunk.
  let buffered: Uint8Array = new Uint8Array(0);
  const stdin: ByteSource = {
    read(max) {
      if (!channel.streamStdin || !control || !data) return given.read(max);
      if (buffered.length === 0) {
        if (stdinEnded) return null;
        Atomics.store(control, STDIN_STATE, WAITING);
        port.postMessage({ kind: 'read', max: STDIO_CHUNK } satisfies WorkerMessage);
        Atomics.wait(control, STDIN_STATE, WAITING);
        const state = Atomics.load(control, STDIN_STATE);
        Atomics.store(control, STDIN_STATE, IDLE);
        if (state === EOF) {
          stdinEnded = true;
          return null;
        }
        // The length is the host's, but check it anyway: it bounds a copy.
        buffered = data.slice(0, Math.min(Atomics.load(control, STDIN_LENGTH), STDIO_CHUNK));
      }
      const chunk = buffered.subarray(0, max);
      buffered = buffered.subarray(chunk.length);
      return chunk;
    },
  };

  return {
    stdin,
    stdout: sink(1),
    stderr: sink(2),
    end() {
      // The host closes the channel once this arrives; closing here could drop it.
      port.postMessage({ kind: 'end' } satisfies WorkerMessage);
    },
  };
}

/**
 * A run's stdio: captured up to the output limit (a tool call), or streamed
 * through the request's channel (`corral exec`). `captured` is what the
 * result reports: empty for a stream the host's handler has had already.
 */
export function callStdio(request: RunRequest): {
  stdin: Uint8Array | ByteSource;
  stdout: ByteSink;
  stderr: ByteSink;
  terminals?: [boolean, boolean, boolean];
  captured: { stdout: CappedSink; stderr: CappedSink };
  end(): void;
} {
  const captured = {
    stdout: new CappedSink(request.outputLimitBytes, 'head'),
    stderr: new CappedSink(request.outputLimitBytes, 'tail'),
  };
  if (!request.stdio) return { stdin: request.stdin, ...captured, captured, end() {} };
  const streamed = workerStdio(request.stdio, request.stdin, request.outputLimitBytes);
  // A stream the host has no handler for is captured, as when nothing is streamed:
  // streaming stdin alone, or stdout alone, must not drop the other output.
  const [toHostOut, toHostErr] = request.stdio.forward;
  return {
    ...streamed,
    stdout: toHostOut ? streamed.stdout : captured.stdout,
    stderr: toHostErr ? streamed.stderr : captured.stderr,
    terminals: request.stdio.terminals,
    captured,
  };
}
