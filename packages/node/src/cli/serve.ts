/** `corral serve`: the HTTP API (server/http.ts) until SIGTERM or SIGINT, then a graceful shutdown. */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { absoluteAsGiven } from '../folders.js';
import type { HttpServerOptions } from '../server/http.js';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, parse, type Cli, toolDirsFlag } from './shared.js';

export const help = `corral serve [options]

Serve Corral's tools over HTTP until SIGTERM or SIGINT:
  POST /execute {tool, input, mounts?, timeout_ms?}
                                run a tool; answers the result envelope
  POST /execute/NAME {input, mounts?, timeout_ms?}
                                the same, one typed operation per tool
  GET  /approvals, /approvals/ID
                                calls waiting for approval; one, with its result once run
  POST /approvals/ID {decision: approve|reject, comment?, scope?}
                                decide one (the approver token only)
  GET  /workflows, POST /workflows/NAME/runs {inputs?}
                                the workflows of --workflows folders; run one
  GET  /workflows/runs/ID, POST /workflows/runs/ID/resume
                                a run's status; take it up again
  GET  /tools, /openapi.json, /healthz, /metrics
  /mcp                          MCP over Streamable HTTP (with --mcp)
Every call goes through the policy (corral policy): what it refuses is 403; a call
that waits for approval longer than --approval-wait is answered 202 with the
approval's id, and runs once approved (also after a restart). Every call is
recorded in the snapshot store. One JSON log line per request on stderr.
Tools added to or removed from a --tools DIR while the server runs are picked up.

  --host HOST           address to listen on (default 127.0.0.1); an address beyond
                        loopback needs a token
  --port PORT           default 8787; 0 picks a free port (the URL is printed)
  --token-file FILE     require "Authorization: Bearer TOKEN" on every endpoint but
                        /healthz, with TOKEN read from FILE (default: $CORRAL_TOKEN)
  --approver-token-file FILE
                        a second token, read from FILE (default: $CORRAL_APPROVER_TOKEN),
                        the only one that can decide approvals (POST /approvals/ID);
                        it must differ from the API token, which the agent holds.
                        Without it, decide with corral approve ID
  --policy FILE         the policy (default: $CORRAL_POLICY, else
                        $XDG_CONFIG_HOME/corral/policy.yaml, else ~/.config/corral/policy.yaml)
  --approval-wait MS    how long POST /execute holds a call that waits for approval
                        before answering 202 (default 10000; a client's "Prefer: wait=N"
                        or "Prefer: respond-async" may shorten it)
  --tools DIR           also serve the tools in DIR, and watch it (repeatable)
  --workflows DIR       serve each workflow file (*.yaml, *.yml, *.json) in DIR, checked
                        against the tools at start; a bad one is reported and skipped
                        (repeatable). A workflow's inputs come from the caller: every tool
                        call of its steps goes through the policy as the caller's own
                        would, and a step approval decided over HTTP or with corral
                        approve continues the run here, as that caller
  --no-bundled          do not serve the bundled tools
  --store PATH          record calls in this SQLite file (default: $CORRAL_STORE, else
                        $XDG_DATA_HOME/corral/snapshots.db, else ~/.local/share/corral/snapshots.db)
  --no-store            record no calls; approvals and the audit trail are then kept
                        in memory until the server stops (corral approve cannot reach them)
  --store-max-mb MB     cap the store's size: past it the oldest records go, archived
                        (exported) ones first (default: $CORRAL_STORE_MAX_MB, else no cap)
  --max-body-mb N       largest request body, in MiB (default 4)
  --concurrency N       most /execute calls in flight; one more gets 503 (default 256)
  --workers N           sandbox workers (default: one per core)
  --shutdown-timeout MS on SIGTERM, how long calls in flight may finish (default 30000);
                        a second signal stops them at once
  --allow-host NAME     also accept this Host header (repeatable; a loopback server
                        accepts only localhost, 127.0.0.1 and [::1] by default)
  --quiet               no request log
  --mcp                 also serve MCP (Streamable HTTP) at /mcp; a tool's mounts bind
                        inside the client's MCP roots, as with \`corral mcp\` (and each
                        --workflows workflow is a tool workflow-NAME)

Exit status: 0 after a graceful shutdown, 1 if the server failed, 2 for a misused command.`;

export async function command(args: string[], { print, fail }: Cli): Promise<number> {
  const { values } = parse(
    args,
    {
      host: { type: 'string' },
      port: { type: 'string' },
      'token-file': { type: 'string' },
      tools: { type: 'string', multiple: true },
      workflows: { type: 'string', multiple: true },
      'no-bundled': { type: 'boolean' },
      store: { type: 'string' },
      'no-store': { type: 'boolean' },
      'store-max-mb': { type: 'string' },
      'max-body-mb': { type: 'string' },
      concurrency: { type: 'string' },
      workers: { type: 'string' },
      'shutdown-timeout': { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      quiet: { type: 'boolean' },
      mcp: { type: 'boolean' },
      'approver-token-file': { type: 'string' },
      policy: { type: 'string' },
      'approval-wait': { type: 'string' },
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
  const port = integerFlag('--port', values.port, 0, 65535);
  const concurrency = integerFlag('--concurrency', values.concurrency, 1, 1_000_000);
  const workers = integerFlag('--workers', values.workers, 1, 1024);
  const shutdownTimeoutMs = integerFlag('--shutdown-timeout', values['shutdown-timeout'], 0, 24 * 3600 * 1000);
  const approvalWaitMs = integerFlag('--approval-wait', values['approval-wait'], 0, 10 * 60_000);
  let maxBodyBytes: number | undefined;
  if (values['max-body-mb'] !== undefined) {
    const mb = Number(values['max-body-mb']);
    if (!(mb > 0 && mb <= 1024)) throw new UsageError(`bad --max-body-mb ${values['max-body-mb']}: expected MiB from 0 to 1024, e.g. 4.`);
    maxBodyBytes = Math.max(1, Math.floor(mb * 2 ** 20));
  }
  const token = readToken('--token-file', values['token-file'], 'CORRAL_TOKEN', fail);
  const approverToken = readToken('--approver-token-file', values['approver-token-file'], 'CORRAL_APPROVER_TOKEN', fail);

  const { startHttpServer, checkHttpServerOptions, DEFAULT_HTTP_CONCURRENCY, writeLogLine } = await import('../server/http.js');
  const options: HttpServerOptions = {
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(approverToken !== undefined ? { approverToken } : {}),
    ...(approvalWaitMs !== undefined ? { approvalWaitMs } : {}),
    ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(shutdownTimeoutMs !== undefined ? { shutdownTimeoutMs } : {}),
    ...(values['allow-host'] ? { allowedHosts: values['allow-host'] } : {}),
    ...(values.quiet ? { log: false as const } : {}),
  };
  // Before any worker starts: a server that would be unsafe is refused at once.
  try {
    await checkHttpServerOptions(options);
  } catch (err) {
    if (CorralError.is(err, ErrorCodes.INPUT_VALIDATION)) throw new UsageError(err.message);
    throw err;
  }

  const [{ Corral }, { watchToolFolders }] = await Promise.all([import('../corral.js'), import('../tool-watch.js')]);
  const store = values['no-store'] ? false : values.store;
  // The --tools folders are loaded by the watcher, so start-up and later changes take one path.
  const corral = await Corral.create({
    toolDirs: [],
    bundled: !values['no-bundled'],
    ...(workers !== undefined ? { size: workers } : {}),
    // The server bounds calls in flight itself; the pool's queue must not refuse them first.
    maxQueue: Math.max(1000, concurrency ?? DEFAULT_HTTP_CONCURRENCY),
    ...(store !== undefined ? { store } : {}),
    ...(storeMaxBytes !== undefined ? { storeMaxBytes } : {}),
    onStoreProgress: (message) => writeLogLine({ time: new Date().toISOString(), event: 'notice', message }),
  });
  // Diagnostics share the request log's shape: one JSON object per line on stderr.
  const log = (message: string) => writeLogLine({ time: new Date().toISOString(), event: 'notice', message });
  for (const err of corral.loadErrors) log(`skipped: ${err.message} (${err.code})`);

  // One gate for every caller, HTTP and MCP alike: approvals and the audit trail go to the Corral's store,
  // where corral approve and corral audit find them. With --no-store they live in memory until the server stops.
  const { openServerGate } = await import('../server-gate.js');
  if (!corral.store)
    log(
      '--no-store: approvals and the audit trail are kept in memory until the server stops; corral approve and corral audit cannot see them (decide with POST /approvals/ID and --approver-token-file).',
    );
  // The --tools folders are never mountable: a tool that could write there could replace another tool and get its grants.
  const gate = openServerGate(corral.store, {
    ...(values.policy !== undefined ? { policyPath: absoluteAsGiven(values.policy) } : {}),
    protectedPaths: toolDirs.map((dir) => resolve(dir)),
  });
  try {
    const policy = await gate.policy.load();
    const listed = Object.keys(policy.tools ?? {}).length;
    // What the server will enforce, unless --quiet (a broken policy is said either way).
    if (!values.quiet)
      log(
        `policy ${gate.policy.location}: ${listed} tool${listed === 1 ? '' : 's'} listed, unlisted tools ${policy.unlisted_tools ?? 'allow'}`,
      );
  } catch (err) {
    // Not fatal: the gate refuses every call until the file is fixed, and sees the fix without a restart.
    log(`every call is refused until the policy is fixed: ${err instanceof Error ? err.message : String(err)}`);
  }

  // The first load is the start-up set (the "serving N tools" line counts it), not a change.
  let started = false;
  const watcher = watchToolFolders(corral.registry, toolDirs, {
    log,
    onChange: ({ added, removed }) => {
      if (!started) return;
      const refs = (tools: typeof added) => tools.map((t) => `${t.spec.name}@${t.spec.version}`);
      writeLogLine({ time: new Date().toISOString(), event: 'tools_changed', added: refs(added), removed: refs(removed) });
      void mcp?.toolsChanged();
    },
  });
  await watcher.reload();
  started = true;

  // Workflows are checked against the tools loaded now; HTTP and MCP share them (and their watch of waiting runs).
  const workflows = await serveWorkflows(corral, gate, workflowDirs, log);
  // The server checks Host itself (loopback) or requires a token (beyond), so the MCP handler need not.
  const mcp = values.mcp
    ? (await import('../server/mcp-http.js')).createMcpHttpHandler(corral, {
        gate,
        allowedHosts: false,
        ...(maxBodyBytes ? { maxBodyBytes } : {}),
        workflows,
        log,
      })
    : undefined;

  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer(corral, { ...options, gate, workflows, ...(mcp ? { mcp } : {}) });
  } catch (err) {
    watcher.close();
    await mcp?.close();
    await corral.close();
    const code = (err as NodeJS.ErrnoException).code;
    const why: Record<string, string> = {
      EADDRINUSE: 'the port is in use (another corral serve?); pick another with --port, or --port 0 for any free one',
      EACCES: 'not allowed to listen there (ports below 1024 need privileges); pick another with --port',
      EADDRNOTAVAIL: 'no such address on this machine; check --host',
    };
    if (code !== undefined && Object.hasOwn(why, code)) {
      fail(`cannot listen on ${values.host ?? '127.0.0.1'}:${port ?? 8787}: ${why[code]} (${code}).`);
      return EXIT_TOOL_FAILED;
    }
    throw err;
  }
  // Workers start now rather than on the first call.
  corral.executor.pool.prestart(corral.executor.pool.size);
  const count = corral.registry.list().length;
  const flows = workflows.list().length;
  print(
    `corral: serving ${count} tool${count === 1 ? '' : 's'}${flows > 0 ? ` and ${flows} workflow${flows === 1 ? '' : 's'}` : ''} on ${server.url} (${token ? 'bearer token required' : 'no token'}` +
      `${approverToken ? ', approvals over HTTP with the approver token' : ''})`,
  );

  // The first signal drains; a second one stops the calls still running.
  let signals = 0;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const onSignal = () => {
    if (++signals === 1) stop();
    else server.abortCalls('the server was told to stop twice');
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await stopped;
    watcher.close();
    await server.close();
  } finally {
    await corral.close();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  return EXIT_OK;
}

/**
 * The workflows of `dirs`, over `gate` (the same one every HTTP and MCP call goes through). A bad
 * file is logged as a bad tool folder is, and skipped.
 */
export async function serveWorkflows(
  corral: import('../corral.js').Corral,
  gate: import('@corral/core').PolicyGate,
  dirs: string[],
  log: (message: string) => void,
): Promise<import('@corral/workflow').ServedWorkflows> {
  const [{ ServedWorkflows }, { loadWorkflowFolders }] = await Promise.all([import('@corral/workflow'), import('../workflow-folder.js')]);
  const { loaded, errors } = await loadWorkflowFolders(corral.registry, dirs);
  for (const err of errors) log(`skipped: ${err.message} (${err.code})`);
  for (const { workflow, file } of loaded) log(`workflow ${workflow.name}: ${file}`);
  return new ServedWorkflows({ host: corral, gate, workflows: loaded.map((l) => l.workflow), log });
}

function integerFlag(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new UsageError(`bad ${flag} ${value}: expected a whole number from ${min} to ${max}.`);
  return n;
}

/** A bearer token from its file flag, else its environment variable, else none. */
function readToken(flag: string, file: string | undefined, variable: string, warn: (message: string) => void): string | undefined {
  let token: string;
  if (file !== undefined) {
    try {
      const stat = statSync(file);
      if (!stat.isFile()) throw new UsageError(`${flag} ${file} is not a regular file.`);
      if (stat.size > 4096) throw new UsageError(`${flag} ${file} is larger than 4 KiB; it should hold only the token.`);
      if ((stat.mode & 0o077) !== 0) warn(`warning: ${flag} ${file} can be read by other users (chmod 600 it).`);
      token = readFileSync(file, 'utf8');
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError(`cannot read ${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  } else if (process.env[variable] !== undefined && process.env[variable] !== '') {
    token = process.env[variable]!;
  } else {
    return undefined;
  }
  token = token.trim();
  if (token === '') throw new UsageError(`the token ${file !== undefined ? `in ${file}` : `in ${variable}`} is empty.`);
  return token;
}
