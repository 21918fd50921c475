/**
 * Asking the person at the MCP client to approve a call: the elicitation
 * form (`elicitation/create`, form mode) that describes the call, and
 * reading the answer, which comes from the client and is checked against the
 * form sent — never trusted for more than it offered.
 */
import type { ApprovalRecord, ApprovalScope } from '@corral/core';
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

/** Scopes in widening order (as @corral/core's APPROVAL_SCOPES). */
const SCOPES: readonly ApprovalScope[] = ['once', 'folder', 'tool'];

/** What the form may say, at most. */
export const APPROVAL_FORM_LIMITS = {
  /** The whole message, in characters. */
  message: 4000,
  /** The call's input as shown, in characters. */
  input: 800,
  /** Folders listed one per line; more are counted. */
  folders: 8,
  /** One path or name as shown. */
  text: 300,
} as const;

/** The scopes a person may pick for an approval whose policy allows at most `max`. */
export function scopesUpTo(max: ApprovalScope): ApprovalScope[] {
  const i = SCOPES.indexOf(max);
  return SCOPES.slice(0, i < 0 ? 1 : i + 1);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters, to escape them, is its whole job
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]/g;

/**
 * A string from the client, the model or the file system, made safe to show
 * a person: control characters, bidi overrides and line separators become
 * visible escapes (so a path or an input cannot rewrite the lines around
 * it), and it is cut to `max` characters.
 */
export function shown(text: string, max: number = APPROVAL_FORM_LIMITS.text): string {
  const escaped = text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

/** The call's input as one bounded line (the approval keeps it whole). */
function inputSummary(inputJson: string): string {
  return shown(inputJson, APPROVAL_FORM_LIMITS.input);
}

const SCOPE_WORDS: Record<ApprovalScope, string> = {
  once: 'once: this call only',
  folder: 'folder: also later calls of this tool version that see only folders inside these',
  tool: 'tool: also every later call of this tool version the policy allows',
};

export interface ApprovalForm {
  params: ElicitRequestFormParams;
  /** The scopes the form offers; an answer may pick only these. */
  scopes: ApprovalScope[];
}

/**
 * The elicitation for one pending approval: what would run (tool, version,
 * folders and their access, the input), who asked, and a form with a
 * decision (approve or reject) and, when the policy allows more than one,
 * how far the approval reaches (never wider than the policy's approval_scope).
 */
export function approvalForm(
  approval: ApprovalRecord,
  /** The terminal commands that decide it, when someone outside MCP can (`corral approve ID`); without, only this form can. */
  options: { approveCommand?: string | undefined; rejectCommand?: string | undefined } = {},
): ApprovalForm {
  const scopes = scopesUpTo(approval.max_scope);
  const folders = approval.folders
    .slice(0, APPROVAL_FORM_LIMITS.folders)
    .map((f) => `  ${shown(f.guest)} → ${shown(f.folder)} (${f.access})`);
  if (approval.folders.length > APPROVAL_FORM_LIMITS.folders)
    folders.push(`  … and ${approval.folders.length - APPROVAL_FORM_LIMITS.folders} more (corral approvals --json lists them)`);
  const lines = [
    `Corral: a tool call needs your approval before it runs.`,
    '',
    `Tool: ${shown(approval.tool)} ${shown(approval.version)}`,
    `Asked by: ${shown(approval.requested_by)} (the client's own name for itself)`,
    folders.length > 0 ? 'Folders it would see:' : 'Folders it would see: none',
    ...folders,
    `Input (chosen by the model): ${inputSummary(approval.input_json)}`,
    '',
    options.approveCommand
      ? `Approval ${approval.id}. Approve or reject here, or in a terminal: ${options.approveCommand}${options.rejectCommand ? ` (or ${options.rejectCommand})` : ''}.`
      : `Approval ${approval.id}. Approve or reject here (this server keeps no store, so nothing else can decide it).`,
    scopes.length > 1
      ? `An approval reaches: ${scopes.map((s) => SCOPE_WORDS[s]).join('; ')}. ${
          options.approveCommand
            ? `A remembered one lasts until revoked (corral approve --revoke ${approval.id}).`
            : 'A remembered one lasts until this server stops.'
        }`
      : 'An approval covers this call only.',
  ];
  let message = lines.join('\n');
  if (message.length > APPROVAL_FORM_LIMITS.message) message = `${message.slice(0, APPROVAL_FORM_LIMITS.message - 1)}…`;
  const properties: ElicitRequestFormParams['requestedSchema']['properties'] = {
    decision: {
      type: 'string',
      title: 'Decision',
      description: 'approve runs the call; reject refuses it',
      enum: ['approve', 'reject'],
    },
  };
  if (scopes.length > 1) {
    properties.scope = {
      type: 'string',
      title: 'Approve for',
      description: scopes.map((s) => SCOPE_WORDS[s]).join('; '),
      enum: [...scopes],
      default: 'once',
    };
  }
  return { params: { message, requestedSchema: { type: 'object', properties, required: ['decision'] } }, scopes };
}

/**
 * The elicitation for a workflow step's approval (`approval.workflow_run_id`
 * set): the workflow, the run, the step, what it asks (its prompt: rendered
 * from templates, so possibly from the model's inputs) and what it shows, and
 * a decision. Such an approval covers its step once: there is no scope to pick.
 */
export function workflowApprovalForm(
  approval: ApprovalRecord,
  options: { approveCommand?: string | undefined; rejectCommand?: string | undefined } = {},
): ApprovalForm {
  const lines = [
    'Corral: a workflow step waits for your approval.',
    '',
    `Workflow: ${shown(approval.tool)}, run ${shown(approval.workflow_run_id ?? '')}, step ${shown(approval.workflow_step ?? '')}`,
    `Started by: ${shown(approval.requested_by)} (the client's own name for itself)`,
    `It asks (its text may hold the model's inputs): ${shown(approval.prompt ?? '', APPROVAL_FORM_LIMITS.input)}`,
    `It shows: ${inputSummary(approval.input_json)}`,
    '',
    options.approveCommand
      ? `Approval ${approval.id}. Approve or reject here, or in a terminal: ${options.approveCommand}${options.rejectCommand ? ` (or ${options.rejectCommand})` : ''}.`
      : `Approval ${approval.id}. Approve or reject here (this server keeps no store, so nothing else can decide it).`,
    'Approving lets the run go on past this step; rejecting fails the step (or skips it, if the workflow says so).',
  ];
  let message = lines.join('\n');
  if (message.length > APPROVAL_FORM_LIMITS.message) message = `${message.slice(0, APPROVAL_FORM_LIMITS.message - 1)}…`;
  return {
    params: {
      message,
      requestedSchema: {
        type: 'object',
        properties: {
          decision: {
            type: 'string',
            title: 'Decision',
            description: 'approve lets the run go on; reject fails the step',
            enum: ['approve', 'reject'],
          },
        },
        required: ['decision'],
      },
    },
    scopes: ['once'],
  };
}

/** What the person decided, read from the client's answer. */
export type ApprovalAnswer =
  | { verdict: 'approve'; scope: ApprovalScope }
  | { verdict: 'reject'; comment: string }
  /** The answer is not one the form offered: treated as a rejection, and logged. */
  | { verdict: 'invalid'; why: string };

/**
 * The decision in an elicitation result, checked against the form sent: only
 * the fields it has, only the values it offered. accept + approve → approve
 * (scope `once` unless another offered one is picked); accept + reject,
 * decline, cancel → reject; anything else → invalid.
 */
export function readApprovalAnswer(result: ElicitResult, form: Pick<ApprovalForm, 'scopes'>): ApprovalAnswer {
  switch (result.action) {
    case 'decline':
      return { verdict: 'reject', comment: 'declined in the MCP client' };
    case 'cancel':
      return { verdict: 'reject', comment: 'dismissed in the MCP client' };
    case 'accept':
      break;
    default:
      return { verdict: 'invalid', why: 'the action is not accept, decline or cancel' };
  }
  const content: unknown = result.content;
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    return { verdict: 'invalid', why: 'no answer to the form' };
  const fields = Object.keys(content);
  const known = form.scopes.length > 1 ? ['decision', 'scope'] : ['decision'];
  const unknown = fields.find((k) => !known.includes(k));
  if (unknown !== undefined) return { verdict: 'invalid', why: `the form has no field ${JSON.stringify(shown(unknown, 60))}` };
  const { decision, scope } = content as { decision?: unknown; scope?: unknown };
  if (scope !== undefined && (typeof scope !== 'string' || !(form.scopes as string[]).includes(scope)))
    return { verdict: 'invalid', why: `scope must be one of ${form.scopes.join(', ')}` };
  if (decision === 'reject') return { verdict: 'reject', comment: 'rejected in the MCP client' };
  if (decision !== 'approve') return { verdict: 'invalid', why: 'decision must be approve or reject' };
  return { verdict: 'approve', scope: (scope as ApprovalScope | undefined) ?? 'once' };
}
