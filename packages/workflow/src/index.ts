/**
 * @corral/workflow — declarative workflows over Corral tools, for every host:
 * the file format and its validation, the expression language, the durable
 * engine, and reliability-aware routing. A host (Node, a browser) supplies
 * the journal (its Store), tool invocation and approvals.
 */
export type {
  Workflow,
  WorkflowStep,
  ToolStep,
  ApprovalStep,
  WorkflowInput,
  WorkflowInputType,
  WorkflowMount,
  OnErrorAction,
  OnErrorActionName,
  RouteOptions,
} from './types.js';
export { isApprovalStep } from './types.js';
export { workflowSchema, MAX_STEPS, MAX_ALTERNATIVES, type WorkflowProblem } from './schema.js';
export {
  loadWorkflow,
  validateWorkflow,
  problemText,
  MAX_WORKFLOW_BYTES,
  MAX_WORKFLOW_DEPTH,
  type LoadOptions,
  type ValidateOptions,
} from './load.js';
export {
  parseExpression,
  evaluate,
  truthy,
  references,
  ExpressionError,
  MAX_EXPRESSION_LENGTH,
  MAX_EXPRESSION_DEPTH,
  type Expr,
  type Scope,
  type Reference,
} from './expression.js';
export { parseTemplate, renderTemplate, type Template } from './template.js';
export {
  runWorkflow,
  resumeWorkflow,
  resolveInputs,
  canonicalJson,
  NOT_THE_TOOLS_FAULT,
  type ResumeOptions,
  MAX_BACKOFF_MS,
  type WorkflowHost,
  type StepInvokeOptions,
  type ApprovalRequest,
  type ApprovalState,
  type RunOptions,
  type StepStatus,
  type StepResult,
  type PendingApproval,
  type WorkflowResult,
} from './engine.js';
export {
  Reliability,
  incompleteBeta,
  betaQuantile,
  logGamma,
  sampleBeta,
  seededRandom,
  type ToolOutcome,
  type ToolBelief,
  type RouteChoice,
  type ReliabilityOptions,
} from './reliability.js';
export {
  Workflows,
  toolStats,
  remoteRunKind,
  type ResumeCallOptions,
  type WorkflowRuntime,
  type WorkflowsOptions,
  type RunCallOptions,
  type WorkflowListFilter,
  type WorkflowRunSummary,
  type ToolStats,
  type StatsOptions,
} from './workflows.js';
export {
  ServedWorkflows,
  gatedRuntime,
  workflowInputSchema,
  workflowResultSchema,
  checkRemoteInputs,
  MAX_REMOTE_INPUT_DEPTH,
  MAX_REMOTE_INPUT_BYTES,
  type WorkflowGate,
  type ServedWorkflowsOptions,
  type ServedWorkflowsListener,
} from './served.js';
