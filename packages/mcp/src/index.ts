/**
 * @corral/mcp — Corral's tools over the Model Context Protocol, with the
 * official SDK's low-level `Server`. Host-agnostic (no node:*, no DOM): a
 * host connects a transport (stdio, Streamable HTTP), supplies how file://
 * URIs become folders and, to put the user's policy between the client and
 * the tools, a PolicyGate. @corral/node's `corral mcp` and its HTTP handler do.
 *
 * Everything exported here is public API.
 */
export { createMcpServer, DEFAULT_APPROVAL_TIMEOUT_MS, type CorralMcpServer, type McpCorral, type McpServerOptions } from './server.js';
export type { McpGate } from './gated-call.js';
export {
  WORKFLOW_TOOL_PREFIX,
  RUNS_TOOL,
  workflowToolName,
  toWorkflowTool,
} from './workflows.js';
export {
  approvalForm,
  workflowApprovalForm,
  readApprovalAnswer,
  scopesUpTo,
  APPROVAL_FORM_LIMITS,
  type ApprovalForm,
  type ApprovalAnswer,
} from './approval-form.js';
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
  resolveMounts,
  mountBinding,
  isInsidePosix,
  ROOTS_LIMITS,
  type ResolveFolder,
  type FolderSource,
  type IsInside,
  type RootsState,
  type BindContext,
  type ResolvedMount,
  type ResolvedMounts,
} from './roots.js';
