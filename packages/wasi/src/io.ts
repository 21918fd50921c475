/**
 * wasi:io 0.2 (error, streams, poll), synchronous.
 *
 * Corral's components run in a worker that has nothing else to do while a
 * call runs, so every stream here is ready at once (stdin and files are in
 * reach, output goes to a capped buffer or a file) and a pollable is either
 * ready or a monotonic deadline the worker sleeps until. Nothing is
 * asynchronous: no timer or promise outlives the call that made it.
 *
 * Every argument from the guest is checked (guest.ts) and every length it
 * asks for is capped (MAX_CHUNK), so a guest cannot make the host allocate
 * more than one chunk per call.
 */
import { GuestTypeError, bytes, list, resource, u64, u64Number } from './guest.js';

/** Most bytes one read, skip or write-permit covers: reads may be short, so a bigger ask just takes more calls. */
export const MAX_CHUNK = 1 << 20;
/** blocking-write-and-flush and blocking-write-zeroes-and-flush accept at most this much (wasi:io/streams). */
const BLOCKING_WRITE_MAX = 4096;
/** A poll list longer than this is refused (the guest would wait on more than it could ever handle). */
export const MAX_POLL = 65536;

/** Only this module may construct the resources it hands out. */
const HOST = Symbol('corral host');

/** A filesystem error code (wasi:filesystem `error-code`), thrown as a string by filesystem operations. */
export type FsErrorCode = string;

/** wasi:io/error `error`: why a stream failed. */
export class IoError {
  readonly #message: string;
  /** Set when the failure was a filesystem one, for wasi:filesystem `filesystem-error-code`. */
  readonly code: FsErrorCode | undefined;

  constructor(token: typeof HOST, message: string, code?: FsErrorCode) {
    if (token !== HOST) throw new GuestTypeError('wasi:io/error is created by the host');
    this.#message = message;
    this.code = code;
  }

  toDebugString(): string {
    return this.#message;
  }
}

/** A stream error the glue hands the guest: the stream is done, or the last operation failed. */
function streamError(err: unknown): never {
  if (typeof err === 'string') throw { tag: 'last-operation-failed', val: new IoError(HOST, err, err) };
  throw err;
}

const CLOSED = { tag: 'closed' } as const;

/** Bytes a stream reads from: at most `max` bytes, or null at the end. */
export interface ByteSource {
  read(max: number): Uint8Array | null;
}

/** A source over bytes given whole (a call's stdin when it is not streamed). */
export function bytesSource(data: Uint8Array): ByteSource & { remaining(): number } {
  let at = 0;
  return {
    read(max) {
      if (at >= data.length) return null;
      const chunk = data.subarray(at, at + max);
      at += chunk.length;
      return chunk;
    },
    remaining: () => data.length - at,
  };
}

/** Bytes a stream writes to. May throw a filesystem error code (a failed write) or an Error (stops the guest). */
export interface ByteSink {
  write(bytes: Uint8Array): void;
}

/** wasi:io/poll `pollable`: ready now, or at a monotonic deadline. */
export class Pollable {
  /** Monotonic nanoseconds when it becomes ready; null is ready now. */
  readonly #deadline: bigint | null;

  constructor(token: typeof HOST, deadline: bigint | null) {
    if (token !== HOST) throw new GuestTypeError('pollables are created by the host');
    this.#deadline = deadline;
  }

  /** Nanoseconds until ready (0 when ready). */
  remaining(): bigint {
    if (this.#deadline === null) return 0n;
    const left = this.#deadline - monotonicNs();
    return left > 0n ? left : 0n;
  }

  ready(): boolean {
    return this.remaining() === 0n;
  }

  block(): void {
    sleepNs(this.remaining());
  }
}

export function readyPollable(): Pollable {
  return new Pollable(HOST, null);
}

export function deadlinePollable(monotonicDeadlineNs: bigint): Pollable {
  return new Pollable(HOST, monotonicDeadlineNs);
}

/** wasi:io/poll `poll`: the indices of the ready pollables, waiting for the first when none is. */
export function poll(input: unknown): Uint32Array {
  const pollables = list(input, 'poll list', MAX_POLL).map((p, i) => resource(p, `poll list[${i}]`, Pollable));
  if (pollables.length === 0) throw new GuestTypeError('poll list must not be empty');
  let soonest = pollables[0]!.remaining();
  for (const p of pollables) if (p.remaining() < soonest) soonest = p.remaining();
  sleepNs(soonest);
  const ready: number[] = [];
  pollables.forEach((p, i) => {
    if (p.ready()) ready.push(i);
  });
  return Uint32Array.from(ready);
}

/** wasi:io/streams `input-stream`. Never blocks: its source is in memory or a file. */
export class InputStream {
  readonly #source: ByteSource;
  #closed = false;

  constructor(token: typeof HOST, source: ByteSource) {
    if (token !== HOST) throw new GuestTypeError('streams are created by the host');
    this.#source = source;
  }

  read(len: unknown): Uint8Array {
    const max = Math.min(u64Number(len, 'read length'), MAX_CHUNK);
    if (this.#closed) throw CLOSED;
    if (max === 0) return new Uint8Array(0);
    let chunk: Uint8Array | null;
    try {
      chunk = this.#source.read(max);
    } catch (err) {
      streamError(err);
    }
    if (chunk === null) {
      this.#closed = true;
      throw CLOSED;
    }
    return chunk;
  }

  blockingRead(len: unknown): Uint8Array {
    return this.read(len);
  }

  skip(len: unknown): bigint {
    u64(len, 'skip length');
    return BigInt(this.read(len).length);
  }

  blockingSkip(len: unknown): bigint {
    return this.skip(len);
  }

  subscribe(): Pollable {
    return readyPollable();
  }
}

/** wasi:io/streams `output-stream`. Never blocks: writes land at once. */
export class OutputStream {
  readonly #sink: ByteSink;
  #permit = 0;
  #failed = false;

  constructor(token: typeof HOST, sink: ByteSink) {
    if (token !== HOST) throw new GuestTypeError('streams are created by the host');
    this.#sink = sink;
  }

  checkWrite(): bigint {
    if (this.#failed) throw CLOSED;
    this.#permit = MAX_CHUNK;
    return BigInt(MAX_CHUNK);
  }

  write(contents: unknown): void {
    const data = bytes(contents, 'write contents');
    // "precondition: check-write gave permit of Ok(n) and contents has a length of less than or equal to n."
    if (data.length > this.#permit) throw new GuestTypeError('write exceeds the permit returned by check-write');
    this.#permit -= data.length;
    this.#put(data);
  }

  blockingWriteAndFlush(contents: unknown): void {
    const data = bytes(contents, 'write contents');
    if (data.length > BLOCKING_WRITE_MAX) throw new GuestTypeError(`blocking-write-and-flush takes at most ${BLOCKING_WRITE_MAX} bytes`);
    this.#put(data);
  }

  flush(): void {
    if (this.#failed) throw CLOSED;
  }

  blockingFlush(): void {
    this.flush();
  }

  writeZeroes(len: unknown): void {
    const n = u64Number(len, 'write-zeroes length');
    if (n > this.#permit) throw new GuestTypeError('write-zeroes exceeds the permit returned by check-write');
    this.#permit -= n;
    this.#put(new Uint8Array(n));
  }

  blockingWriteZeroesAndFlush(len: unknown): void {
    const n = u64Number(len, 'write-zeroes length');
    if (n > BLOCKING_WRITE_MAX) throw new GuestTypeError(`blocking-write-zeroes-and-flush takes at most ${BLOCKING_WRITE_MAX} bytes`);
    this.#put(new Uint8Array(n));
  }

  splice(src: unknown, len: unknown): bigint {
    const from = resource(src, 'splice source', InputStream);
    const n = Math.min(u64Number(len, 'splice length'), MAX_CHUNK);
    if (this.#failed) throw CLOSED;
    const chunk = from.read(BigInt(n));
    this.#put(chunk);
    return BigInt(chunk.length);
  }

  blockingSplice(src: unknown, len: unknown): bigint {
    return this.splice(src, len);
  }

  subscribe(): Pollable {
    return readyPollable();
  }

  #put(data: Uint8Array): void {
    if (this.#failed) throw CLOSED;
    if (data.length === 0) return;
    try {
      this.#sink.write(data);
    } catch (err) {
      // "After a failed write, the stream is closed": later calls say so.
      if (typeof err === 'string') this.#failed = true;
      streamError(err);
    }
  }
}

export function inputStream(source: ByteSource): InputStream {
  return new InputStream(HOST, source);
}

export function outputStream(sink: ByteSink): OutputStream {
  return new OutputStream(HOST, sink);
}

// Resources inherit nothing, nor do their classes: a component that
// declares a method named like an Object or Function one (`to-string`,
// `[static]descriptor.bind`) finds no such method instead of a host function
// it was not given.
for (const type of [IoError, Pollable, InputStream, OutputStream]) {
  Object.setPrototypeOf(type.prototype, null);
  Object.setPrototypeOf(type, null);
}

/** Nanoseconds on a monotonic clock. */
export function monotonicNs(): bigint {
  return BigInt(Math.round(performance.now() * 1e6));
}

/** Nanoseconds since the epoch. Microseconds since the epoch still fit a double exactly. */
export function realtimeNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

let sleepCell: Int32Array | null | undefined;

/**
 * Block the thread: Atomics.wait where the host allows it (workers, Node),
 * else a busy wait. In slices, so a host stopping the worker is not kept
 * waiting for a long sleep.
 */
export function sleepNs(ns: bigint): void {
  if (ns <= 0n) return;
  const end = performance.now() + Number(ns) / 1e6;
  if (sleepCell === undefined) {
    try {
      sleepCell = new Int32Array(new SharedArrayBuffer(4));
    } catch {
      sleepCell = null;
    }
  }
  for (let left = end - performance.now(); left > 0; left = end - performance.now()) {
    if (sleepCell) {
      try {
        Atomics.wait(sleepCell, 0, 0, Math.min(left, 100));
        continue;
      } catch {
        sleepCell = null;
      }
    }
  }
}
