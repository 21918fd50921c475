/**
 * The gate in one process, over a real policy file and a real SQLite store:
 * approvals (once, remembered, rejected, expired, timed out, cancelled),
 * the policy changing while a call waits, a broken file failing closed, and
 * the audit trail each step leaves.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Registry,
  nowNs,
  workflowApproval,
  type GateHost,
  type InvokeOptions,
  type InvokeResult,
  type PolicyGate,
  type Tool,
} from '@corral/core';
import { BUNDLED_TOOLS_DIR, SqliteStore, loadToolFolder } from '@corral/node';
import { openPolicyGate } from '@corral/node/policy';

interface Setup {
  dir: string;
  src: string;
  other: string;
  policyPath: string;
  store: SqliteStore;
  gate: PolicyGate;
  host: GateHost & { calls: { tool: string; input: unknown; options: InvokeOptions }[] };
  tool: Tool;
}

const open: Setup[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.store.close();
});

/** A fake host that records what the gate would run; the real runtime is exercised in cli.test.ts. */
async function setup(
  policyYaml: (s: { src: string; other: string }) => string,
  gateOptions: { approvalTtlMs?: number; maxPending?: number } = {},
): Promise<Setup> {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-gate-')));
  const src = join(dir, 'work/src');
  const other = join(dir, 'work/other');
  mkdirSync(src, { recursive: true });
  mkdirSync(other, { recursive: true });
  const policyPath = join(dir, 'config/policy.yaml');
  mkdirSync(join(dir, 'config'));
  writeFileSync(policyPath, policyYaml({ src, other }));
  const store = await SqliteStore.open(join(dir, 'data/snapshots.db'));
  const gate = openPolicyGate({ store, policyPath, env: {}, ...gateOptions });
  const registry = new Registry();
  await loadToolFolder(registry, BUNDLED_TOOLS_DIR);
  const calls: Setup['host']['calls'] = [];
  const host = {
    registry,
    calls,
    async invokeTool(tool: Tool, input: unknown, options: InvokeOptions = {}): Promise<InvokeResult> {
      calls.push({ tool: tool.spec.name, input, options });
      return {
        ok: true,
        tool: tool.spec.name,
        version: tool.spec.version,
        output: { ran: true },
        error: null,
        exit_code: 0,
        duration_ms: 1,
        stdout_head: '',
        stderr_tail: '',
        stdout_truncated: false,
        stderr_truncated: false,
        snapshot: { id: crypto.randomUUID() },
      };
    },
  };
  const s = { dir, src, other, policyPath, store, gate, host, tool: registry.resolve('file-stats') };
  open.push(s);
  return s;
}

const needsApproval = ({ src, other }: { src: string; other: string }) => `
version: 1
tools:
  file-stats:
    mounts:
      /workspace:
        - { folder: ${src}, access: read }
        - { folder: ${other}, access: read }
    approval: required
    approval_scope: folder
`;

describe('approvals', () => {
  it('a call waits until approved once, runs with what the policy gives, and the approval is used up', async () => {
    const s = await setup(needsApproval);
    const pending: string[] = [];
    const running = s.gate.invoke(
      s.host,
      'file-stats',
      { path: '/workspace' },
      {
        bindings: { '/workspace': s.src },
        caller: { kind: 'mcp', id: 'claude' },
        onApprovalRequired: (a) => void pending.push(a.id),
      },
    );
    await expect.poll(() => pending.length).toBe(1);
    const [id] = pending as [string];
    expect(s.host.calls).toHaveLength(0);
    expect((await s.gate.pending()).map((a) => a.id)).toEqual([id]);
    const decided = await s.gate.decide(id, 'approve', { by: 'ada', comment: 'looks fine' });
    expect(decided).toMatchObject({ status: 'approved', scope: 'once', decided_by: 'ada', comment: 'looks fine' });
    const result = await running;
    expect(result).toMatchObject({ ok: true, output: { ran: true } });
    expect(s.host.calls[0]!.options).toMatchObject({
      mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: s.src } }],
      env: {},
      timeoutMs: 10_000,
    });
    const done = await s.store.getApproval(id);
    expect(done).toMatchObject({ status: 'done', execution_id: result.snapshot!.id, requested_by: 'mcp:claude' });
    // Once means once: the next call waits again.
    const next = await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } });
    expect(next.decision).toBe('approval_required');
    await expect(s.gate.decide(id, 'approve', { by: 'ada' })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: /is done, not pending/,
    });
    const trail = (await s.store.listAudit()).reverse().map((e) => [e.action, e.actor, e.approval_id]);
    expect(trail).toEqual([
      ['approval_requested', 'mcp:claude', id],
      ['approve', 'ada', id],
    ]);
  });

  it('a rejection fails the call with E_POLICY_DENIED, saying who and why', async () => {
    const s = await setup(needsApproval);
    const running = s.gate.invoke(
      s.host,
      'file-stats',
      {},
      {
        bindings: { '/workspace': s.src },
        onApprovalRequired: (a) => void s.gate.decide(a.id, 'reject', { by: 'bob', comment: 'not today' }),
      },
    );
    const result = await running;
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'E_POLICY_DENIED', message: /rejected by bob: not today/, details: { reason: 'approval_rejected' } },
    });
    expect(s.host.calls).toHaveLength(0);
    expect((await s.store.listAudit()).map((e) => e.action)).toEqual(['reject', 'approval_requested']);
  });

  it('a folder-scoped approval covers later calls inside that folder only, until it is revoked', async () => {
    const s = await setup(needsApproval);
    const first = await s.gate.authorize(
      { tool: s.tool, input: {}, bindings: { '/workspace': s.src } },
      { onApprovalRequired: (a) => void s.gate.decide(a.id, 'approve', { by: 'ada', scope: 'folder' }) },
    );
    expect(first).toMatchObject({ decision: 'allow', approval: { scope: 'folder', status: 'claimed' } });
    if (first.decision !== 'allow') throw new Error('unreachable');
    await s.gate.finish(first.approval!.id, null);
    mkdirSync(join(s.src, 'inner'));
    const covered = await s.gate.check({ tool: s.tool, input: { other: 'input' }, bindings: { '/workspace': join(s.src, 'inner') } });
    expect(covered).toMatchObject({ decision: 'allow', approval: { id: first.approval!.id } });
    const elsewhere = await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.other } });
    expect(elsewhere.decision).toBe('approval_required');
    expect((await s.gate.standing()).map((a) => a.id)).toEqual([first.approval!.id]);
    // Narrowing the policy's approval_scope to once withdraws it; widening it back restores it.
    writeFileSync(s.policyPath, needsApproval({ src: s.src, other: s.other }).replace('approval_scope: folder', 'approval_scope: once'));
    expect((await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } })).decision).toBe('approval_required');
    writeFileSync(s.policyPath, needsApproval({ src: s.src, other: s.other }));
    expect((await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } })).decision).toBe('allow');
    await s.gate.revokeApproval(first.approval!.id, { by: 'ada', comment: 'done with it' });
    expect((await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } })).decision).toBe('approval_required');
    expect(await s.gate.standing()).toEqual([]);
    expect((await s.store.listAudit({ action: 'approval_revoked' }))[0]).toMatchObject({
      actor: 'ada',
      detail: { comment: 'done with it' },
    });
  });

  it('refuses a scope wider than the policy’s approval_scope, an unknown id and a missing approver', async () => {
    const s = await setup(needsApproval);
    const d = await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } });
    if (d.decision !== 'approval_required') throw new Error('expected approval_required');
    expect(d.max_scope).toBe('folder');
    const handle = await s.gate.requestApproval({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } }, d);
    await expect(s.gate.decide(handle.id, 'approve', { by: 'ada', scope: 'tool' })).rejects.toMatchObject({ message: /at most 'folder'/ });
    await expect(s.gate.decide('no-such-id', 'approve', { by: 'ada' })).rejects.toMatchObject({ message: /No approval/ });
    await expect(s.gate.decide('../../x', 'approve', { by: 'ada' })).rejects.toMatchObject({ message: /not an approval id/ });
    await expect(s.gate.decide(handle.id, 'approve', { by: ' ' })).rejects.toMatchObject({ message: /who decides/ });
    await expect(s.gate.revokeApproval(handle.id, { by: 'ada' })).rejects.toMatchObject({ message: /still pending: reject it instead/ });
    expect((await s.store.getApproval(handle.id))?.status).toBe('pending');
  });

  it('an approval nobody decides expires; a wait that times out leaves it pending for resume', async () => {
    const s = await setup(needsApproval, { approvalTtlMs: 300 });
    const expired = await s.gate.invoke(s.host, 'file-stats', {}, { bindings: { '/workspace': s.src }, approvalTimeoutMs: 5_000 });
    expect(expired.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'approval_expired' } });
    const id = expired.error!.details.approval_id as string;
    await expect(s.gate.decide(id, 'approve', { by: 'ada' })).rejects.toMatchObject({ message: /is expired, not pending/ });

    const t = await setup(needsApproval);
    const timedOut = await t.gate.invoke(t.host, 'file-stats', { n: 1 }, { bindings: { '/workspace': t.src }, approvalTimeoutMs: 100 });
    expect(timedOut.error).toMatchObject({ details: { reason: 'approval_timeout' }, message: /stays pending/ });
    const waiting = timedOut.error!.details.approval_id as string;
    expect((await t.gate.pending()).map((a) => a.id)).toEqual([waiting]);
    await t.gate.decide(waiting, 'approve', { by: 'ada' });
    expect((await t.gate.resume()).map((a) => a.id)).toEqual([waiting]);
    const ran = await t.gate.invokeApproved(t.host, waiting);
    expect(ran.ok).toBe(true);
    expect(t.host.calls[0]!.input).toEqual({ n: 1 });
    expect(await t.gate.resume()).toEqual([]);
    // A second host resuming the same approval cannot run it again.
    const again = await t.gate.invokeApproved(t.host, waiting);
    expect(again.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'approval_unavailable' } });
    expect(t.host.calls).toHaveLength(1);
  });

  it('a cancelled wait is E_CANCELLED and leaves the approval pending; the pending list is bounded', async () => {
    const s = await setup(needsApproval, { maxPending: 2 });
    const controller = new AbortController();
    const running = s.gate.invoke(
      s.host,
      'file-stats',
      {},
      {
        bindings: { '/workspace': s.src },
        signal: controller.signal,
        onApprovalRequired: () => controller.abort(),
      },
    );
    expect((await running).error).toMatchObject({ code: 'E_CANCELLED' });
    expect(await s.gate.pending()).toHaveLength(1);
    await s.gate.invoke(s.host, 'file-stats', {}, { bindings: { '/workspace': s.src }, approvalTimeoutMs: 0 });
    const third = await s.gate.invoke(s.host, 'file-stats', {}, { bindings: { '/workspace': s.src }, approvalTimeoutMs: 0 });
    expect(third.error).toMatchObject({
      code: 'E_POLICY_DENIED',
      details: { reason: 'approval_unavailable' },
      message: /2 calls already wait/,
    });
    expect(await s.gate.pending()).toHaveLength(2);
  });

  it('re-checks the policy when an approved call runs: a folder revoked meanwhile is refused', async () => {
    const s = await setup(needsApproval);
    const running = s.gate.invoke(
      s.host,
      'file-stats',
      {},
      {
        bindings: { '/workspace': s.other },
        onApprovalRequired: async (a) => {
          // The grant of `other` goes away while the call waits; then someone approves it anyway.
          writeFileSync(s.policyPath, needsApproval({ src: s.src, other: s.src }));
          await s.gate.decide(a.id, 'approve', { by: 'ada' });
        },
      },
    );
    const result = await running;
    expect(result.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'not_granted', folder: s.other } });
    expect(s.host.calls).toHaveLength(0);
    expect((await s.store.listApprovals())[0]).toMatchObject({ status: 'done', execution_id: null });
  });
});

describe('the policy file while a gate runs', () => {
  it('a change is seen at the next call; a broken file fails closed, saying why, until it is fixed', async () => {
    const s = await setup(
      ({ src }) => `version: 1\ntools:\n  file-stats:\n    mounts:\n      /workspace: [{ folder: ${src}, access: read }]\n`,
    );
    const call = () =>
      s.gate.invoke(s.host, 'file-stats', {}, { bindings: { '/workspace': s.src }, caller: { kind: 'http', id: 'token-1' } });
    expect((await call()).ok).toBe(true);
    writeFileSync(s.policyPath, 'version: 1\ntools:\n  file-stats: { mounts: { /workspace: [ {folder: oops\n');
    const broken = await call();
    expect(broken.error).toMatchObject({
      code: 'E_POLICY_DENIED',
      message: new RegExp(`The policy ${s.policyPath} cannot be used.*line \\d+`),
      details: { reason: 'policy_invalid', policy: s.policyPath },
    });
    writeFileSync(s.policyPath, 'version: 1\ntools:\n  file-stats:\n    deny: true\n');
    expect((await call()).error).toMatchObject({ details: { reason: 'tool_denied' } });
    writeFileSync(s.policyPath, `version: 1\ntools:\n  file-stats:\n    mounts:\n      /workspace: [{ folder: ${s.src}, access: read }]\n`);
    expect((await call()).ok).toBe(true);
    const denials = await s.store.listAudit({ action: 'deny' });
    expect(denials.map((e) => e.detail.reason)).toEqual(['tool_denied', 'policy_invalid']);
    expect(denials[0]).toMatchObject({
      actor: 'http:token-1',
      tool: 'file-stats',
      detail: { bindings: { '/workspace': { folder: s.src } } },
    });
  });

  it('a caller’s own time limit may shorten the call, never lengthen it', async () => {
    const s = await setup(
      ({ src }) =>
        `version: 1\ntools:\n  file-stats:\n    resources: { timeout_ms: 4000 }\n    mounts:\n      /workspace: [{ folder: ${src}, access: read }]\n`,
    );
    for (const [asked, got] of [
      [undefined, 4000],
      [500, 500],
      [999_999, 4000],
      [-1, 4000],
      [Number.NaN, 4000],
    ] as const) {
      await s.gate.invoke(
        s.host,
        'file-stats',
        {},
        { bindings: { '/workspace': s.src }, ...(asked !== undefined ? { timeoutMs: asked } : {}) },
      );
      expect(s.host.calls.at(-1)!.options.timeoutMs, String(asked)).toBe(got);
    }
  });

  it('a request that is not well formed is refused and recorded, without throwing', async () => {
    const s = await setup(() => 'version: 1\n');
    const odd: unknown[] = [
      [s.src],
      { '/workspace': 42 },
      { '/workspace': null },
      { '/workspace': { folder: 'x'.repeat(100_000) } },
      'nope',
    ];
    for (const bindings of odd) {
      const r = await s.gate.invoke(
        s.host,
        'file-stats',
        {},
        { bindings: bindings as never, caller: { kind: 'http', roots: 'x' as never } },
      );
      expect(r.error, JSON.stringify(bindings).slice(0, 80)).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'bad_request' } });
    }
    expect(s.host.calls).toHaveLength(0);
    const denials = await s.store.listAudit({ action: 'deny' });
    expect(denials).toHaveLength(odd.length);
    expect(denials.map((d) => d.detail.bindings)).toContainEqual({ '/workspace': { folder: '(number)' } });
  });

  it('an unknown tool is E_TOOL_NOT_FOUND and never reaches the host', async () => {
    const s = await setup(() => 'version: 1\n');
    const result = await s.gate.invoke(s.host, 'no-such-tool@^1', {});
    expect(result).toMatchObject({ ok: false, tool: 'no-such-tool', error: { code: 'E_TOOL_NOT_FOUND' } });
    expect(s.host.calls).toHaveLength(0);
  });
});

describe('a workflow step’s approval', () => {
  /** A step of a workflow that happens to share the tool's name: what would run, if anything ran it, is file-stats. */
  const stepOf = (run: string, step = 'sign-off') =>
    workflowApproval({
      id: `appr-${run}-${step}`,
      workflow: 'file-stats',
      run_id: run,
      step,
      prompt: 'Merge this patch?',
      input: { path: '/workspace' },
      requested_by: 'workflow:file-stats',
      caller: { kind: 'mcp', id: 'claude' },
      requested_ns: nowNs(),
      expires_ns: (BigInt(nowNs()) + 86_400_000_000_000n).toString(),
    });

  it('is pending and decided like a call’s, in the same audit trail; approving it runs nothing and resume skips it', async () => {
    const s = await setup(needsApproval);
    const step = await stepOf('run-1');
    await s.store.createApproval(step);
    expect(await s.store.getApproval(step.id)).toEqual(step);
    expect((await s.gate.pending()).map((a) => a.id)).toEqual([step.id]);
    await expect(s.gate.decide(step.id, 'approve', { by: 'ada', scope: 'folder' })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: /step sign-off of workflow run run-1: it covers that step only/,
    });
    const decided = await s.gate.decide(step.id, 'approve', { by: 'ada', comment: 'ship it' });
    expect(decided).toEqual({
      ...step,
      status: 'approved',
      scope: 'once',
      decided_by: 'ada',
      decided_ns: decided.decided_ns,
      comment: 'ship it',
    });
    expect(await s.gate.wait(step.id, { timeoutMs: 0 })).toBe('approved');
    // Nothing takes it up to run: not resume, not a claim, not invokeApproved; it stays approved for the engine.
    expect(await s.gate.resume()).toEqual([]);
    expect(await s.gate.standing()).toEqual([]);
    const ran = await s.gate.invokeApproved(s.host, step.id);
    expect(ran).toMatchObject({
      ok: false,
      tool: 'file-stats',
      error: {
        code: 'E_POLICY_DENIED',
        message: /not a tool call.*corral workflow resume run-1/,
        details: { reason: 'approval_unavailable' },
      },
    });
    expect(await s.gate.claim(step.id, s.tool)).toMatchObject({ decision: 'deny', error: { details: { approval_id: step.id } } });
    expect(s.host.calls).toHaveLength(0);
    expect((await s.store.getApproval(step.id))?.status).toBe('approved');
    // A call of the same tool still waits for its own approval: the step's approval covers nothing else.
    expect((await s.gate.check({ tool: s.tool, input: { path: '/workspace' }, bindings: { '/workspace': s.src } })).decision).toBe(
      'approval_required',
    );
    // One audit trail: the decision names the run and the step.
    const [approve] = await s.store.listAudit({ action: 'approve' });
    expect(approve).toMatchObject({
      actor: 'ada',
      tool: 'file-stats',
      approval_id: step.id,
      detail: { workflow_run_id: 'run-1', workflow_step: 'sign-off', comment: 'ship it', folders: [] },
    });
    // A rejection, and a revocation, only change the status.
    const other = await stepOf('run-2');
    await s.store.createApproval(other);
    expect(await s.gate.decide(other.id, 'reject', { by: 'bob' })).toMatchObject({ status: 'rejected' });
    expect(await s.gate.revokeApproval(step.id, { by: 'ada' })).toMatchObject({ status: 'revoked', revoked_by: 'ada' });
    expect(s.host.calls).toHaveLength(0);
  });

  it('resume lists the approved calls only, while steps of workflows are approved beside them', async () => {
    const s = await setup(needsApproval);
    const d = await s.gate.check({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } });
    if (d.decision !== 'approval_required') throw new Error('expected approval_required');
    const call = await s.gate.requestApproval({ tool: s.tool, input: {}, bindings: { '/workspace': s.src } }, d);
    const step = await stepOf('run-3');
    await s.store.createApproval(step);
    await s.gate.decide(call.id, 'approve', { by: 'ada' });
    await s.gate.decide(step.id, 'approve', { by: 'ada' });
    expect((await s.gate.resume()).map((a) => a.id)).toEqual([call.id]);
    expect(await s.gate.invokeApproved(s.host, call.id)).toMatchObject({ ok: true });
    expect(s.host.calls).toHaveLength(1);
    expect((await s.store.listApprovals({ workflowRunId: 'run-3' })).map((a) => a.status)).toEqual(['approved']);
  });
});
