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
   * details: PolicyDeniedDetails (packages/core/src/policy.ts): `reason`, `tool`, and
   * what the reason is about (`mount`, `folder`, `approval_id`, `policy`).
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

export interface CorralErrorJSON {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
  retryable: boolean;
}

export class CorralError extends Error {
  override readonly name = 'CorralError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}, retryable: boolean = RETRYABLE_BY_DEFAULT[code]) {
    super(message);
    this.code = code;
    this.details = details;
    this.retryable = retryable;
  }

  toJSON(): CorralErrorJSON {
    return { code: this.code, message: this.message, details: this.details, retryable: this.retryable };
  }

  /** Rebuild an error that crossed a worker or process boundary as plain data. */
  static fromJSON(data: CorralErrorJSON): CorralError {
    return new CorralError(data.code, data.message, data.details ?? {}, data.retryable);
  }

  static is(value: unknown, code?: ErrorCode): value is CorralError {
    return value instanceof CorralError && (code === undefined || value.code === code);
  }
}

/** True for plain objects shaped like a serialized CorralError. */
export function isCorralErrorJSON(value: unknown): value is CorralErrorJSON {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === 'string' && v.code.startsWith('E_') && typeof v.message === 'string';
}
