/**
 * What a run is asked for (with the stdio channel of a streamed run, see
 * stdio-channel.ts) and what a runner is built with. Types only, so every
 * module of a run (call.ts, stdio-channel.ts, outcome.ts, the runners) can
 * name them without the modules importing one another in a cycle.
 */
import type { CodeCache } from './code-cache.js';
import type { MountBinding } from '@corral/core';
import type { MountOpeners } from './mount-sources.js';
import type { ByteSink, ByteSource } from './io.js';
import type { Descriptor } from './fs/filesystem.js';

/** What either WASI host gives one guest: its argv, environment, stdio and preopened directories. */
export interface GuestIo {
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  /** Bytes given whole, or a source read as the guest asks (streamed stdin). */
  stdin: Uint8Array | ByteSource;
  stdout: ByteSink;
  stderr: ByteSink;
  /** Which of stdin, stdout, stderr are terminals on the host side. Default: none. */
  terminals?: readonly [boolean, boolean, boolean];
  /** The directories the guest may reach, in order (preview1: fd 3, 4, …): [descriptor, guest path]. */
  preopens: ReadonlyArray<readonly [Descriptor, string]>;
}

/** What one run needs; the host has already checked it against the spec. */
export interface RunRequest {
  toolName: string;
  stdin: Uint8Array;
  args: string[];
  env: Record<string, string>;
  mounts: MountBinding[];
  outputLimitBytes: number;
  /** Cap on each wasm memory the tool defines (resources.memory_mb). */
  memoryLimitBytes: number;
  /** Bytes the call may add to files in writable mounts and /tmp (resources.disk_mb). */
  diskLimitBytes: number;
  /** Give the call a private in-memory /tmp when no mount is there. Default true; `corral exec` mounts exactly what it is given. */
  scratchTmp?: boolean;
  /** Stream stdio through this channel instead of capturing it (`corral exec`); `stdin` is then used only when the channel does not stream it. */
  stdio?: StdioChannel;
  /**
   * A preview1 module run for the component that wraps it in the preview1
   * adapter (PreparedComponent.preview1): it exits as that component would,
   * with 1 for any code but 0 (the adapter's wasi:cli/exit takes ok or err).
   */
  adapterExit?: boolean;
}

export interface RunnerOptions {
  /** The mount sources this host opens besides `memory` (built in), by kind. */
  mountOpeners?: MountOpeners;
  /** Bytes of code kept loaded, least recently used evicted first (code-cache.ts). Default 256 MiB. */
  cacheBytes?: number;
  /** A cache shared with another runner (a worker's two runners share one budget); else the runner makes its own. */
  codeCache?: CodeCache;
}

/** What crosses from the host into the worker with the run request. */
export interface StdioChannel {
  port: MessagePort;
  /** Control words and the stdin buffer; absent where SharedArrayBuffer is not allowed. */
  shared?: SharedArrayBuffer;
  /** Whether stdin is streamed from the host (else the request's `stdin` bytes are all there is). */
  streamStdin: boolean;
  /** Which of stdin, stdout, stderr are terminals on the host side (the guest may ask). */
  terminals: [boolean, boolean, boolean];
  /** Whether stdout and stderr go to the host's handlers; a stream without one is captured into the result instead. */
  forward: [boolean, boolean];
}
