/**
 * @corral/node/policy — the policy gate for Node: corral.policy.yaml read
 * and watched (PolicyFile), the gate in front of calls (openPolicyGate), and
 * the gate `corral serve` and `corral mcp` put in front of theirs
 * (openServerGate). A subpath, so `@corral/node` alone does not load the
 * YAML parser.
 */
export { openPolicyGate, type OpenPolicyGateOptions } from './policy-gate.js';
export {
  openServerGate,
  approveCommandFor,
  approvalsReachable,
  IN_MEMORY_GATE_STORE,
  type OpenServerGateOptions,
} from './server-gate.js';
export {
  PolicyFile,
  defaultPolicyPath,
  parsePolicyText,
  MAX_POLICY_BYTES,
} from './policy-file.js';
