/**
 * An MCP server for one client connection, over any transport: Corral's tools
 * as MCP tools, each call run through the host's invoke pipeline (validated,
 * sandboxed, snapshotted), mounts bound inside the client's roots, and —
 * when the host gives a policy gate, as @corral/node always does — decided
 * by the user's policy (gated-call.ts).
 *
 * Built on the SDK's low-level `Server`, so tool schemas go out as the raw
 * JSON Schemas of the tool specs. One server serves one connection (the SDK's
 * `Protocol` holds one transport): a host with several clients (Streamable
 * HTTP sessions) creates one per client, and tells each when tools change.
 */
import {
  CorralError,
  ErrorCodes,
  onAbort,
  type CallerInfo,
  type InvokeOptions,
  type InvokeResult,
  type Registry,
  type Tool,
} from '@corral/core';
import type { ServedWorkflows, Workflow } from '@corral/workflow';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  LoggingLevelSchema,
  RootsListChangedNotificationSchema,
  SetLevelRequestSchema,
  type CallToolRequest,
  type CallToolResult,
  type LoggingLevel,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import { shown } from './approval-form.js';
import { gatedCall, type CallExtra, type McpGate } from './gated-call.js';
import {
  ROOTS_LIMITS,
  RootsCache,
  bindMounts,
  isInsidePosix,
  resolveMounts,
  type FolderSource,
  type IsInside,
  type ResolveFolder,
  type RootsState,
} from './roots.js';
import { META, errorResult, listedTool, listedTools, toCallToolResult, toMcpTool, withAnySignal } from './tools.js';
import { RUNS_TOOL, callRuns, callWorkflow, runsTool, toWorkflowTool, workflowToolName } from './workflows.js';

/** What the server needs of a Corral host (`Corral` from @corral/node, `BrowserCorral`). */
export interface McpCorral {
  readonly registry: Registry;
  invokeTool(tool: Tool, input: unknown, options?: InvokeOptions): Promise<InvokeResult>;
}

export interface McpServerOptions {
  /** serverInfo sent at initialize. Default `{ name: 'corral', version: '0.1.0' }`. */
  serverInfo?: { name: string; version: string };
  /**
   * Turns a file:// URI (a root, or a folder named in `_meta["corral/mounts"]`)
   * into the canonical path of the existing folder it names: symlinks and `..`
   * resolved, so containment is checked on what a tool would really see.
   * Throws when the URI names no such folder. Host-specific, so supplied by the
   * host (@corral/node's wiring uses fileURLToPath and realpath). Without it,
   * tools that declare mounts are refused; the others run.
   */
  resolveFolder?: ResolveFolder;
  /** What a folder `resolveFolder` returned is as a mount source; needed with it. */
  folderSource?: FolderSource;
  /** Containment on the paths `resolveFolder` returns. Default: POSIX (`/`-separated). */
  isInside?: IsInside;
  /** Where the server's own diagnostics go (never stdout in stdio mode). Default: nowhere. */
  log?: (message: string) => void;
  /** How long a `roots/list` request may take. Default 10 s. */
  rootsTimeoutMs?: number;
  /**
   * The policy gate that decides every call (@corral/core's PolicyGate;
   * @corral/node's wiring always passes one). The folders chosen inside the
   * client's roots are what the call asks for; the gate grants them or not
   * (deny by default), sets env and limits, and may make the call wait for a
   * person's approval. Without a gate, calls run with the folders the roots
   * give and the access the spec declares: for a host that decides itself.
   */
  gate?: McpGate;
  /**
   * Ask the person at the client to approve a call through MCP elicitation
   * (`elicitation/create`, form mode), when the client supports it. Default
   * true. The answer comes from the client: a client that lets the model (or
   * anything automatic) answer would approve calls itself. False: only
   * someone outside MCP (`corral approve`) can approve.
   */
  elicitApprovals?: boolean;
  /**
   * Whether someone outside this connection can decide approvals (`corral
   * approve` on the gate's store). Default true. False (a gate over a store in
   * memory): a call that needs approval and cannot be asked through
   * elicitation is refused at once (`approval_unavailable`) rather than wait
   * for nobody.
   */
  approvalsOutOfBand?: boolean;
  /** How long a call waits for a decision before it fails with `approval_timeout` (the approval stays pending). Default 10 minutes, at most 24 h. */
  approvalTimeoutMs?: number;
  /** The command that approves `id` outside MCP, for messages. Default `corral approve ID`. */
  approveCommand?: (id: string) => string;
  /**
   * Workflows offered as tools (`workflow-NAME`, and `workflow-runs` to follow a run), run through
   * the policy gate for this client (needs `gate`, the same one the ServedWorkflows was made with).
   * A workflow step's approval is asked through elicitation like a call's; decided elsewhere, the
   * ServedWorkflows continues the run.
   */
  workflows?: ServedWorkflows;
}

/** Default of `approvalTimeoutMs`. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60_000;

export interface CorralMcpServer {
  /** The SDK server: `await mcp.server.connect(transport)`. */
  readonly server: Server;
  /**
   * Tell the client the tool list changed (`notifications/tools/list_changed`),
   * once it has initialized; a no-op before that and after the connection closed.
   */
  toolsChanged(): Promise<void>;
  /** The client's roots as this server sees them (asks the client when none are cached). */
  roots(): Promise<RootsState>;
  /**
   * Stop every tool call in flight, now and after (a server shutting down): each is still answered,
   * an isError result E_CANCELLED, where closing the connection would leave the client without one.
   */
  abortCalls(reason?: string): void;
  /**
   * The client closed its side of the connection (stdio: stdin ended) and can no longer answer
   * anything: calls and workflow runs waiting for a person's approval stop waiting and are answered
   * at once (the approval stays pending: E_POLICY_DENIED `client_closed`, a workflow run `waiting`),
   * so the server can exit; calls already running finish.
   */
  clientClosed(): void;
  /** Close the connection. */
  close(): Promise<void>;
}

const INSTRUCTIONS =
  'Each tool runs in a WebAssembly sandbox with no network and no host environment; every call is recorded. ' +
  'A tool that declares mounts (listed in its _meta "corral/declared-mounts") sees a folder from your roots: ' +
  'the first root by default, or the file:// URI given per mount in the call\'s _meta "corral/mounts" ' +
  '(e.g. {"/workspace": "file:///home/me/project/src"}), which must lie inside a root. ' +
  'Failures are isError results whose text starts with a Corral error code (E_INPUT_VALIDATION, E_RESOURCE_EXHAUSTED, …).';

const POLICY_INSTRUCTIONS =
  " The user's Corral policy decides which folders each tool may see (none unless granted): a refused call is an " +
  'isError result E_POLICY_DENIED whose details.reason says why (not_granted, approval_rejected, …). Some tools need ' +
  "the user's approval: the call then waits for it, and the user may be asked through your interface.";

/** An MCP server over `corral`'s registry. Connect it to one transport. */
export function createMcpServer(corral: McpCorral, options: McpServerOptions = {}): CorralMcpServer {
  const log = options.log ?? (() => {});
  const isInside = options.isInside ?? isInsidePosix;
  const rootsTimeoutMs = options.rootsTimeoutMs ?? ROOTS_LIMITS.timeoutMs;
  const { gate } = options;
  const approvalTimeoutMs = options.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  if (!(Number.isFinite(approvalTimeoutMs) && approvalTimeoutMs > 0 && approvalTimeoutMs <= 24 * 3600_000))
    throw new RangeError('approvalTimeoutMs must be more than 0 and at most 24 hours');
  const approveCommand = options.approveCommand ?? ((id: string) => `corral approve ${id}`);
  const { workflows } = options;
  if (workflows && !gate) throw new RangeError('workflows need a gate: every tool call of their steps goes through it');
  const server = new Server(options.serverInfo ?? { name: 'corral', version: '0.1.0' }, {
    // With a gate, `logging`: a call waiting for approval says so in notifications/message.
    capabilities: { tools: { listChanged: true }, ...(gate ? { logging: {} } : {}) },
    instructions: gate ? INSTRUCTIONS + POLICY_INSTRUCTIONS : INSTRUCTIONS,
    // Several changes in one tick (a folder of tools copied in) reach the client as one notice.
    debouncedNotificationMethods: ['notifications/tools/list_changed'],
  });
  // One server serves one connection, so one level: what the client last asked for with logging/setLevel.
  let logLevel: LoggingLevel | undefined;
  if (gate) {
    server.setRequestHandler(SetLevelRequestSchema, async (request) => {
      const parsed = LoggingLevelSchema.safeParse(request.params.level);
      if (parsed.success) logLevel = parsed.data;
      return {};
    });
  }
  const notify = async (extra: CallExtra, level: LoggingLevel, text: string): Promise<void> => {
    const levels = LoggingLevelSchema.options;
    if (logLevel !== undefined && levels.indexOf(level) < levels.indexOf(logLevel)) return;
    await extra.sendNotification({ method: 'notifications/message', params: { level, logger: 'corral', data: text } }).catch(() => {});
  };
  /** The client's name as it introduced itself (untrusted: bounded, escaped), for records and messages. */
  const clientName = () => {
    const name = server.getClientVersion()?.name;
    return typeof name === 'string' && name.trim() !== '' ? shown(name.trim(), 64) : 'unnamed-client';
  };
  const clientCanElicit = () => {
    const elicitation = server.getClientCapabilities()?.elicitation as Record<string, unknown> | undefined;
    if (typeof elicitation !== 'object' || elicitation === null) return false;
    return elicitation.form !== undefined || Object.keys(elicitation).length === 0;
  };
  const rootsCache = new RootsCache(log);
  let initialized = false;
  server.oninitialized = () => {
    initialized = true;
  };

  // Aborted by clientClosed: ends waits for answers the client can no longer give.
  const clientLeft = new AbortController();
  const clientHasRoots = () => server.getClientCapabilities()?.roots !== undefined;
  /**
   * Roots, asked of the client over `ask` (a request tied to the current call, so it reaches the client on
   * that call's stream), given up when `callSignal` aborts or the client closed its side.
   */
  const rootsVia = async (
    ask: (timeoutMs: number, signal: AbortSignal) => Promise<Root[]>,
    callSignal?: AbortSignal,
  ): Promise<RootsState> => {
    if (!clientHasRoots()) return { supported: false, roots: [] };
    try {
      const roots = await rootsCache.get(() => withAnySignal([callSignal, clientLeft.signal], (signal) => ask(rootsTimeoutMs, signal)));
      return { supported: true, roots };
    } catch (err) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `The client did not answer roots/list (${err instanceof Error ? err.message : String(err)}); tools with mounts need its roots`,
        { reason: 'roots_unavailable' },
      );
    }
  };

  server.setNotificationHandler(RootsListChangedNotificationSchema, async () => {
    rootsCache.invalidate();
  });

  const skippedOnce = new Set<string>();
  /** Workflows by tool name, those whose name a tool does not take (tools come first). */
  const workflowTools = (toolNames: Set<string>): Map<string, Workflow> => {
    const out = new Map<string, Workflow>();
    if (!workflows) return out;
    for (const w of workflows.list()) {
      const name = workflowToolName(w.name);
      if (toolNames.has(name) || name === RUNS_TOOL || out.has(name)) {
        if (!skippedOnce.has(`workflow:${name}`)) {
          skippedOnce.add(`workflow:${name}`);
          log(`workflow ${w.name} not offered over MCP: the tool name ${name} is taken`);
        }
        continue;
      }
      out.set(name, w);
    }
    return out;
  };
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = listedTools(corral.registry, (tool, why) => {
      const key = `${tool.spec.name}@${tool.spec.version}+${tool.wasmSha256}`;
      if (skippedOnce.has(key)) return;
      skippedOnce.add(key);
      log(`not offered over MCP: ${tool.spec.name}@${tool.spec.version}: ${why}`);
    });
    const listed = tools.map(toMcpTool);
    const flows = workflowTools(new Set(listed.map((t) => t.name)));
    if (flows.size > 0) {
      listed.push(...[...flows.values()].map(toWorkflowTool));
      if (!listed.some((t) => t.name === RUNS_TOOL)) listed.push(runsTool());
    }
    return { tools: listed };
  });

  /**
   * Who runs a workflow: this client, with its roots resolved as folders (none when it shares none,
   * so its steps get no host folder, as its own calls would not).
   */
  const workflowCaller = async (extra: CallExtra): Promise<CallerInfo> => {
    const state = await rootsVia(async (timeout, signal) => {
      const result = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { timeout, signal });
      return result.roots;
    }, extra.signal);
    const roots: string[] = [];
    if (state.supported && options.resolveFolder) {
      for (const root of state.roots) {
        try {
          roots.push(await options.resolveFolder(root.uri));
        } catch (err) {
          log(`root ${shown(root.uri)} is not a folder that can be mounted: ${shown(err instanceof Error ? err.message : String(err))}`);
        }
      }
    }
    return { kind: 'mcp', id: clientName(), roots };
  };

  // Aborted by abortCalls. A call's signal ends with it, or with the SDK's own (the client cancelled, the connection closed).
  const stopping = new AbortController();
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    // Not the SDK's signal itself: once that one is aborted, the SDK sends the call no answer.
    const call = new AbortController();
    const stop = (from: AbortSignal) => () => call.abort(from.reason);
    // onAbort: one listener on the server-wide signal however many calls are in flight.
    const stopWaiting = [onAbort(extra.signal, stop(extra.signal)), onAbort(stopping.signal, stop(stopping.signal))];
    try {
      return await callTool(request, { ...extra, signal: call.signal });
    } finally {
      for (const s of stopWaiting) s();
    }
  });

  const callTool = async (request: CallToolRequest, extra: CallExtra): Promise<CallToolResult> => {
    const { name } = request.params;
    const tool = listedTool(corral.registry, name);
    if (!tool && workflows && gate && typeof name === 'string' && name.length <= 128) {
      const flows = workflowTools(new Set(listedTools(corral.registry).map((t) => t.spec.name)));
      if (name === RUNS_TOOL && flows.size > 0) return callRuns(workflows, request.params.arguments ?? {}, approveCommand);
      const workflow = flows.get(name);
      if (workflow) {
        let caller: CallerInfo;
        try {
          caller = await workflowCaller(extra);
        } catch (err) {
          if (!CorralError.is(err)) throw err;
          return errorResult(err.toJSON(), {});
        }
        return callWorkflow({
          workflows,
          gate,
          workflow,
          args: request.params.arguments ?? {},
          caller,
          clientName: clientName(),
          extra,
          elicit: options.elicitApprovals !== false && clientCanElicit(),
          outOfBand: options.approvalsOutOfBand !== false,
          approvalTimeoutMs,
          approveCommand,
          clientClosed: clientLeft.signal,
          log,
        });
      }
    }
    // Not finding the tool is a protocol error (the spec's own example); what the tool does is a result.
    if (!tool) throw unknownTool(name);
    const bindContext = {
      meta: request.params._meta as Record<string, unknown> | undefined,
      roots: () =>
        rootsVia(async (timeout, signal) => {
          const result = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { timeout, signal });
          return result.roots;
        }, extra.signal),
      resolveFolder: options.resolveFolder,
      folderSource: options.folderSource,
      isInside,
      log,
    };
    const input = request.params.arguments ?? {};

    if (!gate) {
      let mounts: Awaited<ReturnType<typeof bindMounts>>;
      try {
        mounts = await bindMounts(tool, bindContext);
      } catch (err) {
        if (!CorralError.is(err)) throw err;
        return errorResult(err.toJSON(), { [META.version]: tool.spec.version });
      }
      const result = await corral.invokeTool(tool, input, { mounts, signal: extra.signal });
      return toCallToolResult(result);
    }

    // The roots checks come first, as without a gate; the folders they give are what the call asks the policy for.
    const caller = { kind: 'mcp', id: clientName() };
    let resolved: Awaited<ReturnType<typeof resolveMounts>>;
    try {
      resolved = await resolveMounts(tool, bindContext);
    } catch (err) {
      if (!CorralError.is(err)) throw err;
      // Refused before the gate decided: still a refused call, so it goes in the audit trail.
      const { guest, uri } = err.details;
      const asked = typeof guest === 'string' && typeof uri === 'string' ? { [guest]: uri } : undefined;
      await gate.recordDenial({ tool, caller, ...(asked ? { bindings: asked } : {}) }, err);
      return errorResult(err.toJSON(), { [META.version]: tool.spec.version });
    }
    const bindings: Record<string, string> = {};
    for (const m of resolved.mounts) Object.defineProperty(bindings, m.mount.guest, { value: m.folder, enumerable: true });
    const result = await gatedCall({
      corral,
      gate,
      tool,
      input,
      bindings,
      caller: { ...caller, ...(resolved.roots ? { roots: resolved.roots } : {}) },
      clientName: clientName(),
      extra,
      elicit: options.elicitApprovals !== false && clientCanElicit(),
      outOfBand: options.approvalsOutOfBand !== false,
      approvalTimeoutMs,
      approveCommand,
      clientClosed: clientLeft.signal,
      notify: (level, text) => notify(extra, level, text),
      log,
    });
    return toCallToolResult(result);
  };

  return {
    server,
    async toolsChanged() {
      // The SDK drops its transport when the connection closes.
      if (!initialized || !server.transport) return;
      try {
        await server.sendToolListChanged();
      } catch (err) {
        log(`could not send tools/list_changed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    roots: () =>
      rootsVia(async (timeout, signal) => {
        const result = await server.listRoots(undefined, { timeout, signal });
        return result.roots;
      }),
    abortCalls(reason = 'the server is shutting down') {
      stopping.abort(new Error(reason));
    },
    clientClosed() {
      clientLeft.abort();
    },
    close: () => server.close(),
  };
}

/**
 * The JSON-RPC error for a tool name that is not listed: InvalidParams, with
 * the Corral code in `data`. A plain Error with a `code`, which the SDK sends
 * as is (an McpError would put "MCP error -32602:" into the message twice).
 */
function unknownTool(name: string): Error {
  const shown = JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);
  return Object.assign(new Error(`Unknown tool: ${shown}`), {
    code: ErrorCode.InvalidParams,
    data: { code: ErrorCodes.TOOL_NOT_FOUND },
  });
}
