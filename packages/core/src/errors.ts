/**
 * Every failure Corral reports is a CorralError with a stable `code`.
 * Programs branch on `code`; people read `message`; `details` carries the
 * facts (JSON paths, stderr tail, the limit that was hit) and `retryable`
 * says whether trying again can help.
 */
export const ErrorCodes = {
  /** No tool with that name (or no version matching the range). */
  TOOL_NOT_FOUND: 'E_TOOL_NOT_FOUND',
  /** Input failed the tool's input_schema or a path check. */
  INPUT_VALIDATION: 'E_INPUT_VALIDATION',
  /** Memory cap, timeout, disk quota or output cap hit. */
  RESOURCE_EXHAUSTED: 'E_RESOURCE_EXHAUSTED',
  /** The tool imports or attempts network access. */
  NETWORK_BLOCKED: 'E_NETWORK_BLOCKED',
  /** Non-zero exit, trap, output that is not JSON or fails output_schema. */
  UNEXPECTED_EXIT: 'E_UNEXPECTED_EXIT',
  /** A tool could not be registered: bad tool-spec.json or bad wasm. */
  REGISTRATION: 'E_REGISTRATION',
  /** A snapshot store could not be opened or written (damaged, foreign, newer, read-only, full). */
  STORE: 'E_STORE',
  /** The caller cancelled the call (its AbortSignal): a queued call never ran, a running one was stopped. */
  CANCELLED: 'E_CANCELLED',
  /** The runtime (its worker pool) was closed before the call could run or finish. */
  CLOSED: 'E_CLOSED',
  /**
   * The policy refused the call (or its approval was rejected, expired or revoked).
   * details: PolicyDeniedDetails: `reason`, `tool`, and what the reason is about
   * (`guest`, `folder`, `approval_id`, `policy`).
   */
  POLICY_DENIED: 'E_POLICY_DENIED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const RETRYABLE_BY_DEFAULT: Record<ErrorCode, boolean> = {
  E_TOOL_NOT_FOUND: false,
  E_INPUT_VALIDATION: false,
  E_RESOURCE_EXHAUSTED: true,
  E_NETWORK_BLOCKED: false,
  E_UNEXPECTED_EXIT: false,
  E_REGISTRATION: false,
  E_STORE: false,
  E_CANCELLED: false,
  E_CLOSED: false,
  E_POLICY_DENIED: false,
};

/** One problem with a value, by JSON pointer (a schema or spec check). */
export interface ErrorProblem {
  path: string;
  message: string;
}

/** E_RESOURCE_EXHAUSTED: `resource` says which limit was hit; the other keys depend on it. */
export type ResourceExhaustedDetails =
  | {
      /** The tool's wasm memory cap (resources.memory_mb), its tables' share of it, or its worker's JS heap. */
      resource: 'memory';
      /** The wasm memory cap, in bytes. */
      limit_bytes?: number;
      /** The largest size the tool's memories reached. */
      peak_bytes?: number;
      /** Memory the module asks for at start, and the most it may have, in 64 KiB pages. */
      min_pages?: number;
      max_pages?: number;
      /** Table entries the module asks for at start, and the most it may have. */
      table_entries?: number;
      max_table_entries?: number;
      /** A component's core module that it instantiated more than once. */
      module?: string;
      /** The worker's V8 heap limit that was reached (resourceLimits.maxOldGenerationSizeMb), and the worker's exit code. */
      worker_heap_limit_mb?: number;
      worker_exit_code?: number;
      /** What the tool reported when it stopped (a trap message, or "exit code N"). */
      cause?: string;
    }
  | {
      /** A component held more handles at once than its instance may (streams, descriptors, pollables, its own resources). */
      resource: 'handles';
      limit: number;
    }
  | {
      /** The call's time limit (resources.timeout_ms or timeoutMs), or the limit on transpiling it or starting a worker. */
      resource: 'time';
      timeout_ms: number;
    }
  | {
      /** The call's disk quota (resources.disk_mb), or the browser's storage quota for an OPFS folder. */
      resource: 'disk';
      limit_bytes?: number;
      used_bytes?: number;
      /** The OPFS folder whose changes the browser refused to store. */
      opfs_path?: string;
      cause?: string;
    }
  | {
      /** The cap on stdout (outputLimitBytes). */
      resource: 'output';
      limit_bytes: number;
      stdout_head?: string;
      stderr_tail?: string;
    }
  | {
      /** The pool's call queue (maxQueue) is full. */
      resource: 'queue';
      max_queue: number;
    }
  | {
      /** `corral serve`: the server's calls in flight (--concurrency) are all taken. */
      resource: 'http_concurrency';
      concurrency: number;
    }
  | {
      /** A server's workflow runs for remote callers that wait for a person are at their limit. */
      resource: 'waiting_workflow_runs';
      max_waiting: number;
    }
  | {
      /**
       * The fleet (NATS JetStream) did not take or answer the call: its
       * servers are unreachable, no worker answered within the call's time
       * limit plus the queueing allowance, or a message would be larger than
       * the servers carry (max_payload).
       */
      resource: 'fleet';
      reason: 'unreachable' | 'no_reply' | 'message_too_large';
      servers?: string;
      /** no_reply: how long the caller waited. */
      waited_ms?: number;
      /** message_too_large: the message's size and the servers' max_payload. */
      message_bytes?: number;
      max_payload?: number;
      cause?: string;
    };

/**
 * E_UNEXPECTED_EXIT: `reason` says how the tool (or the host) failed.
 * `internal` is a bug in Corral, not in the tool: report it.
 */
export type UnexpectedExitDetails =
  | {
      /** The tool exited with a non-zero code; `tool_error` is the `error` it printed as JSON, if any. */
      reason: 'exit';
      exit_code: number;
      stderr_tail: string;
      tool_error: Record<string, unknown> | null;
    }
  | {
      /** A WebAssembly trap (unreachable, out-of-bounds access, stack overflow…). */
      reason: 'trap';
      trap: true;
      cause: string;
      stderr_tail: string;
    }
  | {
      /** The run stopped on an error that is not a trap (the host refused something the tool asked). */
      reason: 'failed';
      trap: false;
      cause: string;
      stderr_tail: string;
    }
  | {
      /** stdout was empty or not JSON. */
      reason: 'output_not_json';
      stdout_head: string;
      stderr_tail: string;
    }
  | {
      /** stdout was JSON nested deeper than MAX_JSON_DEPTH. */
      reason: 'output_too_deep';
      max_depth: number;
      stdout_head: string;
      stderr_tail: string;
    }
  | {
      /** stdout was JSON that fails the tool's output_schema. */
      reason: 'output_schema';
      problems: ErrorProblem[];
      stdout_head: string;
      stderr_tail: string;
    }
  | {
      /** The component exports no wasi:cli/run. */
      reason: 'not_a_command';
      exports: string[];
    }
  | {
      /** The sandbox worker stopped under the call: its exit code (Node) or the error it reported (browsers). */
      reason: 'worker_crashed';
      worker_exit_code?: number;
      worker_error?: string;
      /** cwd_missing: the process's current folder was gone, and Node starts no thread without one. */
      cause?: 'cwd_missing';
    }
  | {
      /** The tool ran, but what it changed in a read-write OPFS folder could not be saved. */
      reason: 'write_back';
      opfs_path: string;
      cause: string;
    }
  | {
      /** A broken invariant of Corral itself (a bug): `cause` is what failed. */
      reason: 'internal';
      cause: string;
    }
  | {
      /** Host–worker only, never a caller's: the worker evicted code the host sent by key, and the host sends it again. */
      reason: 'not_loaded';
      cause: string;
    };

/** Why the policy refused: `details.reason` of E_POLICY_DENIED. */
export type PolicyDenialReason =
  | 'bad_request'
  | 'policy_invalid'
  | 'tool_denied'
  | 'unlisted_tool'
  | 'undeclared_mount'
  | 'not_granted'
  | 'access_not_granted'
  | 'folder_missing'
  | 'protected_folder'
  | 'outside_roots'
  | 'approval_rejected'
  | 'approval_expired'
  | 'approval_revoked'
  | 'approval_timeout'
  | 'approval_unavailable'
  /** A workflow step's tool call needs a person's approval, and a workflow run for a remote caller does not wait for one. */
  | 'approval_required'
  /** The MCP client closed its side of the connection while the call waited for approval (it stays pending). */
  | 'client_closed';

/** `details` of E_POLICY_DENIED (a type, not an interface, so it stays assignable to Record<string, unknown>). */
export type PolicyDeniedDetails = {
  reason: PolicyDenialReason;
  tool: string | null;
  version?: string | null;
  /** The guest mount the reason is about. */
  guest?: string;
  /** The host folder the reason is about (real path when it exists). */
  folder?: string;
  approval_id?: string;
  /** Where the policy came from (a file path). */
  policy?: string;
  problems?: ErrorProblem[];
};

/**
 * What `details` holds, per code. Every key is snake_case and JSON data.
 * ERRORS.md (at the repository root) says when each code happens and what
 * a program should do about it.
 */
export interface ErrorDetailsByCode {
  E_TOOL_NOT_FOUND: {
    /** The name and range asked for, and the versions of that name there are (or all names, when none matched). */
    name?: string;
    range?: string | null;
    available?: string[];
    /** `corral replay`: the execution snapshot whose tool is missing. */
    id?: string;
    cause?: string;
    /** `corral run --json`: the tools of --tools folders that could not be loaded, and why. */
    load_errors?: { code: string; message: string }[];
  };
  E_INPUT_VALIDATION: {
    /** Schema problems of the input (or of a tool's output_schema), by JSON pointer. */
    problems?: ErrorProblem[];
    /**
     * Which refusal, where one code covers several: the input nests deeper
     * than `max_depth`; (MCP) a mount could not be bound from the client's
     * roots; (HTTP) the request body is not one `corral serve` takes, or an
     * approval decision the policy does not allow.
     */
    reason?:
      | 'input_too_deep'
      | 'input_too_large'
      | 'unsupported_media_type'
      | 'body_too_large'
      | 'body_not_utf8'
      | 'body_not_json'
      | 'bad_request_body'
      | 'no_folder_resolver'
      | 'no_roots'
      | 'roots_unavailable'
      | 'not_a_folder'
      | 'outside_roots'
      | 'bad_mounts_meta'
      | 'undeclared_mount'
      | 'unbound_mount'
      | 'bad_decision';
    max_depth?: number;
    /** The input's size as JSON, and the limit (maxInputBytes). */
    input_bytes?: number;
    max_input_bytes?: number;
    /** Environment variables the spec does not list, and those it does. */
    unlisted?: string[];
    listed?: string[];
    /** An environment variable whose value is not a string, a mount tree's bad file name, or the name two tools would share. */
    name?: string;
    /** Tool references that would be offered to a model under one name. */
    refs?: string[];
    /** The guest path of the mount at fault, the mounts the spec declares (and those a call left unbound), and the access asked for. */
    guest?: string;
    declared?: string[];
    unbound?: string[];
    declared_access?: 'read' | 'read-write';
    requested_access?: string;
    /** A mount source's kind, and the kinds this host opens. */
    kind?: string;
    supported_kinds?: string[];
    /** The folder a mount source names (a host folder, an OPFS folder), and why it could not be opened or read. */
    path?: string;
    opfs_path?: string;
    cause?: string;
    /** MCP: the file:// URI asked for, and the client's roots. */
    uri?: string;
    roots?: string[];
    /** HTTP: the Content-Type sent, and the largest body the server takes. */
    content_type?: string;
    max_body_bytes?: number;
    /** A per-call limit above the spec's (a call may only lower it): the spec's value, and the one asked for. */
    memory_mb?: number;
    disk_mb?: number;
    requested?: number;
    /** Policies: where a policy came from, a folder a grant names (and Corral's own file it would expose), a lock another command holds. */
    source?: string;
    folder?: string;
    protected?: string;
    lock?: string;
    /** Approvals: the approval at fault, its state, and the scope asked for against the most the policy allows. */
    approval_id?: string;
    status?: string;
    scope?: string;
    max_scope?: string;
    /** The call option at fault (`timeoutMs`, `mounts[0].guest`, `exec: memoryMb`…). */
    option?: string;
    /** CLI: the bad --mount flag; where a bad input came from; the snapshot asked for. */
    flag?: string;
    from?: string;
    id?: string;
  };
  E_RESOURCE_EXHAUSTED: ResourceExhaustedDetails;
  E_NETWORK_BLOCKED: {
    /** Network imports the tool declares (components and preview1 modules alike). */
    imports?: string[];
    /** A preview1 module's socket calls: the first, all of them, and how it exited. */
    call?: string;
    calls?: string[];
    exit_code?: number;
    cause?: string;
  };
  E_UNEXPECTED_EXIT: UnexpectedExitDetails;
  E_REGISTRATION: {
    /** Where the tool came from (a tool-spec.json path, a URL, "bytes"). */
    source?: string;
    /** Every problem of a bad spec (or a tool schema ajv cannot compile), by JSON pointer. */
    problems?: ErrorProblem[];
    /** Why the wasm is not valid, as the parser said it; or export_shadows_glue, unbounded_handle_tables, unguarded_host_calls, unsupported_builtins (a component whose glue Corral will not run). */
    reason?: string;
    /** A WebAssembly file of a binary version or layer Corral does not run, or not WebAssembly at all (its size). */
    binary_version?: number;
    layer?: number;
    size?: number;
    /** The kind the spec declares and the kind the file is. */
    declared?: 'component' | 'module';
    detected?: 'component' | 'module';
    /** name@version already registered with other bytes, and where those came from. */
    name?: string;
    version?: string;
    existing_source?: string;
    /** Imports refused (network imports are E_NETWORK_BLOCKED), and the interfaces Corral provides. */
    imports?: string[];
    provided?: string[];
    /** What a preview1 module exports, when it is not a command; a component's exports that jco names like its glue's own (reason export_shadows_glue). */
    exports?: string[];
    /** A component's core module that is not valid WebAssembly. */
    module?: string;
    /** The built-ins of the component model a component uses that Corral does not run (reason unsupported_builtins), as jco names them. */
    builtins?: string[];
    /** A type form, value type or reference type byte Corral cannot bound. */
    type_form?: number;
    valtype?: number;
    reftype?: number;
    /** Tool folders: the folder, the file, and the offset of a JSON syntax error in a spec. */
    dir?: string;
    path?: string;
    offset?: number;
    /** Browsers: the bundled tool's URL that could not be fetched. */
    url?: string;
  };
  E_STORE: {
    /** The store's location (a file path, an IndexedDB name). */
    store: string;
    /** Set when nothing can be written there (read-only, full, storage blocked): tools still run without a record. */
    unwritable?: boolean;
    /** The underlying error: SQLite's code, or the DOMException's name. */
    sqlite_code?: string;
    dom_error?: string;
    /** PostgreSQL: the server's SQLSTATE, or the connection's error code (ECONNREFUSED…). */
    pg_code?: string;
    /** PostgreSQL: the schema the store keeps its tables in. */
    schema?: string;
    /** The snapshot asked for, or the decision that could not be recorded. */
    id?: string;
    decision_id?: string;
    /** A path that is not a regular file (`directory`, `fifo`…), or a file that is not SQLite (its size). */
    kind?: string;
    size?: number;
    /** A database that is not a Corral store: its application_id, tables or object stores. */
    application_id?: number;
    tables?: string[];
    object_stores?: string[];
    /** A store of a newer schema than this Corral understands. */
    schema_version?: number;
    supported_version?: number;
    /** A store with Corral's application_id but not its schema. */
    unexpected?: string[];
    missing?: string[];
    /**
     * 'conflict': the write was refused because what it would add exists
     * already (a workflow run's id, a workflow event's run and sequence
     * number), written by another process or an earlier attempt; the store
     * itself is fine. A workflow engine that loses such a race stops driving
     * the run.
     */
    reason?: 'conflict';
    /** The workflow run a refused write was about. */
    workflow_run_id?: string;
    /** The sequence number of a refused workflow event. */
    seq?: number;
  };
  E_CANCELLED: {
    cancelled: true;
    /** The AbortSignal's reason, as text. */
    reason?: string;
  };
  E_CLOSED: {
    /** True when the call was running (its worker was stopped), false when it was waiting or new. */
    running?: boolean;
    /** executor_close_timeout: close() stopped waiting for an executor's close() (see EXECUTOR_CLOSE_GRACE_MS). */
    reason?: 'executor_close_timeout';
    /** How long close() waited for it. */
    waited_ms?: number;
  };
  E_POLICY_DENIED: PolicyDeniedDetails;
}

/** The details of an error with code C, as written (the constructor checks them against this). */
export type ErrorDetails<C extends ErrorCode = ErrorCode> = ErrorDetailsByCode[C];

type Variant = ErrorDetailsByCode[ErrorCode];
type KeysOf<T> = T extends unknown ? keyof T : never;
/**
 * Each shape with every key the other shapes have, as absent: reading
 * `details.resource` type-checks on any error (undefined where it has
 * none), and narrows once `code` (or `resource`, `reason`) is checked.
 */
type Readable<T> = T extends unknown ? T & { readonly [K in Exclude<KeysOf<Variant>, keyof T>]?: undefined } : never;

/** The details of an error with code C, as read. */
export type ErrorDetailsOf<C extends ErrorCode = ErrorCode> = Readable<ErrorDetailsByCode[C]>;

/** A CorralError as plain data (what crosses a worker, process or wire boundary): one shape per code. */
export type CorralErrorJSON<C extends ErrorCode = ErrorCode> = C extends ErrorCode
  ? { code: C; message: string; details: ErrorDetailsOf<C>; retryable: boolean }
  : never;

/** The details argument: required when the code's details have required keys. */
type DetailsArgs<C extends ErrorCode> =
  {} extends ErrorDetails<C> ? [details?: ErrorDetails<C>, retryable?: boolean] : [details: ErrorDetails<C>, retryable?: boolean];

export class CorralError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'CorralError';
  readonly code: C;
  readonly details: ErrorDetailsOf<C>;
  readonly retryable: boolean;

  constructor(code: C, message: string, ...[details, retryable]: DetailsArgs<C>) {
    super(message);
    this.code = code;
    this.details = (details ?? {}) as ErrorDetailsOf<C>;
    this.retryable = retryable ?? RETRYABLE_BY_DEFAULT[code];
  }

  toJSON(): CorralErrorJSON<C> {
    return { code: this.code, message: this.message, details: this.details, retryable: this.retryable } as CorralErrorJSON<C>;
  }

  /** Rebuild an error that crossed a worker or process boundary as plain data. */
  static fromJSON<C extends ErrorCode>(data: CorralErrorJSON<C>): CorralError<C> {
    const error = new CorralError<ErrorCode>(data.code, data.message, (data.details ?? {}) as ErrorDetails, data.retryable);
    return error as CorralError<C>;
  }

  static is<C extends ErrorCode = ErrorCode>(value: unknown, code?: C): value is CorralError<C> {
    return value instanceof CorralError && (code === undefined || value.code === code);
  }
}

/** True for plain objects shaped like a serialized CorralError. */
export function isCorralErrorJSON(value: unknown): value is CorralErrorJSON {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'string' && v.code.startsWith('E_') && typeof v.message === 'string';
}

/**
 * The known word nearest a mistyped one (at most 2 edits away, or a known
 * word it begins, past 3 letters), for a "did you mean": an option, a
 * command, a tool's name.
 */
export function closest(typed: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of known) {
    const d = name.startsWith(typed) && typed.length > 3 ? 1 : editDistance(typed, name);
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
