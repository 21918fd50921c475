/**
 * How an execution snapshot's two records are built from a call: the intent
 * before it runs, the outcome after. The invoke pipeline's Recorder and a
 * fleet worker (which records calls it runs for other hosts) build them the
 * same way, so `corral snapshots` reads both alike.
 */
import type { CorralErrorJSON } from './errors.js';
import { sha256HexFast } from './sha256.js';
import { MAX_RAN_ON, nowNs, type ExecutionIntent, type ExecutionOutcome, type Nanos } from './snapshot.js';
import type { ExecutionResult } from './types.js';

/** Bytes of stdout/stderr kept in the envelope and in a snapshot (head of stdout, tail of stderr). */
export const ENVELOPE_BYTES = 1024;

const decoder = new TextDecoder();

/** First ENVELOPE_BYTES of a stream, not cutting a UTF-8 character in half. */
export function head(bytes: Uint8Array): string {
  let end = Math.min(bytes.length, ENVELOPE_BYTES);
  while (end < bytes.length && end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

/** Last ENVELOPE_BYTES of a stream, starting on a UTF-8 character boundary. */
export function tail(bytes: Uint8Array): string {
  let start = Math.max(0, bytes.length - ENVELOPE_BYTES);
  while (start > 0 && start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return decoder.decode(bytes.subarray(start));
}

export interface IntentFields {
  id: string;
  decisionId: string | null;
  tool: string;
  version: string | null;
  wasmSha256: string | null;
  /** The bytes the tool receives on stdin, when known; else `json` is hashed. */
  stdin?: Uint8Array;
  /** The input's JSON text; null when the input is not JSON at all. */
  json: string | null;
  /** Keep `json` itself in the record (its hash is always kept). */
  keepText: boolean;
  intentNs?: Nanos;
}

/** The intent record of a call about to run. */
export async function executionIntent(f: IntentFields): Promise<ExecutionIntent> {
  return {
    id: f.id,
    decision_id: f.decisionId,
    tool: f.tool,
    version: f.version,
    wasm_sha256: f.wasmSha256,
    input_sha256: f.json === null ? null : await sha256HexFast(f.stdin ?? f.json),
    input_json: f.keepText ? f.json : null,
    intent_ns: f.intentNs ?? nowNs(),
  };
}

/**
 * The outcome record of a call that ended: `result` is what the executor
 * reported (absent when it never ran or threw), `error` the call's error
 * (null when it succeeded), `durationMs` how long the call took.
 */
export async function executionOutcome(
  result: ExecutionResult | undefined,
  error: Pick<CorralErrorJSON, 'code' | 'message'> | null,
  durationMs: number,
): Promise<ExecutionOutcome> {
  return {
    result_ns: nowNs(),
    exit_code: result?.exitCode ?? null,
    error_code: error?.code ?? null,
    error_message: error?.message ?? null,
    stdout_sha256: result ? await sha256HexFast(result.stdout) : null,
    stdout_head: result ? head(result.stdout) : '',
    stdout_tail: result ? tail(result.stdout) : '',
    stderr_head: result ? head(result.stderr) : '',
    stderr_tail: result ? tail(result.stderr) : '',
    duration_ms: durationMs,
    peak_memory_bytes: result?.peakMemoryBytes ?? null,
    ran_on: result?.ranOn?.slice(0, MAX_RAN_ON) ?? null,
  };
}
