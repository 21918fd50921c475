/** `corral audit [--json] [--since WHEN] [--tool NAME] [--action ACTION]`: who changed the policy, what it refused, who approved what. */
import type { AuditAction, AuditFilter } from '@corral/core';
import { AUDIT_ACTIONS } from '@corral/core/store-kit';
import { defaultStorePath } from '../store-sqlite.js';
import { auditSummary, table, when } from './policy-shared.js';
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';
import { parseSince } from './snapshots.js';
import { openExisting } from './store.js';

export const help = `corral audit [--since WHEN] [--tool NAME] [--action ACTION] [--limit N] [--json]

The audit trail, newest first: every grant and revocation of the policy,
every call it refused, every approval asked for, given, refused or revoked,
with who and when.
  --since WHEN     a duration back from now (2h, 7d) or a date (2026-11-29T09:00Z)
  --tool NAME      only this tool's
  --action ACTION  ${AUDIT_ACTIONS.join(', ')}
  --limit N        at most N (default 100; 0 for all)
  --json           as JSON
  --store PATH     the snapshot store (default as for corral run)`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      since: { type: 'string' },
      tool: { type: 'string' },
      action: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      store: { type: 'string' },
    },
    true,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0) throw new UsageError('audit takes no arguments; filter with --since, --tool, --action.');
  const filter: AuditFilter = {};
  if (values.since !== undefined) filter.since = parseSince(values.since);
  if (values.tool !== undefined) filter.tool = values.tool;
  if (values.action !== undefined) {
    if (!AUDIT_ACTIONS.includes(values.action as AuditAction))
      throw new UsageError(`bad --action ${values.action}: ${AUDIT_ACTIONS.join(', ')}.`);
    filter.action = values.action as AuditAction;
  }
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 0) throw new UsageError(`bad --limit ${values.limit}: a whole number (0 for all).`);
  if (limit > 0) filter.limit = limit;
  const store = await openExisting(values.store);
  const events = store ? await store.listAudit(filter) : [];
  await store?.close();
  if (values.json) return (print(JSON.stringify(events, null, 2)), EXIT_OK);
  if (events.length === 0)
    return (print(store ? 'No audit events match.' : `No snapshot store at ${values.store ?? defaultStorePath()} yet.`), EXIT_OK);
  print(
    table(
      ['TIME (UTC)', 'ACTION', 'WHO', 'TOOL', 'WHAT'],
      events.map((e) => [when(e.time_ns), e.action, e.actor, e.tool ?? '', auditSummary(e)]),
    ),
  );
  return EXIT_OK;
}
