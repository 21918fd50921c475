/** The tool contract, as users write it in tool-spec.json (snake_case). */
export interface ToolSpec {
  name: string;
  version: string;
  description?: string;
  /** Path of the .wasm file, relative to the spec file. */
  component: string;
  /** `component` (wasi:cli command world) or `module` (preview1). Detected when absent. */
  kind?: 'component' | 'module';
  input_schema: JsonSchema;
  output_schema?: JsonSchema;
  resources?: ToolResources;
  mounts?: MountSpec[];
  /** Names of environment variables the tool may see (values come from the caller). */
  env?: string[];
}

export type JsonSchema = Record<string, unknown> | boolean;

export interface ToolResources {
  cpu_cores?: number;
  memory_mb?: number;
  disk_mb?: number;
  timeout_ms?: number;
  network_access?: string[];
}

export type MountAccess = 'read' | 'read-write';

export interface MountSpec {
  guest: string;
  access: MountAccess;
}

/** A registered tool: its validated spec plus the wasm bytes it runs. */
export interface Tool {
  spec: ToolSpec;
  wasm: Uint8Array;
  /** Lower-case hex SHA-256 of `wasm`; the cache key for compiled artifacts. */
  wasmSha256: string;
  /** Where the tool came from (a spec path, or "bytes"), for messages. */
  source: string;
}

/** An in-memory tree: a file is its bytes (or a string), a folder is an object. */
export interface MemoryTree {
  [name: string]: Uint8Array | string | MemoryTree;
}

/**
 * Where a mount's files come from: data naming its `kind`, plus whatever
 * fields that kind needs. Core knows one kind, `memory`, which every host
 * opens; a host registers an opener for each other kind it supports and
 * refuses the rest (E_INPUT_VALIDATION, naming the kinds it has).
 */
export type MountSource = { readonly kind: string; readonly [field: string]: unknown };

/** An in-memory tree, copied per call: every host opens this kind. */
export type MemoryMountSource = { kind: 'memory'; tree: MemoryTree };

/** What the caller binds to a declared mount at call time. */
export interface MountBinding {
  guest: string;
  access: MountAccess;
  /** Where the mount's files come from. None: an empty in-memory folder. */
  source?: MountSource;
}

/** One execution request, as the pipeline hands it to a host's executor. */
export interface ExecutionRequest {
  tool: Tool;
  stdin: Uint8Array;
  args: string[];
  env: Record<string, string>;
  mounts: MountBinding[];
  timeoutMs: number;
  /** Bytes kept of each of stdout and stderr before the stream is cut. */
  outputLimitBytes: number;
  /** Cap on each wasm memory the tool defines (resources.memory_mb, defaults applied). */
  memoryLimitBytes: number;
  /** Bytes the call may add to files (resources.disk_mb, defaults applied). */
  diskLimitBytes: number;
  /** Cancels the call; the executor stops the tool. */
  signal?: AbortSignal;
  /**
   * The executor may take `stdin`'s buffer, all of it (move it to a worker
   * instead of copying it), leaving it detached once the call starts. The
   * invoke pipeline sets it for the bytes it encoded itself.
   */
  stdinTransferable?: boolean;
  /**
   * Where an executor that took `stdin`'s buffer may hand it back once the
   * call is over, for a later call's input to be encoded into: memory the
   * process has written before costs no page faults.
   */
  returnStdin?: (stdin: Uint8Array) => void;
}

/** What an executor reports back. It never throws for tool failures. */
export interface ExecutionResult {
  exitCode: number;
  /** True when the program ended by itself (returned from main or called exit), not stopped by a trap or a limit. */
  exited?: boolean;
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** Set when the tool failed in a way the host classified (trap, timeout, limit, …). */
  error?: import('./errors.js').CorralErrorJSON;
  durationMs: number;
  /** Largest size any of the tool's wasm memories reached, when the host can tell. */
  peakMemoryBytes?: number;
  stdoutTruncated?: boolean;
  stderrTruncated?: boolean;
  /** Where the call ran and why, when the executor chose (kept as the snapshot's `ran_on`). */
  ranOn?: string;
}

/** A host supplies this: Node runs it in worker_threads, browsers in Web Workers. */
export interface Executor {
  execute(request: ExecutionRequest): Promise<ExecutionResult>;
  close?(): Promise<void>;
}

/** What every invocation's envelope holds, whether it succeeded or not. */
export interface InvokeResultFields {
  tool: string;
  version: string | null;
  exit_code: number | null;
  duration_ms: number;
  stdout_head: string;
  stderr_tail: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  /**
   * Present when the runtime has a snapshot store: the execution snapshot's
   * id, and `error` when it could not be written durably. The result above
   * is still the call's real result; only the record of it is missing.
   */
  snapshot?: SnapshotRef;
}

/** The tool ran, exited 0 and its output passed output_schema. */
export interface InvokeSuccess<O = unknown> extends InvokeResultFields {
  ok: true;
  version: string;
  output: O;
  error: null;
  exit_code: number;
}

/** The call was refused, or the tool failed: `error.code` says which way. */
export interface InvokeFailure extends InvokeResultFields {
  ok: false;
  output: null;
  error: import('./errors.js').CorralErrorJSON;
}

/**
 * The result envelope of every invocation, discriminated on `ok`: after
 * `if (result.ok)` the output is there, otherwise the error is.
 */
export type InvokeResult<O = unknown> = InvokeSuccess<O> | InvokeFailure;

export interface SnapshotRef {
  id: string;
  /** Why the snapshot (its intent, or its result) could not be written. */
  error?: string;
}
