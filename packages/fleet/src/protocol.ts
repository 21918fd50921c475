/**
 * What crosses NATS between a remote executor and the fleet's workers: the
 * stream, the subjects and headers, and a versioned, bounded binary encoding
 * of an execution request and of its reply. Both ends validate what they
 * read: anyone who can publish to the subjects can send anything.
 *
 * A message is: 4 magic bytes (a kind and the format version), a big-endian
 * u32 length, that many bytes of UTF-8 JSON metadata, then the byte strings
 * the metadata refers to by index (`blobs` lists their lengths, which must
 * add up to the rest of the message exactly).
 */
import {
  CorralError,
  ErrorCodes,
  isCorralErrorJSON,
  jsonTextTooDeep,
  type CorralErrorJSON,
  type ExecutionResult,
  type MemoryTree,
} from '@corral/core';

/** The JetStream stream calls go through (work-queue retention: each call is taken once). */
export const STREAM = 'CORRAL_CALLS';
/** Calls are published to `corral.calls.<tool name>`. */
export const CALLS_PREFIX = 'corral.calls.';
/** A client publishes `corral.cancel.<key>` to stop a call it gave up on. */
export const CANCEL_PREFIX = 'corral.cancel.';
/** The durable pull consumer every worker shares. */
export const DEFAULT_CONSUMER = 'corral-workers';

export const HEADER_KEY = 'Corral-Call-Id';
export const HEADER_REPLY = 'Corral-Reply-To';
/** JetStream's publish dedupe header: the same key twice within the duplicate window is stored once. */
export const HEADER_MSG_ID = 'Nats-Msg-Id';

const CALL_MAGIC = [0x43, 0x46, 0x43, 1]; // "CFC" v1
const REPLY_MAGIC = [0x43, 0x46, 0x52, 1]; // "CFR" v1

/** The registry's rule for tool names: also NATS subject tokens (a '.' separates tokens under corral.calls.>). */
const TOOL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA256 = /^[0-9a-f]{64}$/;
/** A worker's ran_on: "fleet " and its name (FleetWorker's name rule). */
const RAN_ON = /^fleet [\w.:@-]{1,64}$/;
/** A reply subject: plain tokens, no wildcards or spaces. */
const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** Bounds on what one call may carry besides its bytes. */
export const LIMITS = {
  args: 1024,
  envVars: 1024,
  mounts: 64,
  treeNodes: 100_000,
  treeDepth: 64,
  nameBytes: 255,
  stringChars: 64 * 1024,
  metaBytes: 16 * 1024 * 1024,
};

export function isToolName(name: unknown): name is string {
  return typeof name === 'string' && TOOL_NAME.test(name) && !name.endsWith('.') && !name.includes('..');
}
export function isCallKey(key: unknown): key is string {
  return typeof key === 'string' && KEY.test(key);
}
export function isReplySubject(subject: unknown, prefix: string): subject is string {
  return typeof subject === 'string' && subject.length <= 256 && subject.startsWith(prefix) && SUBJECT.test(subject);
}

/** One call as it travels: the request without the tool's bytes, which the worker must have itself. */
export interface CallMessage {
  tool: string;
  version: string;
  wasm_sha256: string;
  stdin: Uint8Array;
  args: string[];
  env: Record<string, string>;
  /** In-memory mounts only: a host folder does not travel. */
  mounts: { guest: string; access: 'read' | 'read-write'; tree: MemoryTree }[];
  timeout_ms: number;
  output_limit_bytes: number;
  memory_limit_bytes: number;
  disk_limit_bytes: number;
  /** When the client published it (its clock, ms since the epoch) and how long it waits for the reply. */
  sent_ms: number;
  wait_ms: number;
}

/** What a worker answers: the executor's result, or the error it threw. */
export type ReplyMessage = { kind: 'result'; result: ExecutionResult } | { kind: 'error'; error: CorralErrorJSON };

/** Thrown by the decoders: what is wrong with the message. */
export class MalformedMessage extends Error {}

const encoder = new TextEncoder();
const utf8 = new TextDecoder('utf-8', { fatal: true });

function frame(magic: number[], meta: Record<string, unknown>, blobs: Uint8Array[]): Uint8Array {
  const json = encoder.encode(JSON.stringify({ ...meta, blobs: blobs.map((b) => b.length) }));
  const size = 8 + json.length + blobs.reduce((n, b) => n + b.length, 0);
  const out = new Uint8Array(size);
  out.set(magic, 0);
  new DataView(out.buffer).setUint32(4, json.length);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

function unframe(magic: number[], bytes: Uint8Array, what: string): { meta: Record<string, unknown>; blobs: Uint8Array[] } {
  if (!(bytes instanceof Uint8Array) || bytes.length < 8) throw new MalformedMessage(`${what} is shorter than its header`);
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== magic[i]) {
      throw new MalformedMessage(
        i === 3 && bytes[0] === magic[0] && bytes[1] === magic[1] && bytes[2] === magic[2]
          ? `${what} is of format version ${bytes[3]}; this Corral reads version ${magic[3]}`
          : `${what} is not a Corral fleet message`,
      );
    }
  }
  const metaLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4);
  if (metaLength > LIMITS.metaBytes || 8 + metaLength > bytes.length)
    throw new MalformedMessage(`${what}'s metadata length is past its end`);
  let text: string;
  try {
    text = utf8.decode(bytes.subarray(8, 8 + metaLength));
  } catch {
    throw new MalformedMessage(`${what}'s metadata is not UTF-8`);
  }
  if (jsonTextTooDeep(text)) throw new MalformedMessage(`${what}'s metadata nests too deep`);
  let meta: unknown;
  try {
    meta = JSON.parse(text);
  } catch {
    throw new MalformedMessage(`${what}'s metadata is not JSON`);
  }
  if (!isPlainObject(meta)) throw new MalformedMessage(`${what}'s metadata is not an object`);
  const lengths = meta.blobs;
  if (!Array.isArray(lengths) || lengths.length > LIMITS.treeNodes + 1 || !lengths.every((n) => Number.isSafeInteger(n) && n >= 0))
    throw new MalformedMessage(`${what}'s blob lengths are not a list of sizes`);
  const blobs: Uint8Array[] = [];
  let at = 8 + metaLength;
  for (const n of lengths as number[]) {
    if (at + n > bytes.length) throw new MalformedMessage(`${what}'s byte strings run past its end`);
    // A copy with a buffer of its own: `bytes` may be a Buffer, whose slice is a view into a socket read
    // holding other messages, and a call's stdin is moved to a sandbox worker whole (stdinTransferable).
    blobs.push(new Uint8Array(bytes.subarray(at, at + n)));
    at += n;
  }
  if (at !== bytes.length) throw new MalformedMessage(`${what} has ${bytes.length - at} bytes after its last byte string`);
  return { meta, blobs };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function encodeCall(call: CallMessage): Uint8Array {
  const blobs: Uint8Array[] = [call.stdin];
  const tree = (t: MemoryTree): unknown => {
    // No prototype: a file named "__proto__" stays a key.
    const out = Object.create(null) as Record<string, unknown>;
    for (const [name, node] of Object.entries(t)) {
      if (typeof node === 'string' || node instanceof Uint8Array) {
        out[name] = blobs.length;
        blobs.push(typeof node === 'string' ? encoder.encode(node) : node);
      } else out[name] = tree(node);
    }
    return out;
  };
  const mounts = call.mounts.map((m) => ({ guest: m.guest, access: m.access, tree: tree(m.tree) }));
  const { stdin: _stdin, mounts: _mounts, ...rest } = call;
  return frame(CALL_MAGIC, { ...rest, stdin: 0, mounts }, blobs);
}

export function decodeCall(bytes: Uint8Array): CallMessage {
  const { meta, blobs } = unframe(CALL_MAGIC, bytes, 'the call');
  const bad = (field: string, problem: string): never => {
    throw new MalformedMessage(`the call's ${field} ${problem}`);
  };
  const str = (field: string, max = LIMITS.stringChars): string => {
    const v = meta[field];
    if (typeof v !== 'string' || v.length > max) bad(field, `is not a string of at most ${max} characters`);
    return v as string;
  };
  const num = (field: string, min: number): number => {
    const v = meta[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(field, `is not a whole number ≥ ${min}`);
    return v as number;
  };
  const tool = str('tool');
  if (!isToolName(tool)) bad('tool', 'is not a tool name');
  const version = str('version', 256);
  const wasm_sha256 = str('wasm_sha256');
  if (!SHA256.test(wasm_sha256)) bad('wasm_sha256', 'is not a SHA-256 in lower-case hex');
  if (meta.stdin !== 0 || blobs.length < 1) bad('stdin', 'is not its first byte string');
  const used = new Set<number>([0]);
  const args = meta.args;
  if (!Array.isArray(args) || args.length > LIMITS.args || !args.every((a) => typeof a === 'string' && a.length <= LIMITS.stringChars))
    bad('args', `are not a list of at most ${LIMITS.args} strings`);
  const env = meta.env;
  if (
    !isPlainObject(env) ||
    Object.keys(env).length > LIMITS.envVars ||
    !Object.entries(env).every(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && typeof v === 'string' && v.length <= LIMITS.stringChars)
  )
    bad('env', `is not an object of at most ${LIMITS.envVars} variables with string values`);
  const rawMounts = meta.mounts;
  if (!Array.isArray(rawMounts) || rawMounts.length > LIMITS.mounts) bad('mounts', `are not a list of at most ${LIMITS.mounts}`);
  let nodes = 0;
  const tree = (t: unknown, depth: number, at: string): MemoryTree => {
    if (!isPlainObject(t)) bad('mounts', `hold a folder at ${at} that is not an object`);
    if (depth > LIMITS.treeDepth) bad('mounts', `nest folders more than ${LIMITS.treeDepth} deep`);
    // No prototype: a file named "__proto__" is a file, not the object's prototype.
    const out = Object.create(null) as MemoryTree;
    for (const [name, node] of Object.entries(t as Record<string, unknown>)) {
      if (++nodes > LIMITS.treeNodes) bad('mounts', `hold more than ${LIMITS.treeNodes} files and folders`);
      if (
        name === '' ||
        name === '.' ||
        name === '..' ||
        name.includes('/') ||
        name.includes('\0') ||
        encoder.encode(name).length > LIMITS.nameBytes
      )
        bad('mounts', `hold a file name that is not one: ${JSON.stringify(name.slice(0, 80))} in ${at}`);
      if (typeof node === 'number') {
        if (!Number.isSafeInteger(node) || node < 1 || node >= blobs.length || used.has(node))
          bad('mounts', `refer to a byte string that is not there (or used twice) at ${at}/${name}`);
        used.add(node);
        out[name] = blobs[node]!;
      } else out[name] = tree(node, depth + 1, `${at}/${name}`);
    }
    return out;
  };
  const mounts = (rawMounts as unknown[]).map((m, i) => {
    if (!isPlainObject(m) || typeof m.guest !== 'string' || !m.guest.startsWith('/') || m.guest.length > 4096)
      bad(`mounts[${i}].guest`, 'is not an absolute path');
    const mm = m as Record<string, unknown>;
    if (mm.access !== 'read' && mm.access !== 'read-write') bad(`mounts[${i}].access`, "is not 'read' or 'read-write'");
    return { guest: mm.guest as string, access: mm.access as 'read' | 'read-write', tree: tree(mm.tree, 0, mm.guest as string) };
  });
  if (used.size !== blobs.length) bad('blobs', 'include byte strings nothing refers to');
  return {
    tool,
    version,
    wasm_sha256,
    stdin: blobs[0]!,
    args: args as string[],
    env: { ...(env as Record<string, string>) },
    mounts,
    timeout_ms: num('timeout_ms', 1),
    output_limit_bytes: num('output_limit_bytes', 0),
    memory_limit_bytes: num('memory_limit_bytes', 1),
    disk_limit_bytes: num('disk_limit_bytes', 0),
    sent_ms: num('sent_ms', 0),
    wait_ms: num('wait_ms', 1),
  };
}

export function encodeReply(reply: ReplyMessage): Uint8Array {
  if (reply.kind === 'error') return frame(REPLY_MAGIC, { kind: 'error', error: reply.error }, []);
  const r = reply.result;
  const meta: Record<string, unknown> = {
    kind: 'result',
    exit_code: r.exitCode,
    duration_ms: r.durationMs,
    ...(r.exited !== undefined ? { exited: r.exited } : {}),
    ...(r.error !== undefined ? { error: r.error } : {}),
    ...(r.peakMemoryBytes !== undefined ? { peak_memory_bytes: r.peakMemoryBytes } : {}),
    ...(r.stdoutTruncated !== undefined ? { stdout_truncated: r.stdoutTruncated } : {}),
    ...(r.stderrTruncated !== undefined ? { stderr_truncated: r.stderrTruncated } : {}),
    ...(r.ranOn !== undefined ? { ran_on: r.ranOn } : {}),
  };
  return frame(REPLY_MAGIC, meta, [r.stdout, r.stderr]);
}

/** A reply, checked: stdout and stderr at most `outputLimitBytes` each, an error a Corral error. */
export function decodeReply(bytes: Uint8Array, outputLimitBytes: number): ReplyMessage {
  const { meta, blobs } = unframe(REPLY_MAGIC, bytes, 'the reply');
  const errorOf = (v: unknown): CorralErrorJSON => {
    if (!isCorralErrorJSON(v) || !Object.values(ErrorCodes).includes(v.code))
      throw new MalformedMessage("the reply's error is not a Corral error");
    return CorralError.fromJSON(v).toJSON();
  };
  if (meta.kind === 'error') {
    if (blobs.length !== 0) throw new MalformedMessage('an error reply carries byte strings');
    return { kind: 'error', error: errorOf(meta.error) };
  }
  if (meta.kind !== 'result') throw new MalformedMessage('the reply is neither a result nor an error');
  if (blobs.length !== 2) throw new MalformedMessage('a result reply does not carry exactly stdout and stderr');
  const [stdout, stderr] = blobs as [Uint8Array, Uint8Array];
  if (stdout.length > outputLimitBytes || stderr.length > outputLimitBytes)
    throw new MalformedMessage(`the reply's stdout or stderr is larger than the call's output limit (${outputLimitBytes} bytes)`);
  if (!Number.isSafeInteger(meta.exit_code)) throw new MalformedMessage("the reply's exit_code is not a whole number");
  if (typeof meta.duration_ms !== 'number' || !(meta.duration_ms >= 0))
    throw new MalformedMessage("the reply's duration_ms is not a duration");
  for (const flag of ['exited', 'stdout_truncated', 'stderr_truncated'])
    if (meta[flag] !== undefined && typeof meta[flag] !== 'boolean') throw new MalformedMessage(`the reply's ${flag} is not true or false`);
  if (meta.peak_memory_bytes !== undefined && !(Number.isSafeInteger(meta.peak_memory_bytes) && (meta.peak_memory_bytes as number) >= 0))
    throw new MalformedMessage("the reply's peak_memory_bytes is not a size");
  // What a worker writes ("fleet NAME", its --name rule), nothing else: a worker may not claim it ran locally, nor carry escapes into snapshots.
  if (meta.ran_on !== undefined && !(typeof meta.ran_on === 'string' && RAN_ON.test(meta.ran_on)))
    throw new MalformedMessage(`the reply's ran_on is not "fleet NAME" (a worker's name: 1 to 64 letters, digits or . _ : @ -)`);
  const result: ExecutionResult = { exitCode: meta.exit_code as number, stdout, stderr, durationMs: meta.duration_ms };
  if (meta.exited !== undefined) result.exited = meta.exited as boolean;
  if (meta.error !== undefined) result.error = errorOf(meta.error);
  if (meta.peak_memory_bytes !== undefined) result.peakMemoryBytes = meta.peak_memory_bytes as number;
  if (meta.stdout_truncated !== undefined) result.stdoutTruncated = meta.stdout_truncated as boolean;
  if (meta.stderr_truncated !== undefined) result.stderrTruncated = meta.stderr_truncated as boolean;
  if (meta.ran_on !== undefined) result.ranOn = meta.ran_on as string;
  return { kind: 'result', result };
}
