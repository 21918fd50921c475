/**
 * The Workflows API on a host (registry, store, invoke): approvals go into
 * the store's approval records, once per step even across a crash, and are
 * decided through the same gate as tool calls' approvals.
 */
import { MemoryStore, Registry, type InvokeResult, type Store, type WorkflowEvent } from '@corral/core';
import { Workflows } from '@corral/workflow';
import { describe, expect, it } from 'vitest';

const WORKFLOW = {
  name: 'ask',
  steps: [
    { id: 'first', approval: { prompt: 'Go on?' } },
    { id: 'then', approval: { prompt: 'Really?' }, depends_on: ['first'] },
  ],
};

function runtime(store: Store) {
  return {
    registry: new Registry(),
    store,
    invoke: async (): Promise<InvokeResult> => {
      throw new Error('no tools here');
    },
  };
}

describe('Workflows on a host', () => {
  it('asks for each approval once, even when the process dies between the record and the journal', async () => {
    const store = new MemoryStore();
    // The first step_waiting append fails as a crash would leave it: the approval record exists, the journal does not say so.
    let crashed = false;
    const crashing = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'appendWorkflowEvent')
          return async (e: WorkflowEvent) => {
            if (e.kind === 'step_waiting' && !crashed) {
              crashed = true;
              throw new Error('killed');
            }
            return target.appendWorkflowEvent(e);
          };
        const v = Reflect.get(target, key, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Store;
    await expect(
      new Workflows(runtime(crashing)).run(new Workflows(runtime(store)).validate(WORKFLOW), {}, { runId: 'r1' }),
    ).rejects.toThrow(/killed/);
    expect(await store.listApprovals({ workflowRunId: 'r1' })).toHaveLength(1);

    const workflows = new Workflows(runtime(store), { by: 'engine' });
    const waiting = await workflows.resume('r1');
    expect(waiting.status).toBe('waiting');
    expect(waiting.pending?.map((p) => p.step)).toEqual(['first']);
    expect(await store.listApprovals({ workflowRunId: 'r1' })).toHaveLength(1);

    const { approval, result } = await workflows.approve('r1', 'first', { by: 'alice', comment: 'fine' });
    expect(approval).toMatchObject({ status: 'approved', decided_by: 'alice', comment: 'fine', workflow_step: 'first' });
    expect(result?.status).toBe('waiting');
    expect(result?.pending?.map((p) => p.step)).toEqual(['then']);
    const { result: end } = await workflows.approve('r1', 'then', { reject: true, by: 'bob' });
    expect(end?.status).toBe('failed');
    // Both decisions in the audit trail, with the run.
    const audit = await store.listAudit({});
    expect(
      audit.filter((e) => e.action === 'approve' || e.action === 'reject').map((e) => [e.action, e.actor, e.detail.workflow_run_id]),
    ).toEqual([
      ['reject', 'bob', 'r1'],
      ['approve', 'alice', 'r1'],
    ]);
    expect(audit.filter((e) => e.action === 'approval_requested')).toHaveLength(2);
  });

  it('refuses a step that waits for nothing, naming the ones that do, and needs a store', async () => {
    const store = new MemoryStore();
    const workflows = new Workflows(runtime(store));
    await workflows.run(workflows.validate(WORKFLOW), {}, { runId: 'r2' });
    await expect(workflows.approve('r2', 'then')).rejects.toThrow(
      /Step 'then' of workflow run r2 waits for no approval \(waiting: first\)/,
    );
    await expect(workflows.status('nope')).rejects.toThrow(/There is no workflow run 'nope'/);
    expect(() => new Workflows({ ...runtime(store), store: undefined })).toThrow(/Workflows need a snapshot store/);
  });
});
