/**
 * The part of @corral/core a user of a host package needs — errors, the
 * tool, result and snapshot types, the registry and runtime — re-exported
 * by @corral/node and @corral/browser so one import serves. One list, so
 * the two hosts cannot drift apart. Spec validation and store-adapter
 * helpers stay on @corral/core and @corral/core/store-kit.
 */
export {
  CorralError,
  ErrorCodes,
  isCorralErrorJSON,
  Registry,
  Runtime,
  MemoryStore,
  nowNs,
  nsFromDate,
  isoFromNs,
  sha256Hex,
  type ErrorCode,
  type CorralErrorJSON,
  type Tool,
  type ToolSpec,
  type ToolResources,
  type MountSpec,
  type MountAccess,
  type MountBinding,
  type MountSource,
  type MemoryMountSource,
  type MemoryTree,
  type JsonSchema,
  type InvokeOptions,
  type InvokeResult,
  type SnapshotRef,
  type ExecutionResult,
  type DecisionInput,
  type Store,
  type Nanos,
  type DecisionSnapshot,
  type ExecutionIntent,
  type ExecutionOutcome,
  type ExecutionSnapshot,
  type ExecutionStatus,
  type SnapshotRecord,
  type ExecutionFilter,
  type PruneOptions,
} from './index.js';
