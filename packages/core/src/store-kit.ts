/**
 * @corral/core/store-kit — what the Store adapters (MemoryStore here,
 * SQLite in @corral/node, IndexedDB in @corral/browser) share so they read
 * back, filter and prune records the same way. Not part of the public API:
 * it changes when the adapters need it to.
 */
export {
  MAX_RAN_ON,
  NO_OUTCOME,
  UnavailableStore,
  checkExecutionFilter,
  checkIds,
  evictionOrder,
  selectEvicted,
  type EvictionCandidate,
  checkPruneOptions,
  checkRecord,
  decisionSnapshot,
  executionSnapshot,
  matchesFilter,
  newestFirst,
  selectPruned,
  statusOf,
  storeError,
  type Nullable,
} from './snapshot.js';
export {
  APPROVAL_SCOPES,
  APPROVAL_STATUSES,
  AUDIT_ACTIONS,
  approvalPatch,
  approvalRecord,
  auditEvent,
  checkApprovalFilter,
  checkAuditFilter,
  matchesApprovalFilter,
  matchesAuditFilter,
  newestByTime,
} from './policy-records.js';
export {
  WORKFLOW_EVENT_COLUMNS,
  WORKFLOW_RUN_COLUMNS,
  checkWorkflowEventQuery,
  checkWorkflowRunFilter,
  matchesWorkflowRunFilter,
  newestRunFirst,
  workflowEventFromRow,
  workflowEventRow,
  workflowRefusal,
  workflowRunFromRow,
  workflowRunPatchRow,
  workflowRunRow,
  type WorkflowEventRow,
  type WorkflowRunRow,
  type WorkflowRunRowPatch,
} from './workflow-store-kit.js';
export { executionIntent, executionOutcome, head, tail, ENVELOPE_BYTES, type IntentFields } from './execution-records.js';
