/**
 * `corral mcp`: Corral's tools as an MCP server over stdio. stdout carries
 * the protocol and nothing else; every diagnostic goes to stderr.
 */
import { resolve } from 'node:path';
import type { ApprovalRecord, PolicyGate } from '@corral/core';
import { EXIT_OK, UsageError, parse, type Cli, toolDirsFlag } from './shared.js';
import { forTerminal } from '../terminal.js';

export const help = `corral mcp [--tools DIR]... [--workflows DIR]... [--no-bundled] [--store PATH | --no-store]
           [--no-watch] [--policy FILE] [--no-elicit-approvals] [--approval-timeout MS]

Serve the tools as an MCP server over stdio (for an MCP client to start, e.g.
{ "command": "npx", "args": ["corral", "mcp"] }). Every call runs in a sandbox
worker and is recorded in the snapshot store. A tool that declares mounts sees
a folder inside the client's MCP roots: the first root, or the one named in
the call's _meta "corral/mounts"; clients without roots can run only tools
without mounts. The policy (corral policy) decides every call: a folder it
does not grant is refused (E_POLICY_DENIED), and a tool with 'approval:
required' waits for a person — asked in the client when it supports MCP
elicitation, else through 'corral approve ID'. Tools added to or removed from
a --tools DIR while the server runs are picked up, and the client is told
(notifications/tools/list_changed). Diagnostics go to stderr; stdout carries
only the protocol.
  --tools DIR     also serve the tools in DIR, and watch it (repeatable)
  --workflows DIR offer each workflow file (*.yaml, *.yml, *.json) in DIR as a tool
                  workflow-NAME (its inputs as arguments, the run as the result), plus
                  workflow-runs to follow a run (repeatable). Every tool call of its
                  steps goes through the policy as the client's own would, on folders
                  inside its roots; a step approval is asked like a call's, and one
                  decided with corral approve continues the run here
  --no-bundled    leave out the bundled tools
  --no-watch      read the --tools folders once, at start
  --store PATH    record the calls' snapshots, approvals and audit trail in this
                  SQLite file (default: $CORRAL_STORE, else
                  $XDG_DATA_HOME/corral/snapshots.db, else ~/.local/share/corral/snapshots.db)
  --no-store      record no snapshots; approvals and the audit trail are kept in
                  memory only, so 'corral approve' cannot reach them and a call
                  that needs approval runs only if the client approves it
  --store-max-mb MB
                  cap the store's size: past it the oldest records go, archived
                  (exported) ones first (default: $CORRAL_STORE_MAX_MB, else no cap)
  --policy FILE   the policy (default: $CORRAL_POLICY, else
                  $XDG_CONFIG_HOME/corral/policy.yaml, else ~/.config/corral/policy.yaml)
  --no-elicit-approvals
                  never ask the client to approve: only 'corral approve' can (use
                  this with a client that could answer elicitations by itself)
  --approval-timeout MS
                  how long a call waits for approval (default 600000, 10 minutes);
                  then it fails with E_POLICY_DENIED (approval_timeout) and the
                  approval stays pending: once approved, the same call runs`;

export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values } = parse(
    args,
    {
      tools: { type: 'string', multiple: true },
      workflows: { type: 'string', multiple: true },
      'no-bundled': { type: 'boolean' },
      'no-watch': { type: 'boolean' },
      store: { type: 'string' },
      'no-store': { type: 'boolean' },
      'store-max-mb': { type: 'string' },
      policy: { type: 'string' },
      'no-elicit-approvals': { type: 'boolean' },
      'approval-timeout': { type: 'string' },
    },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  const toolDirs = toolDirsFlag(values.tools);
  const workflowDirs = toolDirsFlag(values.workflows, '--workflows');
  if (values.store !== undefined && values['no-store']) throw new UsageError('give --store PATH or --no-store, not both.');
  if (values['store-max-mb'] !== undefined && values['no-store']) throw new UsageError('--store-max-mb caps a store; --no-store has none.');
  const { storeCapFlag } = await import('./store.js');
  const storeMaxBytes = storeCapFlag(values['store-max-mb']);
  let approvalTimeoutMs: number | undefined;
  if (values['approval-timeout'] !== undefined) {
    const ms = Number(values['approval-timeout']);
    if (!/^\d+$/.test(values['approval-timeout']) || ms < 1 || ms > 24 * 3600_000)
      throw new UsageError(`bad --approval-timeout ${values['approval-timeout']}: expected milliseconds from 1 to 86400000.`);
    approvalTimeoutMs = ms;
  }

  const log = (message: string) => void io.stderr.write(`corral mcp: ${forTerminal(message, { oneLine: true })}\n`);
  const [{ Corral }, { createMcpServer }, { LineStdioTransport }, { watchToolFolders }, folders, { openServerGate }] = await Promise.all([
    import('../corral.js'),
    import('@corral/mcp'),
    import('../server/mcp-stdio.js'),
    import('../tool-watch.js'),
    import('../mcp-folders.js'),
    import('../server-gate.js'),
  ]);
  const store = values['no-store'] ? false : values.store;
  // The --tools folders are loaded by the watcher, so start-up and later changes take one path.
  const corral = await Corral.create({
    bundled: !values['no-bundled'],
    toolDirs: [],
    ...(store !== undefined ? { store } : {}),
    ...(storeMaxBytes !== undefined ? { storeMaxBytes } : {}),
    onStoreProgress: log,
  });
  for (const err of corral.loadErrors) log(`skipped: ${err.message} (${err.code})`);

  // The --tools folders are never mountable: a tool that could write there could replace another tool and get its grants.
  const gate = openServerGate(corral.store, {
    ...(values.policy !== undefined ? { policyPath: values.policy } : {}),
    protectedPaths: toolDirs.map((dir) => resolve(dir)),
    log,
  });
  log(`policy: ${gate.policy.location}${values['no-elicit-approvals'] ? ' (approvals only through corral approve)' : ''}`);
  await reportApproved(gate, log);

  let mcp: ReturnType<typeof createMcpServer> | undefined;
  const dirs = toolDirs;
  const watcher = watchToolFolders(corral.registry, dirs, {
    log,
    onChange: ({ added, removed }) => {
      const names = (tools: typeof added) => tools.map((t) => `${t.spec.name}@${t.spec.version}`).join(', ');
      if (added.length > 0) log(`tools added: ${names(added)}`);
      if (removed.length > 0) log(`tools removed: ${names(removed)}`);
      void mcp?.toolsChanged();
    },
  });
  try {
    await watcher.reload();
  } finally {
    if (values['no-watch']) watcher.close();
  }
  // Checked against the tools loaded now; runs left waiting by an earlier server go on once decided.
  const { serveWorkflows } = await import('./serve.js');
  const workflows = workflowDirs.length > 0 ? await serveWorkflows(corral, gate, workflowDirs, log) : undefined;

  mcp = createMcpServer(corral, {
    serverInfo: { name: 'corral', version: '0.1.0' },
    resolveFolder: folders.resolveFolderUri,
    folderSource: folders.hostFolderSource,
    isInside: folders.isInsideFolder,
    log,
    ...folders.mcpGateOptions(gate),
    ...(values['no-elicit-approvals'] ? { elicitApprovals: false } : {}),
    ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
    ...(workflows ? { workflows } : {}),
  });
  await workflows?.start();

  // Not the SDK's StdioServerTransport: a message over its limit closed the session, silently.
  const transport = new LineStdioTransport(io.stdin as NodeJS.ReadStream, io.stdout as NodeJS.WriteStream, { log });
  const server = mcp;
  await server.server.connect(transport);
  log(`serving ${corral.registry.list().length} tool(s) over stdio`);

  // Serve until the client closes stdin and every request it sent is answered (a client that sends its
  // last call and closes stdin still gets the answer), or until the process is told to stop.
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      io.stdin.off('end', ended);
      io.stdin.off('close', ended);
      server.server.onclose = undefined;
      done();
    };
    const ended = () => {
      io.stdin.off('end', ended);
      io.stdin.off('close', ended);
      // Nobody is left to answer an approval form: calls waiting for one are answered now, not in 10 minutes.
      server.clientClosed();
      void transport.idle().then(stop);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    io.stdin.once('end', ended);
    io.stdin.once('close', ended);
    server.server.onclose = stop;
  });
  watcher.close();
  // Runs in flight stop as a crash would: they stay running (POST /workflows/runs/ID/resume on corral serve continues them).
  workflows?.close();
  workflows?.abort('the MCP server is stopping');
  try {
    await server.close();
  } finally {
    await corral.close();
  }
  return EXIT_OK;
}

/**
 * At start: approvals given to MCP calls that never ran (the server stopped
 * while they waited, or their wait timed out). They are not run here, with no
 * client to hand the result to: each runs when a client makes the same call
 * again (same tool, arguments and folders), or is withdrawn with corral
 * approve --revoke ID.
 */
async function reportApproved(gate: PolicyGate, log: (message: string) => void): Promise<void> {
  let approved: ApprovalRecord[];
  try {
    approved = (await gate.resume()).filter((a) => a.caller.kind === 'mcp');
  } catch (err) {
    log(`could not list approved calls: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  if (approved.length === 0) return;
  const n = approved.length;
  const shown = approved
    .slice(0, 5)
    .map((a) => `${a.id} (${a.tool}@${a.version}, asked by ${a.requested_by})`)
    .join(', ');
  log(
    `${n} approved MCP call${n === 1 ? ' has' : 's have'} not run: ${shown}${n > 5 ? ', …' : ''}. ` +
      'Each runs when a client makes the same call again (same tool, arguments and folders); ' +
      'withdraw one with corral approve --revoke ID.',
  );
}
