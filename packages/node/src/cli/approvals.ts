/** `corral approvals [--all] [--json]`: the calls and workflow steps waiting for a person. */
import type { ApprovalRecord } from '@corral/core';
import { defaultStorePath } from '../store-sqlite.js';
import { approvalSubject, foldersText, gateFor, promptText, table, when } from './policy-shared.js';
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';
import { openExisting } from './store.js';

export const help = `corral approvals [--all] [--tool NAME] [--json]

List the calls and workflow steps waiting for approval, newest first;
decide each with 'corral approve ID' (or --reject). A tool call's pending
approval expires after a day. A workflow step's shows its workflow, run,
step and prompt; approving it lets the run go on when it resumes.
  --all          every approval, whatever its status (the newest 200)
  --tool NAME    only this tool's (or this workflow's steps')
  --json         as JSON, with each call's input
  --store PATH   the snapshot store the server uses (default as for corral run)`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      all: { type: 'boolean' },
      tool: { type: 'string' },
      json: { type: 'boolean' },
      store: { type: 'string' },
      policy: { type: 'string' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0) throw new UsageError('approvals takes no arguments.');
  const store = await openExisting(values.store);
  let found: ApprovalRecord[] = [];
  if (store) {
    try {
      const gate = gateFor(store, values.policy);
      found = values.all ? await store.listApprovals({ limit: 200, ...(values.tool ? { tool: values.tool } : {}) }) : await gate.pending();
      if (values.tool && !values.all) found = found.filter((a) => a.tool === values.tool);
    } finally {
      await store.close();
    }
  }
  if (values.json) return (print(JSON.stringify(found, null, 2)), EXIT_OK);
  if (found.length === 0) {
    print(
      store
        ? values.all
          ? 'No approvals.'
          : 'No call waits for approval.'
        : `No snapshot store at ${values.store ?? defaultStorePath()} yet.`,
    );
    return EXIT_OK;
  }
  const header = [
    'ID',
    'REQUESTED (UTC)',
    'TOOL OR WORKFLOW STEP',
    'ASKED BY',
    ...(values.all ? ['STATUS', 'SCOPE'] : ['EXPIRES (UTC)']),
    'FOLDERS OR PROMPT',
  ];
  const rows = found.map((a) => [
    a.id,
    when(a.requested_ns),
    approvalSubject(a),
    a.requested_by,
    ...(values.all ? [a.status, a.scope ?? ''] : [when(a.expires_ns)]),
    a.workflow_run_id === null ? foldersText(a) : promptText(a),
  ]);
  print(table(header, rows));
  return EXIT_OK;
}
