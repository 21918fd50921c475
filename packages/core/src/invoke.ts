/**
 * The invoke pipeline: resolve → check input → check mounts and env → run on
 * the host's executor → check output. Every failure becomes the `error` of
 * the result envelope with a stable code; `invoke` itself does not throw.
 */
import type { ValidateFunction } from './deps.js';
import { CorralError, ErrorCodes, isCorralErrorJSON, type CorralErrorJSON, type ErrorDetails } from './errors.js';
import { MAX_JSON_DEPTH, jsonTextTooDeep } from './json-depth.js';
import { isRegistered, parseToolRef, prebuiltValidatorsOf, type Registry } from './registry.js';
import {
  VALIDATOR_FORMAT,
  compileCheckedSchema,
  compileUserSchema,
  errorText,
  prebuiltValidator,
  problemsText,
  toProblems,
  type Problem,
} from './schema.js';
import { specDefaults } from './spec.js';
import { nowNs, type DecisionSnapshot, type Store } from './snapshot.js';
import { executionIntent, executionOutcome, head, tail } from './execution-records.js';
import { sha256Hex as sha256 } from './wasm.js';
import { InputBuffers } from './input-buffers.js';
import type {
  ExecutionRequest,
  ExecutionResult,
  Executor,
  InvokeResult,
  InvokeResultFields,
  MountBinding,
  SnapshotRef,
  Tool,
} from './types.js';

export interface InvokeOptions {
  /** What each mount the spec declares is bound to (its source: an in-memory tree, or a kind the host opens). */
  mounts?: MountBinding[];
  /** Values for variables the spec lists in `env`. TZ is always UTC. */
  env?: Record<string, string>;
  /** Defaults to the spec's resources.timeout_ms. */
  timeoutMs?: number;
  /** Lower the spec's resources.memory_mb for this call (never raise it: a larger value is refused). */
  memoryMb?: number;
  /** Lower the spec's resources.disk_mb for this call (never raise it: a larger value is refused). */
  diskMb?: number;
  /** Bytes kept of each of stdout and stderr. Defaults to the runtime's default (1 MiB). */
  outputLimitBytes?: number;
  /** Extra argv after the tool name. */
  args?: string[];
  /** Link this call's snapshot to a decision (from `Runtime.recordDecision`). */
  decisionId?: string;
  /** Keep the input itself in the snapshot (its hash is always kept). Defaults to the runtime's `recordInputs`. */
  recordInput?: boolean;
  /** Cancels the call: a queued call is dropped, a running one's worker is stopped. */
  signal?: AbortSignal;
}

export interface RuntimeOptions {
  registry: Registry;
  executor: Executor;
  defaults?: {
    outputLimitBytes?: number;
    /** Largest input accepted, as UTF-8 JSON bytes. Default 64 MiB. */
    maxInputBytes?: number;
  };
  /**
   * Where execution snapshots go. When set, every call writes an intent
   * record durably before the tool runs and a result record before
   * `invoke` returns.
   */
  store?: Store;
  /** Keep inputs in snapshots unless a call says otherwise. Default true. */
  recordInputs?: boolean;
}

/** What `Runtime.recordDecision` takes: the prompt is hashed, not kept. */
export interface DecisionInput {
  prompt: string | Uint8Array;
  /** The model's raw output. */
  output: string;
  model?: string;
  runId?: string;
}

function decisionError(problem: string): CorralError {
  return new CorralError(ErrorCodes.INPUT_VALIDATION, `recordDecision: the decision ${problem}.`, {});
}

/** Problems spelled out in one message; details.problems has them all. */
const MAX_PROBLEMS_IN_MESSAGE = 10;

interface Validators {
  input: ValidateFunction;
  output: ValidateFunction | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The UTF-8 bytes of `text`, in a buffer from `buffers`. JSON is mostly
 * ASCII, and for ASCII text encodeInto a buffer of text.length bytes is a
 * copy: for 1 MB of JSON, 0.06 ms against 1.2–1.8 ms for encode() in Node 20.
 * When the text is not ASCII it does not fit (every other character takes 2
 * or more bytes), and encode() does it all.
 */
function utf8Bytes(text: string, buffers: InputBuffers): Uint8Array {
  const bytes = buffers.take(text.length);
  if (encoder.encodeInto(text, bytes).read === text.length) return bytes;
  buffers.give(bytes);
  return encoder.encode(text);
}

export class Runtime {
  readonly registry: Registry;
  readonly executor: Executor;
  readonly store: Store | undefined;
  readonly #outputLimitBytes: number;
  readonly #maxInputBytes: number;
  /** Where inputs are encoded, and buffers come back to from the executor. */
  readonly #inputBuffers = new InputBuffers();
  readonly #returnStdin = (stdin: Uint8Array): void => this.#inputBuffers.give(stdin);
  readonly #recordInputs: boolean;
  /** Compiled schemas per tool build (name@version+sha): ajv compiles are costly. */
  readonly #validators = new Map<string, Validators>();

  constructor(options: RuntimeOptions) {
    this.registry = options.registry;
    this.executor = options.executor;
    this.#outputLimitBytes = options.defaults?.outputLimitBytes ?? 1024 * 1024;
    this.#maxInputBytes = options.defaults?.maxInputBytes ?? 64 * 1024 * 1024;
    this.store = options.store;
    this.#recordInputs = options.recordInputs ?? true;
  }

  /** Run a tool by reference ('name' or 'name@range'). */
  invoke(ref: string, input: unknown, opts: InvokeOptions = {}): Promise<InvokeResult> {
    const name = typeof ref === 'string' ? parseToolRef(ref).name : `(a ${typeof ref})`;
    return this.#run(() => this.registry.resolve(ref), name, input, opts);
  }

  /** Run a tool the caller already holds (skips resolution). */
  invokeTool(tool: Tool, input: unknown, opts: InvokeOptions = {}): Promise<InvokeResult> {
    const name: unknown = (tool as Partial<Tool> | null)?.spec?.name;
    return this.#run(() => checkTool(tool), typeof name === 'string' ? name : '(not a tool)', input, opts);
  }

  /**
   * Record what a model decided, durably, and return the snapshot; pass its
   * `id` as `decisionId` to the calls it causes. Without a store the
   * snapshot is returned but kept nowhere. Throws E_STORE when it cannot be
   * written (unlike `invoke`, recording is this call's whole purpose).
   */
  async recordDecision(decision: DecisionInput): Promise<DecisionSnapshot> {
    if (typeof decision !== 'object' || decision === null) throw decisionError('must be an object');
    if (typeof decision.prompt !== 'string' && !(decision.prompt instanceof Uint8Array))
      throw decisionError('prompt must be a string or bytes');
    if (typeof decision.output !== 'string') throw decisionError('output must be a string');
    for (const key of ['model', 'runId'] as const) {
      if (decision[key] !== undefined && typeof decision[key] !== 'string') throw decisionError(`${key} must be a string`);
    }
    const snapshot: DecisionSnapshot = {
      id: crypto.randomUUID(),
      time_ns: nowNs(),
      prompt_sha256: await sha256(decision.prompt),
      output: decision.output,
      model: decision.model ?? null,
      run_id: decision.runId ?? null,
    };
    try {
      await this.store?.recordDecision(snapshot);
    } catch (err) {
      if (err instanceof CorralError) throw err;
      // A store adapter that threw something else: still E_STORE, as documented.
      throw new CorralError(ErrorCodes.STORE, `The decision could not be recorded: ${err instanceof Error ? err.message : String(err)}`, {
        store: this.store!.location,
        decision_id: snapshot.id,
      });
    }
    return snapshot;
  }

  async close(): Promise<void> {
    await this.executor.close?.();
  }

  async #run(resolve: () => Tool, name: string, input: unknown, callerOpts: InvokeOptions): Promise<InvokeResult> {
    const started = performance.now();
    // Options that fail their check still leave an audit record, without their decisionId.
    const sane = isRecord(callerOpts) ? callerOpts : {};
    const recorder = this.store
      ? new Recorder(
          this.store,
          name,
          input,
          typeof sane.decisionId === 'string' ? sane.decisionId : null,
          typeof sane.recordInput === 'boolean' ? sane.recordInput : this.#recordInputs,
        )
      : undefined;
    let tool: Tool | undefined;
    let result: ExecutionResult | undefined;
    let output: unknown = null;
    let error: CorralErrorJSON | null = null;
    try {
      const opts = checkOptions(callerOpts);
      tool = resolve();
      const validators = this.#validatorsFor(tool);
      const { request, json } = this.#prepare(tool, validators, input, opts);
      // The intent is durable before the tool runs, so a crash mid-call reads back as interrupted.
      await recorder?.begin(tool, request.stdin, json);
      result = await this.#execute(request);
      output = interpret(tool, validators, request, result);
    } catch (err) {
      error = toErrorJSON(err);
    }
    const env = envelope(started, tool?.spec.name ?? name, tool?.spec.version ?? null, result, error ? null : output, error);
    if (recorder) env.snapshot = await recorder.finish(tool, result, env);
    return env;
  }

  #validatorsFor(tool: Tool): Validators {
    const key = `${tool.spec.name}@${tool.spec.version}+${tool.wasmSha256}`;
    let v = this.#validators.get(key);
    if (!v) {
      // A registered tool's schemas passed the meta-schema check at registration (or at build time, for
      // the bundled tools, whose validators the build compiled too); a hand-built Tool object's get the whole check here.
      const prebuilt = prebuiltValidatorsOf(tool);
      const compile = (schema: Tool['spec']['input_schema'], at: string, source: string | undefined) => {
        if (source !== undefined && prebuilt?.format === VALIDATOR_FORMAT) {
          try {
            return prebuiltValidator(source);
          } catch {
            // Compiled below instead.
          }
        }
        if (isRegistered(tool)) {
          try {
            return compileCheckedSchema(schema);
          } catch {
            // Reported with its problems below.
          }
        }
        const c = compileUserSchema(schema, at);
        if (c.validate) return c.validate;
        throw new CorralError(
          ErrorCodes.REGISTRATION,
          `${tool.spec.name}'s ${at.slice(1)} is not a usable JSON Schema: ${problemsText(c.problems)}`,
          { problems: c.problems },
        );
      };
      v = {
        input: compile(tool.spec.input_schema, '/input_schema', prebuilt?.input),
        output: tool.spec.output_schema === undefined ? null : compile(tool.spec.output_schema, '/output_schema', prebuilt?.output),
      };
      this.#validators.set(key, v);
    }
    return v;
  }

  /** Every check that can refuse a call before anything runs; builds the executor request (and keeps the input's JSON text). */
  #prepare(tool: Tool, validators: Validators, input: unknown, opts: InvokeOptions): { request: ExecutionRequest; json: string } {
    const { spec } = tool;

    const notJson = jsonProblems(input);
    const tooDeep = notJson.find((p) => p.tooDeep);
    if (tooDeep) {
      throw inputError(`Input for ${spec.name} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep (the limit)`, {
        reason: 'input_too_deep',
        max_depth: MAX_JSON_DEPTH,
        problems: [{ path: tooDeep.path, message: tooDeep.message }],
      });
    }
    if (notJson.length > 0) {
      throw inputError(`Input for ${spec.name} is not JSON data: ${listed(notJson)}`, { problems: notJson });
    }
    // Measured before the schema runs: validating a huge input is itself costly.
    const json = JSON.stringify(input);
    const stdin = utf8Bytes(json, this.#inputBuffers);
    if (stdin.length > this.#maxInputBytes) {
      const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
      throw inputError(`Input for ${spec.name} is ${mib(stdin.length)} of JSON; the limit is ${mib(this.#maxInputBytes)} (maxInputBytes)`, {
        input_bytes: stdin.length,
        max_input_bytes: this.#maxInputBytes,
      });
    }
    // The schema may use format "path" (see schema.ts), so traversal is refused here too.
    if (!validators.input(input)) {
      const problems = toProblems(validators.input.errors);
      throw inputError(`Input does not match ${spec.name}'s input_schema: ${listed(problems)}`, { problems });
    }

    const mounts = checkMounts(tool, opts.mounts ?? []);

    const listedEnv = spec.env ?? [];
    const env = opts.env ?? {};
    const unlisted = Object.keys(env).filter((k) => !listedEnv.includes(k));
    if (unlisted.length > 0) {
      throw inputError(
        `Environment variable${unlisted.length > 1 ? 's' : ''} ${unlisted.join(', ')} not listed in ${spec.name}'s env ` +
          `(listed: ${listedEnv.join(', ') || 'none'}; TZ is always UTC)`,
        { unlisted, listed: listedEnv },
      );
    }
    const badValue = Object.keys(env).find((k) => typeof env[k] !== 'string');
    if (badValue) throw inputError(`Environment variable ${badValue} must be a string`, { name: badValue });

    const timeoutMs = opts.timeoutMs ?? spec.resources?.timeout_ms ?? specDefaults.resources.timeout_ms;
    const outputLimitBytes = opts.outputLimitBytes ?? this.#outputLimitBytes;
    if (!(typeof timeoutMs === 'number' && timeoutMs > 0)) {
      throw inputError(`timeoutMs must be a positive number of milliseconds (got ${String(timeoutMs)})`, { option: 'timeoutMs' });
    }
    if (!(typeof outputLimitBytes === 'number' && outputLimitBytes > 0)) {
      throw inputError(`outputLimitBytes must be a positive number (got ${String(outputLimitBytes)})`, { option: 'outputLimitBytes' });
    }

    const memoryMb = lowered(spec.name, 'memory_mb', spec.resources?.memory_mb ?? specDefaults.resources.memory_mb, opts.memoryMb, 1);
    const diskMb = lowered(spec.name, 'disk_mb', spec.resources?.disk_mb ?? specDefaults.resources.disk_mb, opts.diskMb, 0);

    const request: ExecutionRequest = {
      tool,
      stdin,
      stdinTransferable: true,
      returnStdin: this.#returnStdin,
      args: [spec.name, ...(opts.args ?? [])],
      env: { ...env, TZ: 'UTC' },
      mounts,
      timeoutMs,
      outputLimitBytes,
      memoryLimitBytes: memoryMb * 2 ** 20,
      diskLimitBytes: diskMb * 2 ** 20,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    return { request, json };
  }

  async #execute(request: ExecutionRequest): Promise<ExecutionResult> {
    try {
      return await this.executor.execute(request);
    } catch (err) {
      if (err instanceof CorralError || isCorralErrorJSON(err)) throw err;
      // Corral's executors answer every failure a caller or a tool can cause with a CorralError.
      throw internalError(`The executor failed: ${errorText(err)}`, err);
    }
  }
}

/** A per-call limit that may only lower the spec's (a policy's resource override arrives this way). */
function lowered(tool: string, field: 'memory_mb' | 'disk_mb', spec: number, asked: number | undefined, min: number): number {
  if (asked === undefined) return spec;
  const option = field === 'memory_mb' ? 'memoryMb' : 'diskMb';
  if (!(Number.isInteger(asked) && asked >= min)) throw inputError(`${option} must be a whole number ≥ ${min} (got ${asked})`, { option });
  if (asked > spec) {
    throw inputError(`${option} ${asked} is above ${tool}'s resources.${field} (${spec}); a call may only lower it`, {
      option,
      ...(field === 'memory_mb' ? { memory_mb: spec } : { disk_mb: spec }),
      requested: asked,
    });
  }
  return asked;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The shape of a call's options, checked before anything else: from
 * JavaScript anything can arrive, and a wrong type must be the caller's
 * E_INPUT_VALIDATION, not a TypeError deep inside the pipeline.
 */
function checkOptions(opts: unknown): InvokeOptions {
  if (!isRecord(opts)) throw inputError(`The call's options must be an object (got ${describeValue(opts)})`, { option: 'options' });
  const { mounts, env, args, decisionId, recordInput, signal } = opts;
  if (mounts !== undefined) {
    if (!Array.isArray(mounts))
      throw inputError(`mounts must be an array of bindings (got ${describeValue(mounts)})`, { option: 'mounts' });
    mounts.forEach((binding: unknown, i) => {
      if (!isRecord(binding) || typeof binding.guest !== 'string') {
        throw inputError(`mounts[${i}] must be a binding with a guest path, e.g. { guest: '/workspace', access: 'read' }`, {
          option: `mounts[${i}]`,
        });
      }
    });
  }
  if (env !== undefined && !isRecord(env)) {
    throw inputError(`env must be an object of variable names to strings (got ${describeValue(env)})`, { option: 'env' });
  }
  if (args !== undefined && !(Array.isArray(args) && args.every((a) => typeof a === 'string'))) {
    throw inputError('args must be an array of strings', { option: 'args' });
  }
  if (decisionId !== undefined && typeof decisionId !== 'string') {
    throw inputError(`decisionId must be the string id recordDecision returned (got ${describeValue(decisionId)})`, {
      option: 'decisionId',
    });
  }
  if (recordInput !== undefined && typeof recordInput !== 'boolean') {
    throw inputError(`recordInput must be true or false (got ${describeValue(recordInput)})`, { option: 'recordInput' });
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw inputError(`signal must be an AbortSignal (got ${describeValue(signal)})`, { option: 'signal' });
  }
  return opts as InvokeOptions;
}

/** An AbortSignal, from this realm or another. */
function isAbortSignal(value: unknown): value is AbortSignal {
  const v = value as Partial<AbortSignal> | null;
  return typeof v === 'object' && v !== null && typeof v.aborted === 'boolean' && typeof v.addEventListener === 'function';
}

/** A tool object as Registry.register returns it, checked where invokeTool takes one from the caller. */
function checkTool(tool: unknown): Tool {
  const t = tool as Partial<Tool> | null;
  if (
    !isRecord(t) ||
    !isRecord(t.spec) ||
    typeof t.spec.name !== 'string' ||
    typeof t.spec.version !== 'string' ||
    !(t.wasm instanceof Uint8Array) ||
    typeof t.wasmSha256 !== 'string'
  ) {
    throw inputError(`invokeTool needs a tool that Registry.register (or Corral.register) returned (got ${describeValue(tool)})`, {
      option: 'tool',
    });
  }
  return tool as Tool;
}

/** "null", "a string", "an array", "a Map": what a caller passed, for a message. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== 'Object' ? `a ${name}` : 'an object';
  }
  return /^[aeiou]/.test(typeof value) ? `an ${typeof value}` : `a ${typeof value}`;
}

/** A call may bind declared mounts, narrowing access but never widening it. */
function checkMounts(tool: Tool, bindings: MountBinding[]): MountBinding[] {
  const { name } = tool.spec;
  const declared = tool.spec.mounts ?? [];
  const seen = new Set<string>();
  const bound = bindings.map((given) => {
    // Each field read once: a getter cannot pass the checks with one value and run with another.
    const binding: MountBinding = { ...given };
    if (typeof binding.guest !== 'string') throw inputError('Each mount needs a guest path (a string)', {});
    // Tolerate '/workspace/' for '/workspace'; specs hold normalized paths.
    const guest = binding.guest.length > 1 ? binding.guest.replace(/\/+$/, '') : binding.guest;
    const decl = declared.find((d) => d.guest === guest);
    const declaredList = declared.map((d) => d.guest);
    if (!decl) {
      throw inputError(`Mount ${guest} is not declared by tool ${name}; declared: ${declaredList.join(', ') || 'none'}`, {
        guest,
        declared: declaredList,
      });
    }
    if (seen.has(guest)) throw inputError(`Mount ${guest} is bound more than once`, { guest });
    seen.add(guest);
    if (binding.access !== 'read' && binding.access !== 'read-write') {
      throw inputError(`Mount ${guest} has access '${String(binding.access)}'; use 'read' or 'read-write'`, { guest });
    }
    if (binding.access === 'read-write' && decl.access === 'read') {
      throw inputError(`Mount ${guest} is declared read-only by tool ${name}; bind it with access 'read'`, {
        guest,
        declared_access: decl.access,
        requested_access: binding.access,
      });
    }
    // Which kinds exist is the host's business; that a source names one is checked here.
    const source: unknown = binding.source;
    if (
      source !== undefined &&
      (typeof source !== 'object' || source === null || typeof (source as { kind?: unknown }).kind !== 'string')
    ) {
      throw inputError(`Mount ${guest} has a source that is not an object with a kind (a string), such as { kind: 'memory', tree: {} }`, {
        guest,
      });
    }
    return { ...binding, guest };
  });
  // A declared mount left unbound would be an empty folder to the tool, which
  // then fails inside (E_UNEXPECTED_EXIT) after a worker start: refuse now.
  const unbound = declared.filter((d) => !seen.has(d.guest)).map((d) => d.guest);
  if (unbound.length > 0) {
    const first = declared.find((d) => d.guest === unbound[0])!;
    throw inputError(
      `Tool ${name} declares mount${unbound.length > 1 ? 's' : ''} ${unbound.join(', ')} but the call binds nothing to ${unbound.length > 1 ? 'them' : 'it'}; ` +
        `bind each, e.g. { guest: '${first.guest}', access: '${first.access}', source: … }`,
      { reason: 'unbound_mount', guest: first.guest, unbound, declared: declared.map((d) => d.guest) },
    );
  }
  return bound;
}

/** Turn what the executor reported into the tool's output, or throw the classified failure. */
function interpret(tool: Tool, validators: Validators, request: ExecutionRequest, result: ExecutionResult): unknown {
  const { name } = tool.spec;
  if (result.error) throw CorralError.fromJSON(result.error);
  const stderr_tail = tail(result.stderr);

  if (result.exitCode !== 0) {
    const toolError = toolErrorOf(result.stdout);
    const lastStderr = stderr_tail.trimEnd().split('\n').pop()?.slice(0, 200);
    const why = typeof toolError?.message === 'string' ? `: ${toolError.message}` : lastStderr ? ` (stderr: ${lastStderr})` : '';
    throw new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${name} exited with code ${result.exitCode}${why}`, {
      reason: 'exit',
      exit_code: result.exitCode,
      stderr_tail,
      tool_error: toolError,
    });
  }

  const stdout_head = head(result.stdout);
  // Cut-off output cannot be whole JSON; say which limit to raise rather than "not JSON".
  if (result.stdoutTruncated) {
    throw new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${name} printed more than ${request.outputLimitBytes} bytes on stdout (the output limit); raise outputLimitBytes or ask for less`,
      { resource: 'output', limit_bytes: request.outputLimitBytes, stdout_head, stderr_tail },
    );
  }

  const text = decoder.decode(result.stdout);
  // JSON.parse takes any depth, but JSON.stringify and ajv recurse: refuse before anyone overflows.
  if (jsonTextTooDeep(text)) {
    throw new CorralError(
      ErrorCodes.UNEXPECTED_EXIT,
      `${name} printed JSON nested more than ${MAX_JSON_DEPTH} levels deep (the limit); Corral does not pass on output it cannot safely serialize`,
      { reason: 'output_too_deep', max_depth: MAX_JSON_DEPTH, stdout_head, stderr_tail },
    );
  }
  let output: unknown;
  try {
    output = JSON.parse(text);
  } catch {
    const message =
      text.trim() === ''
        ? `${name} printed no output (it must print JSON on stdout)`
        : `${name} printed output that is not JSON: ${text.slice(0, 200)}`;
    throw new CorralError(ErrorCodes.UNEXPECTED_EXIT, message, { reason: 'output_not_json', stdout_head, stderr_tail });
  }

  if (validators.output && !validators.output(output)) {
    const problems = toProblems(validators.output.errors);
    throw new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${name}'s output does not match its output_schema: ${listed(problems)}`, {
      reason: 'output_schema',
      problems,
      stdout_head,
      stderr_tail,
    });
  }
  return output;
}

/** The `error` a failing tool printed as `{"error": {...}}` (or `{"error": "text"}`), else null. */
function toolErrorOf(stdout: Uint8Array): Record<string, unknown> | null {
  const text = decoder.decode(stdout);
  // The error goes into details, which must stay serializable.
  if (jsonTextTooDeep(text)) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    const error = (parsed as { error?: unknown } | null)?.error;
    if (typeof error === 'string') return { message: error };
    if (typeof error === 'object' && error !== null && !Array.isArray(error)) return error as Record<string, unknown>;
  } catch {
    // Not JSON: the tool said nothing structured.
  }
  return null;
}

/** A reason a value cannot go to a tool; `tooDeep` marks nesting past MAX_JSON_DEPTH. */
type InputProblem = Problem & { tooDeep?: true };

/**
 * Why a value cannot go through JSON unchanged. JSON.stringify would silently
 * drop undefined and functions or turn NaN into null, so the tool would see
 * something other than what was validated; refuse instead. Nesting deeper
 * than MAX_JSON_DEPTH is refused too (once, at the first place found). A loop
 * with its own stack, not recursion: the value may be nested a million deep.
 */
function jsonProblems(root: unknown): InputProblem[] {
  const out: InputProblem[] = [];
  const ancestors = new Set<object>();
  let reportedDepth = false;
  // `leave` entries pop an object off the ancestor set once its children are done.
  type Step = { value: unknown; path: string; depth: number } | { leave: object };
  const todo: Step[] = [{ value: root, path: '', depth: 0 }];
  while (todo.length > 0) {
    const step = todo.pop()!;
    if ('leave' in step) {
      ancestors.delete(step.leave); // shared references without a cycle are fine
      continue;
    }
    const { value, path, depth } = step;
    const where = path || '/';
    const refuse = (what: string) => out.push({ path: where, message: `is ${what}, which JSON cannot carry` });
    switch (typeof value) {
      case 'string':
      case 'boolean':
        continue;
      case 'number':
        if (!Number.isFinite(value)) refuse(String(value));
        continue;
      case 'undefined':
        refuse('undefined');
        continue;
      case 'bigint':
        refuse('a BigInt');
        continue;
      case 'function':
      case 'symbol':
        refuse(`a ${typeof value}`);
        continue;
    }
    if (value === null) continue;
    const obj = value as object;
    if (ancestors.has(obj)) {
      out.push({ path: where, message: 'refers back to an object that contains it (a cycle)' });
      continue;
    }
    const proto: unknown = Object.getPrototypeOf(obj);
    // Plain objects from any realm have a prototype whose own prototype is null.
    if (!Array.isArray(obj) && proto !== null && Object.getPrototypeOf(proto) !== null) {
      refuse(`a ${(obj as { constructor?: { name?: string } }).constructor?.name ?? 'class instance'} (not plain data)`);
      continue;
    }
    if (depth >= MAX_JSON_DEPTH) {
      if (!reportedDepth) out.push({ path: where, message: `nests more than ${MAX_JSON_DEPTH} arrays and objects deep`, tooDeep: true });
      reportedDepth = true;
      continue;
    }
    ancestors.add(obj);
    todo.push({ leave: obj });
    // Pushed last-first, so problems come out in document order.
    const children: [string, unknown][] = [];
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length; i++) children.push([String(i), obj[i]]); // holes read as undefined, and are refused
    } else {
      for (const [k, v] of Object.entries(obj)) children.push([k.replace(/~/g, '~0').replace(/\//g, '~1'), v]);
    }
    for (let i = children.length - 1; i >= 0; i--)
      todo.push({ value: children[i]![1], path: `${path}/${children[i]![0]}`, depth: depth + 1 });
  }
  return out;
}

function inputError(message: string, details: ErrorDetails<'E_INPUT_VALIDATION'> = {}): CorralError {
  return new CorralError(ErrorCodes.INPUT_VALIDATION, message, details);
}

function listed(problems: Problem[]): string {
  const shown = problemsText(problems.slice(0, MAX_PROBLEMS_IN_MESSAGE));
  const more = problems.length - MAX_PROBLEMS_IN_MESSAGE;
  return more > 0 ? `${shown}; and ${more} more` : shown;
}

function toErrorJSON(err: unknown): CorralErrorJSON {
  if (err instanceof CorralError) return err.toJSON();
  // A CorralError rebuilt elsewhere (another bundle copy, or plain data from a worker).
  if (isCorralErrorJSON(err)) return CorralError.fromJSON(err).toJSON();
  return internalError(`Corral failed: ${errorText(err)}`, err).toJSON();
}

/** A failure no caller or tool input explains: a bug in Corral (or in a hand-written Executor or Store). */
function internalError(message: string, err: unknown): CorralError<'E_UNEXPECTED_EXIT'> {
  return new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${message} (an internal error, not the tool's; please report it)`, {
    reason: 'internal',
    cause: errorText(err),
  });
}

/**
 * Writes one call's execution snapshot: the intent before the tool runs,
 * the outcome after. A store failure is reported in the envelope's
 * `snapshot.error`, never thrown, so the call's result is never lost.
 * Calls refused before running (unknown tool, bad input) get both records
 * at the end, so audits see what was attempted too.
 */
const REFUSED_INPUT_KEPT_CHARS = 64 * 1024;

class Recorder {
  readonly id = crypto.randomUUID();
  readonly #intentNs = nowNs();
  #began = false;
  #error: string | undefined;

  constructor(
    readonly store: Store,
    /** The name asked for: the only name an unresolved tool has. */
    readonly name: string,
    readonly input: unknown,
    readonly decisionId: string | null,
    readonly recordInput: boolean,
  ) {}

  /**
   * `stdin` and `text`: what the tool receives and the JSON text it was
   * encoded from (absent for a call refused before that). `refused`: the
   * call never ran, so its input is audit data, not something to replay.
   */
  async begin(tool: Tool | undefined, stdin?: Uint8Array, text?: string, refused = false): Promise<void> {
    this.#began = true;
    // What the tool receives on stdin is the input's JSON text; refused input may not be JSON at all.
    const json = text ?? jsonText(this.input);
    // A refused input can be anything, a 1 GB one included: keep its hash, and its text only when small.
    const keepText = this.recordInput && json !== null && (!refused || json.length <= REFUSED_INPUT_KEPT_CHARS);
    const intent = await executionIntent({
      id: this.id,
      decisionId: this.decisionId,
      tool: tool?.spec.name ?? this.name,
      version: tool?.spec.version ?? null,
      wasmSha256: tool?.wasmSha256 ?? null,
      ...(stdin ? { stdin } : {}),
      json,
      keepText,
      intentNs: this.#intentNs,
    });
    try {
      await this.store.beginExecution(intent);
    } catch (err) {
      this.#error = `the snapshot's intent could not be written: ${errorText(err)}`;
    }
  }

  async finish(tool: Tool | undefined, result: ExecutionResult | undefined, env: InvokeResult): Promise<SnapshotRef> {
    if (!this.#began) await this.begin(tool, undefined, undefined, true);
    if (this.#error) return { id: this.id, error: this.#error };
    try {
      // stderr_tail is the envelope's (the same tail of the same bytes).
      await this.store.finishExecution(this.id, await executionOutcome(result, env.error, env.duration_ms));
      return { id: this.id };
    } catch (err) {
      return { id: this.id, error: `the snapshot's result could not be written (it reads back as interrupted): ${errorText(err)}` };
    }
  }
}

/** The JSON text of a value, or null when JSON cannot carry it. */
function jsonText(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    return null;
  }
}

function envelope(
  started: number,
  tool: string,
  version: string | null,
  result: ExecutionResult | undefined,
  output: unknown,
  error: CorralErrorJSON | null,
): InvokeResult {
  const fields: InvokeResultFields = {
    tool,
    version,
    exit_code: result?.exitCode ?? null,
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
    stdout_head: result ? head(result.stdout) : '',
    stderr_tail: result ? tail(result.stderr) : '',
    stdout_truncated: result?.stdoutTruncated ?? false,
    stderr_truncated: result?.stderrTruncated ?? false,
  };
  // Success means the tool resolved (a version) and ran (an exit code); anything else is a failure.
  if (error === null && version !== null && fields.exit_code !== null) {
    return { ok: true, ...fields, version, exit_code: fields.exit_code, output, error: null };
  }
  const failure = error ?? toErrorJSON(internalError('The call ended without an output or an error', null));
  return { ok: false, ...fields, output: null, error: failure };
}
