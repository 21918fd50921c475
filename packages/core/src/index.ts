/**
 * @corral/core — host-agnostic: errors, tool contract, registry, invoke pipeline, snapshot model.
 *
 * Everything exported here is public API. Pieces the other Corral packages
 * share but users do not need live on subpaths: `@corral/core/store-kit`
 * (helpers for writing a Store adapter), `@corral/core/errors` and
 * `@corral/core/wasm` (the same names as here, without ajv, for sandbox
 * workers that must start fast).
 */
export {
  ErrorCodes,
  CorralError,
  isCorralErrorJSON,
  type ErrorCode,
  type CorralErrorJSON,
  type ErrorDetails,
  type ErrorDetailsOf,
  type ErrorDetailsByCode,
  type ErrorProblem,
  type ResourceExhaustedDetails,
  type UnexpectedExitDetails,
} from './errors.js';
export type {
  ToolSpec,
  JsonSchema,
  ToolResources,
  MountAccess,
  MountSpec,
  Tool,
  MemoryTree,
  MountBinding,
  MountSource,
  MemoryMountSource,
  ExecutionRequest,
  ExecutionResult,
  Executor,
  InvokeResult,
  InvokeSuccess,
  InvokeFailure,
  InvokeResultFields,
  SnapshotRef,
} from './types.js';
export { onAbort } from './abort.js';
export { toolSpecSchema, validateSpec, parseSpec, specDefaults, type ParseSpecOptions, type SpecValidation } from './spec.js';
export type { Problem } from './schema.js';
export { validatorSource, prebuiltValidator, VALIDATOR_FORMAT } from './schema.js';
export {
  detectWasmKind,
  sha256Hex,
  adapterReallocProblem,
  componentCoreModules,
  coreModuleInterface,
  hasStartFunction,
  CABI_REALLOC_HINT,
  type WasmKind,
  type CoreExport,
  type CoreExternKind,
  type CoreImport,
  type CoreModuleInterface,
  type WasmProblem,
} from './wasm.js';
export { Registry, parseToolRef, type RegisterOptions, type PrebuiltValidators } from './registry.js';
export { MAX_JSON_DEPTH, jsonTextTooDeep } from './json-depth.js';
export { Runtime, type InvokeOptions, type RuntimeOptions, type DecisionInput } from './invoke.js';
export {
  nowNs,
  nsFromDate,
  isoFromNs,
  type Nanos,
  type DecisionSnapshot,
  type ExecutionStatus,
  type ExecutionIntent,
  type ExecutionOutcome,
  type ExecutionSnapshot,
  type SnapshotRecord,
  type ExecutionFilter,
  type PruneOptions,
  type Store,
} from './snapshot.js';
export { MemoryStore } from './memory-store.js';
export {
  agentTools,
  failureText,
  ToolCallError,
  type ToolHost,
  type AgentTool,
  type AgentToolsOptions,
} from './agent-tools.js';
export {
  POLICY_VERSION,
  policySchema,
  validatePolicy,
  parsePolicy,
  evaluatePolicy,
  policyDenied,
  toolPolicy,
  isWithin,
  linksOnTheWay,
  approvalCovers,
  type Policy,
  type ToolPolicy,
  type FolderGrant,
  type EnvValue,
  type PolicyValidation,
  type RequestedBinding,
  type CallerInfo,
  type PolicyRequest,
  type PolicyHost,
  type PolicyDecision,
  type PolicyEffect,
  type PolicyDenialReason,
  type PolicyDeniedDetails,
} from './policy.js';
export {
  PolicyGate,
  fixedPolicy,
  callerLabel,
  refusedEnvelope,
  type PolicySource,
  type PolicyGateOptions,
  type GateRequest,
  type GateDecision,
  type GateHost,
  type GateInvokeOptions,
  type ApprovalHandle,
  type ApprovalOutcome,
  type AuthorizeOptions,
  type DecideOptions,
  type WaitOptions,
} from './gate.js';
export type {
  AuditAction,
  AuditEvent,
  AuditFilter,
  ApprovalStatus,
  ApprovalScope,
  ApprovalRecord,
  ApprovalPatch,
  ApprovalFilter,
  FolderUse,
} from './snapshot.js';
export {
  MAX_APPROVAL_INPUT_BYTES,
  MAX_APPROVAL_PROMPT,
  WORKFLOW_APPROVAL_VERSION,
  isWorkflowApproval,
  workflowApproval,
  type WorkflowApprovalRequest,
} from './policy-records.js';
export {
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_EVENT_KINDS,
  MAX_WORKFLOW_RECORD_BYTES,
  MAX_WORKFLOW_EVENT_BYTES,
  type WorkflowRunStatus,
  type WorkflowRunError,
  type WorkflowRunRecord,
  type WorkflowRunPatch,
  type WorkflowEventKind,
  type WorkflowEvent,
  type WorkflowRunFilter,
  type WorkflowJournal,
} from './workflow-records.js';
