/**
 * @corral/fleet — Corral past one machine: `FleetWorker` pulls calls from a
 * NATS JetStream work queue and runs them; `remote()` is the Executor that
 * sends a host's calls there.
 */
export { FleetWorker, type FleetWorkerOptions, type WorkerEvent } from './worker.js';
export { RemoteExecutor, remote, type RemoteOptions } from './remote.js';
export {
  RoutedExecutor,
  routed,
  decideRoute,
  type FleetSide,
  type LocalLoad,
  type Placement,
  type Route,
  type RouteFacts,
  type RoutePolicy,
  type RoutedOptions,
} from './route.js';
export {
  STATUS_SUBJECT,
  STATUS_LIMITS,
  fleetStatus,
  serveStatus,
  type FleetStatus,
  type FleetStatusOptions,
  type QueueStatus,
  type WorkerStatus,
} from './status.js';
export { connectFleet } from './nats.js';
export { MemoryLedger, type CallLedger, type LedgerStore, type MemoryLedgerLimits } from './ledger.js';
export {
  STREAM,
  CALLS_PREFIX,
  CANCEL_PREFIX,
  DEFAULT_CONSUMER,
  HEADER_KEY,
  HEADER_REPLY,
  MalformedMessage,
  encodeCall,
  decodeCall,
  encodeReply,
  decodeReply,
  type CallMessage,
  type ReplyMessage,
} from './protocol.js';
