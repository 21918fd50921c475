/**
 * Workflows as MCP tools: each workflow a server offers (ServedWorkflows of
 * @corral/workflow) is one tool, `workflow-NAME`, whose arguments are the
 * workflow's inputs (its `inputs` declarations as the inputSchema) and whose
 * result is the run's WorkflowResult as structured content. Every tool call
 * a step makes goes through the policy gate as the client's own call would,
 * its MCP roots included: a folder outside them, or one the policy does not
 * grant, fails the step with E_POLICY_DENIED.
 *
 * A run that waits for a person is not an error: the result says `waiting`,
 * with the run id and the approvals, and how to decide them. When the client
 * supports form elicitation (and approvals by elicitation are on), the
 * person at the client is asked right away, step by step, and the run goes
 * on within the same call. Decided elsewhere (`corral approve ID`), the
 * server continues the run by itself; `workflow-runs` shows where it is.
 */
import { CorralError, ErrorCodes, type ApprovalRecord, type CallerInfo } from '@corral/core';
import {
  remoteRunKind,
  workflowInputSchema,
  workflowResultSchema,
  type ServedWorkflows,
  type Workflow,
  type WorkflowResult,
} from '@corral/workflow';
import { ElicitResultSchema, type CallToolResult, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { readApprovalAnswer, shown, workflowApprovalForm } from './approval-form.js';
import type { CallExtra, McpGate } from './gated-call.js';
import { errorResult, withAnySignal } from './tools.js';

/** The prefix of a workflow's tool name. */
export const WORKFLOW_TOOL_PREFIX = 'workflow-';
/** The tool that shows a run this server started over MCP. ('runs' is no workflow's name.) */
export const RUNS_TOOL = 'workflow-runs';
/** `_meta` key on a workflow tool: the workflow's name. */
export const WORKFLOW_META = 'corral/workflow';

/** Rounds of asking within one call at most (each a step that waits, then the run going on). */
const MAX_ROUNDS = 32;
const RUN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A workflow's tool name: `workflow-NAME`, in MCP's tool-name charset (A-Z a-z 0-9 _ - .), at most 128. */
export function workflowToolName(name: string): string {
  return `${WORKFLOW_TOOL_PREFIX}${name}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
}

const resultOutputSchema = {
  ...workflowResultSchema,
  properties: {
    ...workflowResultSchema.properties,
    message: { type: 'string', description: 'What to do next: how to approve what the run waits for.' },
  },
};

const runsOutputSchema = {
  type: 'object',
  required: ['runId', 'workflow', 'status', 'pending'],
  properties: {
    runId: { type: 'string' },
    workflow: { type: 'string' },
    status: { type: 'string', enum: ['running', 'waiting', 'succeeded', 'failed', 'cancelled'] },
    outputs: {},
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' }, step: { type: 'string' } } },
    pending: {
      type: 'array',
      items: {
        type: 'object',
        required: ['step', 'approvalId', 'prompt'],
        properties: { step: { type: 'string' }, approvalId: { type: 'string' }, prompt: { type: 'string' } },
      },
    },
    message: { type: 'string' },
  },
};

/** A workflow as `tools/list` describes it. */
export function toWorkflowTool(workflow: Workflow): McpTool {
  const steps = workflow.steps.length;
  const approvals = workflow.steps.some((s) => 'approval' in s);
  return {
    name: workflowToolName(workflow.name),
    description:
      `${workflow.description ? `${workflow.description} ` : ''}(Corral workflow ${workflow.name}, ${steps} step${steps === 1 ? '' : 's'}: ` +
      "each step's tool call runs under the user's policy, on folders inside your roots." +
      (approvals
        ? " It pauses for a person's approval: the result then has status 'waiting', the run id and what it waits for, and the run goes on once decided."
        : '') +
      ')',
    inputSchema: workflowInputSchema(workflow) as McpTool['inputSchema'],
    outputSchema: resultOutputSchema as unknown as McpTool['outputSchema'],
    annotations: { title: `Workflow ${workflow.name}`, readOnlyHint: false, openWorldHint: false },
    _meta: { [WORKFLOW_META]: workflow.name },
  };
}

/** The tool that shows a run's state. */
export function runsTool(): McpTool {
  return {
    name: RUNS_TOOL,
    description:
      'The state of a Corral workflow run started over MCP (the runId a workflow-… tool answered): its status, outputs or error, and the approvals it waits for. Reads only.',
    inputSchema: {
      type: 'object',
      properties: { run_id: { type: 'string', description: 'The runId of a workflow result.', maxLength: 128 } },
      required: ['run_id'],
      additionalProperties: false,
    },
    outputSchema: runsOutputSchema as unknown as McpTool['outputSchema'],
    annotations: { title: 'Workflow run', readOnlyHint: true, openWorldHint: false },
  };
}

export interface WorkflowCall {
  workflows: ServedWorkflows;
  gate: McpGate;
  workflow: Workflow;
  args: unknown;
  caller: CallerInfo;
  clientName: string;
  extra: CallExtra;
  /** Ask the person at the client (form elicitation) to decide the steps the run waits for. */
  elicit: boolean;
  /** Someone outside this connection can decide (`corral approve` on the gate's store). */
  outOfBand: boolean;
  approvalTimeoutMs: number;
  approveCommand: (id: string) => string;
  /** Aborted when the client closed its side (stdio's stdin ended): nobody there can be asked any more. */
  clientClosed?: AbortSignal;
  log: (message: string) => void;
}

/** Run a workflow for an MCP client; asks for its approvals by elicitation when it can. Never throws for a refused run. */
export async function callWorkflow(call: WorkflowCall): Promise<CallToolResult> {
  let result: WorkflowResult;
  try {
    // Not tied to the request's signal: the run is durable and goes on if the client goes away (workflow-runs shows it).
    result = await call.workflows.run(call.workflow.name, call.args, call.caller);
  } catch (err) {
    if (!CorralError.is(err)) throw err;
    return errorResult(err.toJSON(), { [WORKFLOW_META]: call.workflow.name });
  }
  const deadline = Date.now() + call.approvalTimeoutMs;
  const canAsk = () => call.elicit && !call.clientClosed?.aborted;
  for (let round = 0; canAsk() && result.status === 'waiting' && round < MAX_ROUNDS && Date.now() < deadline; round++) {
    const asked = await askAll(call, result, deadline - Date.now());
    if (!asked) break;
    try {
      result = await call.workflows.resume(result.runId, call.caller, { onlyIfWaiting: true });
    } catch (err) {
      if (!CorralError.is(err)) throw err;
      call.log(`workflow run ${result.runId}: could not go on after the decision: ${shown(err.message)}`);
      break;
    }
  }
  return workflowResult(call, result);
}

/** Ask about every approval the run waits for; true when at least one was decided (by the client or anyone). */
async function askAll(call: WorkflowCall, result: WorkflowResult, timeoutMs: number): Promise<boolean> {
  let decided = false;
  for (const p of result.pending ?? []) {
    const approval = await call.gate.store.getApproval(p.approvalId).catch(() => null);
    if (!approval) continue;
    if (approval.status !== 'pending') {
      decided = true;
      continue;
    }
    if (await askOne(call, approval, timeoutMs)) decided = true;
    else return decided;
  }
  return decided;
}

/** One elicitation, its answer recorded with `gate.decide` as `mcp-client:NAME`. False when the client could not be asked. */
async function askOne(call: WorkflowCall, approval: ApprovalRecord, timeoutMs: number): Promise<boolean> {
  const command = call.approveCommand(approval.id);
  const form = workflowApprovalForm(approval, call.outOfBand ? { approveCommand: command, rejectCommand: `${command} --reject` } : {});
  let answer: ReturnType<typeof readApprovalAnswer>;
  try {
    // Given up when the call is, or when the client closed its side and can no longer answer.
    const reply = await withAnySignal([call.extra.signal, call.clientClosed], (signal) =>
      call.extra.sendRequest({ method: 'elicitation/create', params: form.params }, ElicitResultSchema, {
        signal,
        timeout: Math.max(1, timeoutMs),
      }),
    );
    answer = readApprovalAnswer(reply as Parameters<typeof readApprovalAnswer>[0], form);
  } catch (err) {
    call.log(`approval ${approval.id}: could not ask the client: ${shown(err instanceof Error ? err.message : String(err))}`);
    return false;
  }
  const by = `mcp-client:${call.clientName}`;
  try {
    if (answer.verdict === 'approve') await call.gate.decide(approval.id, 'approve', { by });
    else if (answer.verdict === 'reject') await call.gate.decide(approval.id, 'reject', { by, comment: answer.comment });
    else {
      call.log(`approval ${approval.id}: the client's answer is not one the form offered (${answer.why}); rejecting the step`);
      await call.gate.decide(approval.id, 'reject', { by, comment: `the client's answer did not match the form (${answer.why})` });
    }
  } catch (err) {
    // Decided meanwhile (corral approve): the first decision stands, and the run goes on with it.
    call.log(`approval ${approval.id}: the client's answer was not recorded: ${shown(err instanceof Error ? err.message : String(err))}`);
  }
  return true;
}

/** The run as a tool result: structured, `isError` only when it failed; a waiting run says how to go on. */
function workflowResult(call: Pick<WorkflowCall, 'outOfBand' | 'approveCommand' | 'workflow'>, result: WorkflowResult): CallToolResult {
  const message = messageFor(call, result);
  const structured = { ...result, ...(message ? { message } : {}) } as unknown as Record<string, unknown>;
  const summary =
    result.status === 'failed' && result.error
      ? `${result.error.code}: workflow run ${result.runId} failed: ${result.error.message}\n`
      : message
        ? `${message}\n`
        : '';
  return {
    content: [{ type: 'text', text: `${summary}${JSON.stringify(result)}` }],
    structuredContent: structured,
    ...(result.status === 'failed' || result.status === 'cancelled' ? { isError: true } : {}),
    _meta: { [WORKFLOW_META]: call.workflow.name },
  };
}

function messageFor(call: Pick<WorkflowCall, 'outOfBand' | 'approveCommand'>, result: WorkflowResult): string | undefined {
  if (result.status === 'running')
    return `Workflow run ${result.runId} is going on (continued by this server after a decision); ${RUNS_TOOL} with its run_id shows where it is.`;
  if (result.status !== 'waiting') return undefined;
  const steps = (result.pending ?? []).map((p) =>
    call.outOfBand
      ? `step ${p.step} (${shown(p.prompt, 200)}): a person approves with \`${call.approveCommand(p.approvalId)}\` (add --reject to refuse)`
      : `step ${p.step} (${shown(p.prompt, 200)}): approval ${p.approvalId}`,
  );
  return (
    `Workflow run ${result.runId} waits for a person's approval: ${steps.join('; ')}. ` +
    (call.outOfBand
      ? 'Once decided, this server continues the run by itself; '
      : 'This server keeps no store: only an answer through this client can decide it (call the workflow again to be asked). ') +
    `${RUNS_TOOL} with {"run_id": "${result.runId}"} shows where it is. You cannot approve it yourself.`
  );
}

/** `workflow-runs {run_id}`: a run this server's MCP clients started, read from the store. */
export async function callRuns(workflows: ServedWorkflows, args: unknown, approveCommand: (id: string) => string): Promise<CallToolResult> {
  const runId = (args as { run_id?: unknown } | null)?.run_id;
  const refuse = (message: string) => errorResult(new CorralError(ErrorCodes.INPUT_VALIDATION, message, { option: 'run_id' }).toJSON(), {});
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) return refuse('run_id must be the runId a workflow tool answered');
  // Only runs started over MCP: not the CLI's, nor HTTP callers'.
  if (remoteRunKind(runId) !== 'mcp') return refuse(`There is no workflow run ${runId} started over MCP`);
  let status: Awaited<ReturnType<ServedWorkflows['status']>>;
  try {
    status = await workflows.status(runId);
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) return refuse(`There is no workflow run ${runId} started over MCP`);
    throw err;
  }
  const { run, pending } = status;
  const out = {
    runId: run.id,
    workflow: run.workflow,
    status: run.status,
    ...(run.status === 'succeeded' ? { outputs: run.outputs } : {}),
    ...(run.error ? { error: run.error } : {}),
    pending: pending.map((a) => ({ step: a.workflow_step ?? '', approvalId: a.id, prompt: a.prompt ?? '' })),
    ...(pending.length > 0
      ? { message: `It waits for a person: ${pending.map((a) => `\`${approveCommand(a.id)}\` (step ${a.workflow_step})`).join(', ')}.` }
      : {}),
  };
  return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
}
