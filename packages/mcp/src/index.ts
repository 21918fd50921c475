/**
 * @corral/mcp — Corral's tools over the Model Context Protocol, with the
 * official SDK's low-level `Server`. Host-agnostic (no node:*, no DOM): a
 * host connects a transport (stdio, Streamable HTTP) and supplies how file://
 * URIs become folders. @corral/node's `corral mcp` and its HTTP handler do.
 *
 * Everything exported here is public API.
 */
export { createMcpServer, type CorralMcpServer, type McpCorral, type McpServerOptions } from './server.js';
export {
  META,
  listedTools,
  listedTool,
  mcpIncompatibility,
  toMcpTool,
  toCallToolResult,
  errorResult,
} from './tools.js';
export {
  bindMounts,
  mountBinding,
  isInsidePosix,
  ROOTS_LIMITS,
  type ResolveFolder,
  type FolderSource,
  type IsInside,
  type RootsState,
  type BindContext,
} from './roots.js';
