/**
 * Hybrid routing: one Executor that sends each call to the local pool or to
 * the fleet, by tool, input size, queue depth and a cost weight, and runs it
 * locally when the fleet cannot be reached, so an offline laptop keeps
 * working. Where each call ran, and why, goes into its snapshot (`ran_on`).
 */
import { CorralError, ErrorCodes, type CorralErrorJSON, type ExecutionRequest, type ExecutionResult, type Executor } from '@corral/core';

export type Placement = 'local' | 'fleet';

export interface RoutePolicy {
  /** Per tool: always local, always the fleet, or decided by the rules below ('auto', the default). */
  tools?: Record<string, Placement | 'auto'>;
  /** Inputs of at least this many bytes go to the fleet (a laptop's pool is small). Default 1 MiB. */
  fleetFromBytes?: number;
  /**
   * How much dearer a fleet call is than a local one (the network, a bill):
   * a call goes out only when more than `costWeight` calls per local worker
   * are already waiting. Default 1.
   */
  costWeight?: number;
  /** Keep calls local while the fleet has this many calls waiting or more. Default 1,000. */
  fleetQueueLimit?: number;
}

/** What the local side of a route exposes about its load (the Node and browser pools have these). */
export interface LocalLoad {
  readonly queued: number;
  readonly running: number;
  readonly workerCount: number;
}

/** What routing needs of the fleet's executor besides `execute`. */
export interface FleetSide extends Executor {
  /** False while the connection to the fleet is down. */
  reachable(): boolean;
  /** Calls waiting in the fleet's queue, when known (refreshed in the background). */
  queueDepth(): number | undefined;
}

export interface Route {
  where: Placement;
  /** Why, in words that go into the snapshot. */
  reason: string;
}

export interface RouteFacts {
  tool: string;
  inputBytes: number;
  /** The call binds a host folder: it can only run here. */
  hostMounts: boolean;
  local: LocalLoad;
  fleetReachable: boolean;
  fleetQueue: number | undefined;
}

const DEFAULTS = { fleetFromBytes: 1024 * 1024, costWeight: 1, fleetQueueLimit: 1000 };

/** The routing decision alone: pure, so each rule can be read and tested by itself. */
export function decideRoute(facts: RouteFacts, policy: RoutePolicy = {}): Route {
  const p = { ...DEFAULTS, ...policy };
  if (facts.hostMounts) return { where: 'local', reason: 'it mounts a folder of this machine' };
  const rule = policy.tools?.[facts.tool] ?? 'auto';
  if (!facts.fleetReachable) return { where: 'local', reason: 'the fleet is unreachable' };
  if (rule !== 'auto')
    return { where: rule, reason: `the policy sends ${facts.tool} ${rule === 'local' ? 'nowhere else' : 'to the fleet'}` };
  if (facts.fleetQueue !== undefined && facts.fleetQueue >= p.fleetQueueLimit) {
    return { where: 'local', reason: `the fleet has ${facts.fleetQueue} calls waiting` };
  }
  if (facts.inputBytes >= p.fleetFromBytes) return { where: 'fleet', reason: `the input is ${size(facts.inputBytes)}` };
  const { queued, running, workerCount } = facts.local;
  if (running + queued < workerCount) return { where: 'local', reason: 'a local worker is free' };
  if (queued > p.costWeight * Math.max(1, workerCount)) return { where: 'fleet', reason: `${queued} calls wait for a local worker` };
  return { where: 'local', reason: `${queued} calls wait for a local worker` };
}

export interface RoutedOptions {
  local: Executor;
  /** The local pool's load; by default read from `local.pool` when it has one. */
  localLoad?: LocalLoad;
  fleet: FleetSide;
  policy?: RoutePolicy;
  /** Told of each decision (for logs and metrics). */
  onRoute?: (route: Route, request: ExecutionRequest) => void;
}

/**
 * An Executor that routes each call. A call the fleet could not take (it
 * became unreachable before accepting it) runs locally instead: tools are
 * side-effect free, so running it here is the at-least-once the fleet
 * promises anyway.
 */
export function routed(options: RoutedOptions): RoutedExecutor {
  return new RoutedExecutor(options);
}

export class RoutedExecutor implements Executor {
  readonly #local: Executor;
  readonly #load: LocalLoad;
  readonly #fleet: FleetSide;
  readonly #policy: RoutePolicy;
  readonly #onRoute: RoutedOptions['onRoute'];

  constructor(options: RoutedOptions) {
    checkPolicy(options.policy ?? {});
    const load = options.localLoad ?? (options.local as { pool?: LocalLoad }).pool;
    if (!load)
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'routed: give localLoad, or a local executor with a pool', {
        option: 'localLoad',
      });
    this.#local = options.local;
    this.#load = load;
    this.#fleet = options.fleet;
    this.#policy = options.policy ?? {};
    this.#onRoute = options.onRoute;
    // Start connecting now, so the first calls can already go out.
    options.fleet.reachable();
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const route = decideRoute(
      {
        tool: request.tool.spec.name,
        inputBytes: request.stdin.byteLength,
        hostMounts: request.mounts.some((m) => m.source !== undefined && m.source.kind !== 'memory'),
        local: this.#load,
        fleetReachable: this.#fleet.reachable(),
        fleetQueue: this.#fleet.queueDepth(),
      },
      this.#policy,
    );
    this.#onRoute?.(route, request);
    if (route.where === 'local') return this.#runLocal(request, route.reason);
    // The fleet needs the input after a failed send: keep stdin ours (never moved to a local worker first).
    const sent = { ...request, stdinTransferable: false };
    let result: ExecutionResult;
    try {
      result = await this.#fleet.execute(sent);
    } catch (err) {
      const why = undelivered(err instanceof CorralError ? err.toJSON() : undefined);
      if (why === null) throw err;
      return this.#runLocal(request, `the fleet could not take it (${why})`);
    }
    const why = undelivered(result.error);
    if (why !== null) return this.#runLocal(request, `the fleet could not take it (${why})`);
    return { ...result, ranOn: `${result.ranOn ?? 'fleet'}: ${route.reason}` };
  }

  async #runLocal(request: ExecutionRequest, reason: string): Promise<ExecutionResult> {
    const result = await this.#local.execute(request);
    return { ...result, ranOn: `local: ${reason}` };
  }

  /** Closes the fleet's executor; the local one belongs to whoever made it (Corral closes its own pool). */
  async close(): Promise<void> {
    await this.#fleet.close?.();
  }
}

/**
 * Why the fleet never took a call (nothing ran there, so running it here
 * runs it once), or null. A call sent but not answered in time (`no_reply`)
 * may still run in the fleet: that one is the caller's to retry, not ours.
 */
function undelivered(error: CorralErrorJSON | null | undefined): string | null {
  if (error?.code !== ErrorCodes.RESOURCE_EXHAUSTED) return null;
  const details = error.details as { resource?: string; reason?: string; delivered?: boolean } | undefined;
  // A worker's answer (remote() marks it delivered): the call reached the fleet, whatever the reply says.
  if (details?.resource !== 'fleet' || details.delivered === true) return null;
  if (details.reason === 'unreachable') return 'unreachable';
  if (details.reason === 'message_too_large') return 'the call is larger than its servers carry';
  return null;
}

function checkPolicy(policy: RoutePolicy): void {
  const bad = (option: string, problem: string): never => {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `routed: policy.${option} ${problem}`, { option: `policy.${option}` });
  };
  if (typeof policy !== 'object' || policy === null) bad('', 'must be an object');
  for (const key of ['fleetFromBytes', 'costWeight', 'fleetQueueLimit'] as const) {
    const v = policy[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) bad(key, `must be a number ≥ 0 (got ${String(v)})`);
  }
  for (const [tool, rule] of Object.entries(policy.tools ?? {})) {
    if (rule !== 'local' && rule !== 'fleet' && rule !== 'auto') bad(`tools.${tool}`, `must be local, fleet or auto (got ${String(rule)})`);
  }
}

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
