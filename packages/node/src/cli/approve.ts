/** `corral approve ID [--reject] [--comment TEXT] [--scope once|folder|tool]`, and `--revoke ID`. */
import type { ApprovalScope } from '@corral/core';
import { remoteRunKind } from '@corral/workflow';
import { actor, approvalSubject, foldersText, gateFor, openStore } from './policy-shared.js';
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';

export const help = `corral approve ID [--scope once|folder|tool] [--comment TEXT]
corral approve ID --reject [--comment TEXT]
corral approve --revoke ID [--comment TEXT]

Decide a call that waits for approval ('corral approvals' lists them). A
server waiting for it goes on at once; one restarted since runs it when it
resumes. The decision is recorded in the audit trail. A workflow step's
approval is decided the same way (scope once only): the run goes on when
its workflow resumes it; nothing runs here.
  --scope once     this call only (default)
          folder   also later calls of this tool version that see only folders
                   inside the ones this call asked for
          tool     also every later call of this tool version the policy allows
                   (the policy's approval_scope caps how far an approval may reach)
  --reject         refuse the call; it fails with E_POLICY_DENIED (approval_rejected)
  --revoke ID      withdraw an approval: an approved call not yet run never runs,
                   a remembered one covers no more calls
  --comment TEXT   kept with the decision, shown to the caller on rejection
  --by NAME        who decides (default: the OS user)
  --store PATH     the snapshot store the server uses (default as for corral run)
  --json           print the approval as JSON`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      reject: { type: 'boolean' },
      revoke: { type: 'string' },
      comment: { type: 'string' },
      scope: { type: 'string' },
      by: { type: 'string' },
      store: { type: 'string' },
      policy: { type: 'string' },
      json: { type: 'boolean' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  const by = actor(values.by);
  if (values.comment !== undefined && values.comment.length > 4096) throw new UsageError('--comment is limited to 4096 characters.');
  const scope = values.scope as ApprovalScope | undefined;
  if (scope !== undefined && !['once', 'folder', 'tool'].includes(scope))
    throw new UsageError(`bad --scope ${scope}: once, folder or tool.`);
  if (values.revoke !== undefined) {
    if (positionals.length > 0 || values.reject || scope) throw new UsageError('--revoke ID takes no other ID, --reject or --scope.');
  } else {
    if (positionals.length !== 1) throw new UsageError('name one approval ID (corral approvals lists them).');
    if (values.reject && scope) throw new UsageError('--scope is for approving; a rejection has none.');
  }
  const store = await openStore(values.store);
  try {
    const gate = gateFor(store, values.policy);
    const comment = values.comment !== undefined ? { comment: values.comment } : {};
    const a =
      values.revoke !== undefined
        ? await gate.revokeApproval(values.revoke, { by, ...comment })
        : await gate.decide(positionals[0]!, values.reject ? 'reject' : 'approve', { by, ...comment, ...(scope ? { scope } : {}) });
    if (values.json) print(JSON.stringify(a, null, 2));
    else if (a.workflow_run_id !== null)
      print(
        `${a.status === 'approved' ? 'Approved' : a.status === 'rejected' ? 'Rejected' : 'Revoked'} ${a.id}: ${approvalSubject(a)}, asked by ${a.requested_by}.` +
          (a.status === 'revoked'
            ? ''
            : remoteRunKind(a.workflow_run_id) !== null
              ? ' The run was started through a server for a remote caller: that server continues it, through its policy.'
              : ` The run goes on when its workflow resumes it (corral workflow resume ${a.workflow_run_id}).`),
      );
    else if (a.status === 'revoked') print(`Revoked ${a.id}: ${a.tool}@${a.version} (${foldersText(a)}).`);
    else if (a.status === 'rejected') print(`Rejected ${a.id}: ${a.tool}@${a.version} asked by ${a.requested_by}.`);
    else
      print(
        `Approved ${a.id} (scope ${a.scope}): ${a.tool}@${a.version} asked by ${a.requested_by}, ${foldersText(a)}.` +
          (a.scope === 'once' ? '' : `\nRemembered until revoked: corral approve --revoke ${a.id}`),
      );
    return EXIT_OK;
  } finally {
    await store.close();
  }
}
