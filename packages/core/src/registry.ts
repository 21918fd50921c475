/** Registered tools by name and version, resolved with semver ranges. */
import { semver } from './deps.js';
import { CorralError, ErrorCodes } from './errors.js';
import { parseSpec, type ParseSpecOptions } from './spec.js';
import type { Tool } from './types.js';
import { detectWasmKind } from './wasm.js';
import { sha256HexFast } from './sha256.js';

/** Split 'name@range' (names cannot contain '@'); a bare name means "any version". */
export function parseToolRef(ref: string): { name: string; range: string | null } {
  if (typeof ref !== 'string') {
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `A tool reference is a string, 'name' or 'name@range' (got a ${typeof ref})`, {
      option: 'ref',
    });
  }
  const at = ref.indexOf('@');
  if (at < 0) return { name: ref, range: null };
  const range = ref.slice(at + 1).trim();
  return { name: ref.slice(0, at), range: range === '' ? null : range };
}

/** Tools a Registry made, so their specs were validated (invoke skips checks registration did). */
const registered = new WeakSet<Tool>();

/** True when `tool` came from a Registry, not built by hand. */
export function isRegistered(tool: Tool): boolean {
  return registered.has(tool);
}

/** A registered tool's schemas, compiled when Corral was built (schema.ts validatorSource). */
export interface PrebuiltValidators {
  /** VALIDATOR_FORMAT of the code; other formats are ignored. */
  format: string;
  input: string;
  output?: string;
}

export interface RegisterOptions extends ParseSpecOptions {
  /**
   * Code of the spec's validators, made by Corral's own build from this
   * very spec (the bundled tools'): it runs as host code. Invoke then
   * loads them instead of compiling the schemas.
   */
  validators?: PrebuiltValidators;
}

const prebuilt = new WeakMap<Tool, PrebuiltValidators>();

/** The validators `register` was given for `tool`, if any. */
export function prebuiltValidatorsOf(tool: Tool): PrebuiltValidators | undefined {
  return prebuilt.get(tool);
}

export class Registry {
  /** name → version → tool */
  readonly #tools = new Map<string, Map<string, Tool>>();

  /**
   * Validate the spec, check the wasm, and add the tool. Registering the same
   * name@version with the same bytes again is a no-op (tool folders get
   * reloaded); with different bytes it is refused, since callers and caches
   * key on name@version. The registry keeps `wasm` as given: don't mutate it.
   * `options`: see RegisterOptions.
   */
  async register(rawSpec: unknown, wasm: Uint8Array, source = 'bytes', options: RegisterOptions = {}): Promise<Tool> {
    const spec = parseSpec(rawSpec, source, options);
    if (!(wasm instanceof Uint8Array)) {
      throw new CorralError(ErrorCodes.REGISTRATION, `The wasm of ${source} must be a Uint8Array (got ${describe(wasm)})`, { source });
    }
    const label = source === 'bytes' ? `the wasm of ${spec.name}@${spec.version}` : `${spec.component} (from ${source})`;
    const kind = detectWasmKind(wasm, label);
    if (spec.kind && spec.kind !== kind) {
      throw new CorralError(
        ErrorCodes.REGISTRATION,
        `${source}: the spec says kind "${spec.kind}" but ${spec.component} is a ${kind === 'module' ? 'core module' : 'component'}; ` +
          `fix "kind" or leave it out to detect it`,
        { source, declared: spec.kind, detected: kind },
      );
    }
    spec.kind = kind;
    // Once per tool, so with the host's native hash where it has one, at any size: a process's
    // first crypto.subtle.digest loads its WebCrypto modules (~5 ms of a cold start), and each
    // digest waits for a hop to another thread (8 bundled tools: 7-15 ms against ~2 ms).
    const wasmSha256 = await sha256HexFast(wasm, Number.POSITIVE_INFINITY);

    const versions = this.#tools.get(spec.name) ?? new Map<string, Tool>();
    const existing = versions.get(spec.version);
    if (existing) {
      if (existing.wasmSha256 === wasmSha256) return existing;
      throw new CorralError(
        ErrorCodes.REGISTRATION,
        `${spec.name}@${spec.version} is already registered (from ${existing.source}) with different wasm; ` +
          `bump the version of ${source} to register a changed tool`,
        { name: spec.name, version: spec.version, source, existing_source: existing.source },
      );
    }
    const tool: Tool = { spec, wasm, wasmSha256, source };
    registered.add(tool);
    if (options.validators) prebuilt.set(tool, options.validators);
    versions.set(spec.version, tool);
    this.#tools.set(spec.name, versions);
    return tool;
  }

  /**
   * Remove name@version (an exact version, not a range) and return it, or
   * undefined when it is not registered. Watched tool folders use this when
   * a tool's folder goes away; a call already running keeps the Tool it holds.
   */
  unregister(name: string, version: string): Tool | undefined {
    const versions = this.#tools.get(name);
    const tool = versions?.get(version);
    if (!versions || !tool) return undefined;
    versions.delete(version);
    if (versions.size === 0) this.#tools.delete(name);
    return tool;
  }

  /** Every tool, by name ascending then version descending. */
  list(): Tool[] {
    return [...this.#tools.keys()]
      .sort()
      .flatMap((name) => [...this.#tools.get(name)!.values()].sort((a, b) => semver.rcompare(a.spec.version, b.spec.version)));
  }

  /** 'name' → highest version; 'name@range' → highest version in the semver range. */
  resolve(ref: string): Tool {
    const { name, range } = parseToolRef(ref);
    const versions = this.#tools.get(name);
    if (!versions) {
      const available = [...this.#tools.keys()].sort();
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `No tool named '${name}'. Available: ${available.length ? available.join(', ') : '(none registered)'}`,
        { name, range, available },
      );
    }
    // The usual call: a bare name with one version, which is the answer whatever it is (semver's range parse cost more than the rest of resolving).
    if (range === null && versions.size === 1) return versions.values().next().value!;
    const available = [...versions.keys()].sort(semver.compare);
    if (range !== null && semver.validRange(range) === null) {
      throw new CorralError(
        ErrorCodes.TOOL_NOT_FOUND,
        `'${range}' is not a semver range (try '${name}@1.2.3' or '${name}@^1'). Available versions of '${name}': ${available.join(', ')}`,
        { name, range, available },
      );
    }
    // A bare name prefers releases but still finds a tool that only has prereleases.
    const best =
      range === null ? (semver.maxSatisfying(available, '*') ?? available[available.length - 1]) : semver.maxSatisfying(available, range);
    if (!best) {
      throw new CorralError(ErrorCodes.TOOL_NOT_FOUND, `No version of '${name}' matches '${range}'. Available: ${available.join(', ')}`, {
        name,
        range,
        available,
      });
    }
    return versions.get(best)!;
  }

  has(ref: string): boolean {
    try {
      this.resolve(ref);
      return true;
    } catch {
      return false;
    }
  }
}

/** "null", "string", "ArrayBuffer": what was passed where bytes belong. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' ? name : 'object';
}
