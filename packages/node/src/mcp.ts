/**
 * @corral/node/mcp — Corral's MCP server wired for Node: the Streamable HTTP
 * handler (`corral serve --mcp` mounts it), and what @corral/mcp leaves to a
 * host: file:// URIs resolved to real folders, containment with this
 * platform's paths, the policy gate in front of every call. A subpath, so `@corral/node` alone does not load the MCP
 * SDK. `corral mcp` (stdio) is the CLI's.
 */
export {
  createMcpHttpHandler,
  MCP_HTTP_DEFAULTS,
  type McpHttpHandler,
  type McpHttpOptions,
  type McpHttpCorral,
} from './server/mcp-http.js';
export { resolveFolderUri, isInsideFolder, hostFolderSource, mcpGateOptions } from './mcp-folders.js';
export { openServerGate, approveCommandFor, approvalsReachable, type OpenServerGateOptions } from './server-gate.js';
export { watchToolFolders, type ToolWatcher, type ToolWatchOptions, type ToolChange } from './tool-watch.js';
