/**
 * How `corral serve` answers in HTTP terms: one table, used by the server,
 * its OpenAPI document and the README.
 *
 * The rule: a call that ran is 200 whatever the tool did (read `ok`), so a
 * generated client never throws on a tool's own failure and an HTTP proxy
 * never retries one; a call refused before it ran is the caller's 4xx; a
 * server that is full or stopping is 503 with Retry-After; a call that waits
 * for a person's approval is 202 with the approval. Every body that is not
 * 200 or 202 carries `error.code`: result envelopes (404, 422, some 503s)
 * have it in their `error`, and so does `{ error }` for requests refused
 * before they reached a tool.
 */
import { ErrorCodes, type ErrorCode, type ErrorDetails, type InvokeResult } from '@corral/core';

/**
 * Error codes for problems of the HTTP request itself, which Corral's own
 * codes (ErrorCodes) do not name. Body, JSON and size problems use
 * E_INPUT_VALIDATION, a full server E_RESOURCE_EXHAUSTED, a stopping one E_CLOSED.
 */
export const HttpErrorCodes = {
  /** No bearer token, or the wrong one (401). */
  UNAUTHORIZED: 'E_UNAUTHORIZED',
  /**
   * 403: the Host header is not one of the server's names (DNS-rebinding
   * protection), or a token used where it does not reach (the approver token
   * outside /approvals, the API token deciding an approval).
   */
  FORBIDDEN: 'E_FORBIDDEN',
  /** No such endpoint (404). */
  NOT_FOUND: 'E_NOT_FOUND',
  /** The endpoint exists but not with this method (405, with Allow). */
  METHOD_NOT_ALLOWED: 'E_METHOD_NOT_ALLOWED',
  /** The request conflicts with the state it acts on: an approval that was already decided, a run another process drives (409). */
  CONFLICT: 'E_CONFLICT',
  /** A bug in the server; the message says nothing more (500). */
  INTERNAL: 'E_INTERNAL',
} as const;

export type HttpErrorCode = (typeof HttpErrorCodes)[keyof typeof HttpErrorCodes];

/** What the HTTP codes' answers carry in `details`. */
export interface HttpErrorDetails {
  /** E_FORBIDDEN: why (a Host header, or a token used where it does not reach); E_CONFLICT: `not_pending`. */
  reason?:
    | 'host_not_allowed'
    | 'approver_token'
    | 'no_approver_token'
    | 'api_token_cannot_approve'
    | 'not_pending'
    /** E_CONFLICT: POST /workflows/runs/{id}/resume of a run another process drives. */
    | 'run_driven_elsewhere';
  /** E_CONFLICT: the approval, and the state it is in. */
  approval_id?: string;
  status?: string;
  /** E_METHOD_NOT_ALLOWED: the methods the endpoint takes. */
  allow?: string[];
}

/** The `details` of an error answer with `code`: Corral's, typed per code (ERRORS.md), or the HTTP codes' own. */
export type WireErrorDetails<C extends ErrorCode | HttpErrorCode> = C extends ErrorCode ? ErrorDetails<C> : HttpErrorDetails;

/** The HTTP status of a call's result envelope. */
export function statusForResult(result: Pick<InvokeResult, 'error'>): number {
  const error = result.error;
  if (!error) return 200;
  switch (error.code) {
    case ErrorCodes.TOOL_NOT_FOUND:
      return 404;
    case ErrorCodes.INPUT_VALIDATION:
      return 422;
    case ErrorCodes.POLICY_DENIED:
      // Refused before it ran. (A call still waiting for approval is 202; the server answers that itself.)
      return 403;
    case ErrorCodes.RESOURCE_EXHAUSTED:
      // The pool's queue was full: the server's state, not the tool's doing.
      return error.details?.resource === 'queue' ? 503 : 200;
    case ErrorCodes.UNEXPECTED_EXIT:
    case ErrorCodes.NETWORK_BLOCKED:
      return 200;
    case ErrorCodes.CANCELLED: // only a shutdown cancels a call whose caller is still there
    case ErrorCodes.CLOSED:
      return 503;
    default:
      // E_REGISTRATION (a tool whose schema cannot be compiled), E_STORE, and codes this server does not know.
      return 500;
  }
}

/** The status codes, as a Markdown table (the OpenAPI document's description). */
export const statusTable = `| status | when | body |
| --- | --- | --- |
| 200 | the call ran: the tool succeeded (\`ok: true\`) or failed inside its sandbox (\`ok: false\`: E_UNEXPECTED_EXIT, E_RESOURCE_EXHAUSTED at its own limits, E_NETWORK_BLOCKED) | result envelope |
| 200 | a workflow run ended or waits for a person (read \`status\`: succeeded, failed, waiting); a step the policy refused failed with E_POLICY_DENIED inside it | WorkflowResult |
| 202 | the policy requires approval and nobody decided within --approval-wait: the call stays pending, runs once approved; follow Location (/approvals/{id}) | \`{ approval, message }\` |
| 400 | the body is not JSON or UTF-8, or not the documented object (unknown key, wrong type, timeout_ms out of range) | \`{ error }\`, E_INPUT_VALIDATION |
| 401 | a token is configured and the request has none, or the wrong one | \`{ error }\`, E_UNAUTHORIZED |
| 403 | the policy refused the call (recorded in the audit trail); or the Host header is not one of the server's names (loopback servers: DNS-rebinding protection), or a token used where it does not reach | envelope, E_POLICY_DENIED with details.reason; \`{ error }\`, E_FORBIDDEN |
| 404 | no tool with that name or range (the call is recorded), or no such endpoint, approval, workflow or workflow run | envelope, E_TOOL_NOT_FOUND; \`{ error }\`, E_NOT_FOUND |
| 405 | the endpoint does not take this method (see Allow) | \`{ error }\`, E_METHOD_NOT_ALLOWED |
| 409 | POST /approvals/{id}: the approval is no longer pending; POST /workflows/runs/{id}/resume: another process drives the run | \`{ error }\`, E_CONFLICT |
| 413 | the body is larger than --max-body-mb | \`{ error }\`, E_INPUT_VALIDATION |
| 415 | the body is not declared as \`application/json\` | \`{ error }\`, E_INPUT_VALIDATION |
| 422 | the input does not match the tool's input_schema (the call is recorded); a workflow's inputs are not what it declares, or nest too deep | envelope, E_INPUT_VALIDATION; \`{ error }\` for workflows |
| 500 | the server could not run the tool (E_REGISTRATION), or a bug (E_INTERNAL) | envelope or \`{ error }\` |
| 503 | full (--concurrency calls in flight, or the worker queue), or shutting down; see Retry-After | \`{ error }\` or envelope: E_RESOURCE_EXHAUSTED, E_CLOSED, E_CANCELLED |`;
