/**
 * An MCP server for one client connection, over any transport: Corral's tools
 * as MCP tools, each call run through the host's invoke pipeline (validated,
 * sandboxed, snapshotted), mounts bound inside the client's roots.
 *
 * Built on the SDK's low-level `Server`, so tool schemas go out as the raw
 * JSON Schemas of the tool specs. One server serves one connection (the SDK's
 * `Protocol` holds one transport): a host with several clients (Streamable
 * HTTP sessions) creates one per client, and tells each when tools change.
 */
import { CorralError, ErrorCodes, type InvokeOptions, type InvokeResult, type Registry, type Tool } from '@corral/core';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  RootsListChangedNotificationSchema,
  type CallToolResult,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import {
  ROOTS_LIMITS,
  RootsCache,
  bindMounts,
  isInsidePosix,
  type FolderSource,
  type IsInside,
  type ResolveFolder,
  type RootsState,
} from './roots.js';
import { META, errorResult, listedTool, listedTools, toCallToolResult, toMcpTool } from './tools.js';

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
}

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
  /** Close the connection. */
  close(): Promise<void>;
}

const INSTRUCTIONS =
  'Each tool runs in a WebAssembly sandbox with no network and no host environment; every call is recorded. ' +
  'A tool that declares mounts (listed in its _meta "corral/declared-mounts") sees a folder from your roots: ' +
  'the first root by default, or the file:// URI given per mount in the call\'s _meta "corral/mounts" ' +
  '(e.g. {"/workspace": "file:///home/me/project/src"}), which must lie inside a root. ' +
  'Failures are isError results whose text starts with a Corral error code (E_INPUT_VALIDATION, E_RESOURCE_EXHAUSTED, …).';

/** An MCP server over `corral`'s registry. Connect it to one transport. */
export function createMcpServer(corral: McpCorral, options: McpServerOptions = {}): CorralMcpServer {
  const log = options.log ?? (() => {});
  const isInside = options.isInside ?? isInsidePosix;
  const rootsTimeoutMs = options.rootsTimeoutMs ?? ROOTS_LIMITS.timeoutMs;
  const server = new Server(options.serverInfo ?? { name: 'corral', version: '0.1.0' }, {
    capabilities: { tools: { listChanged: true } },
    instructions: INSTRUCTIONS,
    // Several changes in one tick (a folder of tools copied in) reach the client as one notice.
    debouncedNotificationMethods: ['notifications/tools/list_changed'],
  });
  const rootsCache = new RootsCache(log);
  let initialized = false;
  server.oninitialized = () => {
    initialized = true;
  };

  const clientHasRoots = () => server.getClientCapabilities()?.roots !== undefined;
  /** Roots, asked of the client over `ask` (a request tied to the current call, so it reaches the client on that call's stream). */
  const rootsVia = async (ask: (timeoutMs: number) => Promise<Root[]>): Promise<RootsState> => {
    if (!clientHasRoots()) return { supported: false, roots: [] };
    try {
      return { supported: true, roots: await rootsCache.get(() => ask(rootsTimeoutMs)) };
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
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = listedTools(corral.registry, (tool, why) => {
      const key = `${tool.spec.name}@${tool.spec.version}+${tool.wasmSha256}`;
      if (skippedOnce.has(key)) return;
      skippedOnce.add(key);
      log(`not offered over MCP: ${tool.spec.name}@${tool.spec.version}: ${why}`);
    });
    return { tools: tools.map(toMcpTool) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const tool = listedTool(corral.registry, name);
    // Not finding the tool is a protocol error (the spec's own example); what the tool does is a result.
    if (!tool) throw unknownTool(name);
    let mounts: Awaited<ReturnType<typeof bindMounts>>;
    try {
      mounts = await bindMounts(tool, {
        meta: request.params._meta as Record<string, unknown> | undefined,
        roots: () =>
          rootsVia(async (timeout) => {
            const result = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema, { timeout, signal: extra.signal });
            return result.roots;
          }),
        resolveFolder: options.resolveFolder,
        folderSource: options.folderSource,
        isInside,
        log,
      });
    } catch (err) {
      if (!CorralError.is(err)) throw err;
      return errorResult(err.toJSON(), { [META.version]: tool.spec.version });
    }
    const result = await corral.invokeTool(tool, request.params.arguments ?? {}, { mounts, signal: extra.signal });
    return toCallToolResult(result);
  });

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
      rootsVia(async (timeout) => {
        const result = await server.listRoots(undefined, { timeout });
        return result.roots;
      }),
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
