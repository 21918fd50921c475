/**
 * The policy gate a Node server (`corral mcp`, `corral serve`) puts between
 * remote callers and its Corral: `openPolicyGate` over the server's own
 * store, so `corral approve`, `corral approvals` and `corral audit` reach
 * what it keeps. A server without a store (`--no-store`) still decides every
 * call by the policy, over a store in memory: its audit trail and approvals
 * live as long as the process, and nothing outside it can decide them.
 */
import { isAbsolute, resolve } from 'node:path';
import { MemoryStore, type PolicyGate, type Store } from '@corral/core';
import { openPolicyGate, shellWord, type OpenPolicyGateOptions } from './policy-gate.js';
import { defaultStorePath } from './store-sqlite.js';

export interface OpenServerGateOptions extends Omit<OpenPolicyGateOptions, 'store'> {
  /** Where the server's notes go (stderr): said once when the gate's store is in memory. */
  log?: (message: string) => void;
}

/** The location of the store a server without one keeps its gate's records in. */
export const IN_MEMORY_GATE_STORE = 'memory (no store)';

/**
 * A gate over `store` (the server's Corral's: `corral.store`), or, when there
 * is none, over a store in memory — said once through `log`. Besides what
 * openPolicyGate protects, the default store's file is never mountable.
 */
export function openServerGate(store: Store | null | undefined, options: OpenServerGateOptions = {}): PolicyGate {
  const { log, ...given } = options;
  // The default store keeps the approvals `corral approve` decides, whichever store this server uses: never mountable either.
  const rest = { ...given, protectedPaths: [...(given.protectedPaths ?? []), resolve(defaultStorePath(given.env ?? process.env))] };
  if (store) return openPolicyGate({ ...rest, store });
  log?.(
    'no snapshot store: the policy still decides every call, but the audit trail and approvals are kept in memory only ' +
      '(corral audit does not show them, corral approve cannot reach them); a call that needs approval can be approved ' +
      'only through an MCP client that supports elicitation, and is refused otherwise.',
  );
  return openPolicyGate({ ...rest, store: new MemoryStore(IN_MEMORY_GATE_STORE) });
}

/** True when people outside the server can decide the gate's approvals (its store is a file `corral approve` can open). */
export function approvalsReachable(gate: Pick<PolicyGate, 'store'>): boolean {
  return !(gate.store instanceof MemoryStore) && isAbsolute(gate.store.location);
}

/**
 * The command that approves `id` from a terminal: `corral approve ID`, with
 * `--store PATH` when the gate's store is not the one `corral approve` opens
 * by default.
 */
export function approveCommandFor(gate: Pick<PolicyGate, 'store'>, env: NodeJS.ProcessEnv = process.env): (id: string) => string {
  const location = gate.store.location;
  const extra = isAbsolute(location) && resolve(location) !== resolve(defaultStorePath(env)) ? ` --store ${shellWord(location)}` : '';
  return (id) => `corral approve ${id}${extra}`;
}
