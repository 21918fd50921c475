/**
 * One MCP tool call through the policy gate: the gate decides (deny by
 * default for folders), a call the policy makes wait for approval asks the
 * person at the client (elicitation) when it can and otherwise waits for
 * `corral approve`, telling the client how. A call already approved — its
 * wait timed out, or the server restarted — runs when the client makes the
 * same call again.
 */
import {
  CorralError,
  ErrorCodes,
  callerLabel,
  onAbort,
  policyDenied,
  refusedEnvelope,
  sha256Hex,
  type ApprovalRecord,
  type ApprovalScope,
  type CallerInfo,
  type FolderUse,
  type GateDecision,
  type GateRequest,
  type InvokeResult,
  type PolicyGate,
  type Tool,
} from '@corral/core';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ElicitResultSchema, type LoggingLevel, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { approvalForm, readApprovalAnswer, shown } from './approval-form.js';
import type { McpCorral } from './server.js';

/**
 * What the MCP server needs of a policy gate: @corral/core's PolicyGate
 * (`openPolicyGate` from @corral/node/policy makes one over corral.policy.yaml).
 */
export type McpGate = Pick<
  PolicyGate,
  'check' | 'requestApproval' | 'wait' | 'decide' | 'pending' | 'resume' | 'invokeApproved' | 'recordDenial' | 'store' | 'policy'
>;

export type CallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** How often a call waiting for approval tells a client that asked for progress that it still waits (clients reset their timeout on progress). */
const KEEPALIVE_MS = 15_000;

export interface GatedCall {
  corral: McpCorral;
  gate: McpGate;
  tool: Tool;
  input: unknown;
  /** Declared guest mount → host folder (inside the client's roots). */
  bindings: Record<string, string>;
  caller: CallerInfo;
  /** The client's name, as shown to people and recorded as who decided (`mcp-client:NAME`). */
  clientName: string;
  extra: CallExtra;
  /** The client supports form elicitation and the server may use it for approvals. */
  elicit: boolean;
  /** Someone outside this connection can decide (`corral approve` on the gate's store). */
  outOfBand: boolean;
  approvalTimeoutMs: number;
  approveCommand: (id: string) => string;
  /** Aborted when the client closed its side (stdio's stdin ended): nobody there can be asked any more. */
  clientClosed?: AbortSignal;
  /** A `notifications/message` to the client, at the level it asked for (or above). */
  notify: (level: LoggingLevel, text: string) => Promise<void>;
  log: (message: string) => void;
}

/** Run one call under the gate. Never throws for a refused call: the envelope carries E_POLICY_DENIED (or E_CANCELLED). */
export async function gatedCall(call: GatedCall): Promise<InvokeResult> {
  const { gate, tool, input, bindings, caller, extra } = call;
  const request: GateRequest = { tool, input, bindings, caller };
  const d = await gate.check(request);
  if (d.decision === 'deny') return refused(tool, d.error);
  if (d.decision === 'allow' && d.approval === null) return run(call, d);

  // An approval is involved. The same call may have been approved already, after its wait ended.
  const same = await sameCall(gate, request, d.effect.folders);
  if (same.approved) {
    call.log(`approval ${same.approved.id}: ${label(tool)} approved earlier for ${callerLabel(caller)}; running it now`);
    return gate.invokeApproved(call.corral, same.approved.id, { signal: extra.signal });
  }
  if (d.decision === 'allow') return run(call, d);

  if (!call.elicit && !call.outOfBand) {
    const error = policyDenied(
      `${label(tool)} needs a person's approval, and nobody can give it here: this client cannot be asked (no form elicitation, or ` +
        'elicitation approvals are turned off) and this server keeps approvals where corral approve cannot reach them (no store).',
      { reason: 'approval_unavailable', tool: tool.spec.name, version: tool.spec.version, policy: gate.policy.location },
    );
    await gate.recordDenial(request, error);
    return refused(tool, error);
  }

  let approval = same.pending;
  if (approval) call.log(`approval ${approval.id}: the same call again from ${callerLabel(caller)}; waiting on it again`);
  else {
    try {
      approval = (await gate.requestApproval(request, d)).approval;
    } catch (err) {
      if (!CorralError.is(err)) throw err;
      const error = CorralError.is(err, ErrorCodes.POLICY_DENIED)
        ? err
        : policyDenied(`The call needs approval, which cannot be kept: ${(err as CorralError).message}`, {
            reason: 'approval_unavailable',
            tool: tool.spec.name,
            version: tool.spec.version,
          });
      await gate.recordDenial(request, error);
      return refused(tool, error);
    }
  }
  return awaitDecision(call, approval);
}

function label(tool: Tool): string {
  return `${tool.spec.name}@${tool.spec.version}`;
}

function refused(tool: Tool, error: CorralError): InvokeResult {
  return refusedEnvelope(tool.spec.name, tool.spec.version, error);
}

function run(call: GatedCall, d: Extract<GateDecision, { decision: 'allow' }>): Promise<InvokeResult> {
  return call.corral.invokeTool(d.tool, call.input, { ...d.options, signal: call.extra.signal });
}

/**
 * An approval of exactly this call (tool version, input, folders and
 * access) asked for by the same caller, approved but not run yet, or still
 * pending. Store failures count as none.
 */
async function sameCall(
  gate: McpGate,
  request: GateRequest,
  folders: FolderUse[],
): Promise<{ approved?: ApprovalRecord | undefined; pending?: ApprovalRecord | undefined }> {
  let json: string | undefined;
  try {
    json = JSON.stringify(request.input);
  } catch {
    json = undefined;
  }
  if (json === undefined) return {};
  const sha = await sha256Hex(json);
  const by = callerLabel(request.caller);
  const { name, version } = request.tool.spec;
  const matches = (a: ApprovalRecord) =>
    a.workflow_run_id === null &&
    a.tool === name &&
    a.version === version &&
    a.input_sha256 === sha &&
    a.requested_by === by &&
    a.folders.length === folders.length &&
    folders.every((f) => a.folders.some((g) => g.guest === f.guest && g.folder === f.folder && g.access === f.access));
  try {
    const approved = (await gate.resume()).find(matches);
    if (approved) return { approved };
    return { pending: (await gate.pending()).find(matches) };
  } catch {
    return {};
  }
}

/** Wait for a person's decision on `approval` (asking the client's user when it can), then run the call or say why not. */
async function awaitDecision(call: GatedCall, approval: ApprovalRecord): Promise<InvokeResult> {
  const { gate, tool, extra } = call;
  const id = approval.id;
  const command = call.approveCommand(id);
  const seconds = Math.round(call.approvalTimeoutMs / 1000);
  call.log(
    `approval ${id}: ${label(tool)} asked by ${callerLabel(call.caller)} waits for a decision` +
      (call.outOfBand ? ` (${command})` : ' from the client (no store: corral approve cannot reach it)'),
  );

  // Ends the elicitation and the keep-alive once the wait is over, whatever ended it.
  const over = new AbortController();
  // Ends the wait early: the client went away, or nobody is left who could decide.
  const stopWaiting = new AbortController();
  let nobodyLeft = false;
  const stopListening = [extra.signal, call.clientClosed].map((s) => (s ? onAbort(s, () => stopWaiting.abort()) : () => {}));

  const progressToken = extra._meta?.progressToken;
  let progress = 0;
  const progressNote = (message: string) =>
    progressToken === undefined
      ? Promise.resolve()
      : extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message } })
          .catch(() => {});
  const waiting = !call.elicit
    ? `${label(tool)} waits for your approval: run \`${command}\` (add --reject to refuse) within ${seconds} s. Approval id: ${id}.`
    : call.outOfBand
      ? `${label(tool)} needs your approval (${id}): answer the request in your MCP client, or run \`${command}\` (add --reject to refuse).`
      : `${label(tool)} needs your approval (${id}): answer the request in your MCP client.`;
  await call.notify('warning', waiting);
  await progressNote(waiting);
  let keepalive: ReturnType<typeof setTimeout> | undefined;
  const keepAlive = () => {
    keepalive = setTimeout(() => {
      void progressNote(`still waiting for approval ${id}`);
      keepAlive();
    }, KEEPALIVE_MS);
  };
  if (progressToken !== undefined) keepAlive();

  if (call.elicit) {
    void elicit(call, approval, command, over.signal).then(
      (asked) => {
        if (!asked && !call.outOfBand && !over.signal.aborted) {
          nobodyLeft = true;
          stopWaiting.abort();
        }
      },
      (err: unknown) => call.log(`approval ${id}: asking the client failed: ${shown(err instanceof Error ? err.message : String(err))}`),
    );
  }

  let outcome: Awaited<ReturnType<McpGate['wait']>>;
  try {
    outcome = await gate.wait(id, { signal: stopWaiting.signal, timeoutMs: call.approvalTimeoutMs });
  } catch (err) {
    if (!CorralError.is(err)) throw err;
    // Decided just before the client closed (`corral approve` between two polls of the store): the decision
    // stands, as it would have a moment earlier, and is not answered as pending.
    const clientLeft = call.clientClosed?.aborted === true && !extra.signal.aborted;
    const decided = clientLeft ? await gate.wait(id, { timeoutMs: 0 }).catch(() => 'timeout' as const) : 'timeout';
    if (decided !== 'timeout') outcome = decided;
    else if (clientLeft) {
      return refused(
        tool,
        policyDenied(
          `The client closed the connection while the call of ${label(tool)} waited for approval. ` +
            (call.outOfBand
              ? `It stays pending as ${id}: approve it with \`${command}\`, then make the same call again (same tool, arguments and folders) and it runs.`
              : `Approval ${id} stays pending in this server's memory, which ends with it.`),
          { reason: 'client_closed', tool: tool.spec.name, version: tool.spec.version, approval_id: id },
        ),
      );
    } else if (nobodyLeft) {
      const error = policyDenied(
        `${label(tool)} needs a person's approval: the client could not be asked, and nobody else can decide here (no store). ` +
          `Approval ${id} stays pending in this server's memory: call again to be asked again.`,
        { reason: 'approval_unavailable', tool: tool.spec.name, version: tool.spec.version, approval_id: id },
      );
      await gate.recordDenial({ tool, bindings: call.bindings, caller: call.caller }, error);
      return refused(tool, error);
    } else return refused(tool, err);
  } finally {
    over.abort();
    clearTimeout(keepalive);
    for (const s of stopListening) s();
  }

  const details = { tool: tool.spec.name, version: tool.spec.version, approval_id: id, policy: gate.policy.location };
  switch (outcome) {
    case 'approved':
      return gate.invokeApproved(call.corral, id, { signal: extra.signal });
    case 'timeout':
      return refused(
        tool,
        policyDenied(
          `Nobody approved the call of ${label(tool)} within ${seconds} s. It stays pending as ${id}: approve it with \`${command}\`, ` +
            'then make the same call again (same tool, arguments and folders) and it runs; making the same call again before that waits on it again.',
          { reason: 'approval_timeout', ...details },
        ),
      );
    default: {
      const a = await gate.store.getApproval(id).catch(() => null);
      const who = a?.decided_by ?? a?.revoked_by;
      const why = a?.comment ? `: ${a.comment}` : '';
      return refused(
        tool,
        policyDenied(`The call of ${label(tool)} was ${outcome}${who ? ` by ${who}` : ''}${why}.`, {
          reason: outcome === 'rejected' ? 'approval_rejected' : outcome === 'expired' ? 'approval_expired' : 'approval_revoked',
          ...details,
        }),
      );
    }
  }
}

/**
 * Ask the client's user through `elicitation/create` (on the call's own
 * stream) and record the answer with `gate.decide`, as `mcp-client:NAME`.
 * Resolves true once an answer was recorded (or the wait ended first),
 * false when the client could not be asked.
 */
async function elicit(call: GatedCall, approval: ApprovalRecord, command: string, over: AbortSignal): Promise<boolean> {
  const form = approvalForm(approval, call.outOfBand ? { approveCommand: command, rejectCommand: `${command} --reject` } : {});
  let result: Awaited<ReturnType<CallExtra['sendRequest']>>;
  try {
    result = await call.extra.sendRequest({ method: 'elicitation/create', params: form.params }, ElicitResultSchema, {
      signal: over,
      timeout: call.approvalTimeoutMs,
    });
  } catch (err) {
    if (over.aborted) return true;
    call.log(`approval ${approval.id}: could not ask the client: ${shown(err instanceof Error ? err.message : String(err))}`);
    return false;
  }
  if (over.aborted) return true;
  const answer = readApprovalAnswer(result as Parameters<typeof readApprovalAnswer>[0], form);
  const by = `mcp-client:${call.clientName}`;
  try {
    if (answer.verdict === 'approve') {
      await call.gate.decide(approval.id, 'approve', { by, scope: answer.scope satisfies ApprovalScope });
    } else if (answer.verdict === 'reject') {
      await call.gate.decide(approval.id, 'reject', { by, comment: answer.comment });
    } else {
      call.log(`approval ${approval.id}: the client's answer is not one the form offered (${answer.why}); rejecting the call`);
      await call.gate.decide(approval.id, 'reject', { by, comment: `the client's answer did not match the form (${answer.why})` });
    }
  } catch (err) {
    // Decided meanwhile (corral approve, or another call waiting on the same approval): the first decision stands.
    call.log(`approval ${approval.id}: the client's answer was not recorded: ${shown(err instanceof Error ? err.message : String(err))}`);
  }
  return true;
}
