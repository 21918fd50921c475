/**
 * The first-party tools (the @corral/tools package, `wasm-tools/` in the
 * repository): their specs, and the URLs of their .wasm files for a page to
 * fetch. The URLs come from @corral/tools, where they are
 * `new URL('./…', import.meta.url)` literals, so bundlers (Vite, webpack)
 * copy the files into the build and rewrite the URLs.
 */
import { CorralError, ErrorCodes, VALIDATOR_FORMAT, sha256Hex, type PrebuiltValidators, type Tool } from '@corral/core';
import { decodePreparedFile } from '@corral/wasi/host-kit';
import { toolFiles } from '@corral/tools';
import { BUNDLED_SPECS } from './bundled-specs.js';
import type { BrowserCorral } from './corral.js';

export interface BundledTool {
  name: string;
  /** The tool-spec.json, as shipped. */
  spec: object;
  /** The tool's component (what Node runs too). */
  wasmUrl: string;
  /** The same tool built as a WASI preview1 module: runs without jco's transpile, so a first call is fast. */
  moduleUrl: string;
  /** The component as jco transpiled it when Corral was built: a page runs it without loading jco. */
  preparedUrl: string;
  /** Its input and output validators, compiled when Corral was built: a page need not compile the schemas. */
  validatorsUrl: string;
}

function spec(name: string): object {
  const found = BUNDLED_SPECS[name];
  if (!found) throw new Error(`bundled-specs.ts has no ${name}: run node packages/browser/scripts/bundled-specs.mjs`);
  return found;
}

export const bundledTools: BundledTool[] = toolFiles.map((files) => ({
  name: files.name,
  spec: spec(files.name),
  wasmUrl: files.wasmUrl,
  moduleUrl: files.moduleUrl,
  preparedUrl: files.preparedUrl,
  validatorsUrl: files.validatorsUrl,
}));

/**
 * The validators' code made for this very spec by Corral's build, or
 * undefined (missing, unreadable, for another spec or another ajv): the
 * schemas are then compiled at the first call, as for any tool.
 */
async function builtValidators(tool: BundledTool, get: (url: string) => Promise<Response>): Promise<PrebuiltValidators | undefined> {
  try {
    const response = await get(tool.validatorsUrl);
    if (!response.ok) return undefined;
    const file = (await response.json()) as { format?: unknown; spec?: unknown; input?: unknown; output?: unknown };
    if (file.format !== VALIDATOR_FORMAT || typeof file.input !== 'string') return undefined;
    if (!(file.output === undefined || typeof file.output === 'string')) return undefined;
    if (file.spec !== (await sha256Hex(JSON.stringify(tool.spec)))) return undefined;
    return { format: file.format, input: file.input, ...(file.output === undefined ? {} : { output: file.output }) };
  } catch {
    return undefined;
  }
}

/**
 * How long registration waits for a tool's validators once its .wasm has
 * arrived. They are optional (without them the schemas are compiled at the
 * first call, tens of ms) and requested first, and far smaller than the
 * .wasm: a request still pending is stalled and must not hold the tool back.
 */
const VALIDATORS_GRACE_MS = 3000;

function withinGrace<T>(pending: Promise<T | undefined>): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, VALIDATORS_GRACE_MS)));
  return Promise.race([pending, late]).finally(() => clearTimeout(timer));
}

export interface RegisterBundledOptions {
  /**
   * 'component' (default) registers the components Node runs; 'module'
   * registers the preview1 builds of the same tools, which skip jco's
   * transpile (one flavour per registry: both share name and version).
   */
  kind?: 'component' | 'module';
  /**
   * Fetches the .wasm files, the components' transpiled forms, whose
   * JavaScript the sandbox workers run, and the validators' code, which runs
   * where `corral` lives (the page, or the worker holding it) with that
   * realm's storage and network: give a fetch you trust as you trust the
   * page's own scripts. Default: the global fetch.
   */
  fetch?: (url: string) => Promise<Response>;
  /**
   * Register only these tools (by name), e.g. the one a page needs first;
   * call again with others later. Default: every bundled tool. Tools
   * already registered are returned as they are, without a fetch.
   */
  names?: readonly string[];
}

/**
 * Fetch and register the bundled tools (every one, or `options.names`).
 * Throws E_REGISTRATION when a file cannot be fetched or a name is not a
 * bundled tool.
 */
export async function registerBundledTools(corral: BrowserCorral, options: RegisterBundledOptions = {}): Promise<Tool[]> {
  const kind = options.kind ?? 'component';
  // From JavaScript anything can arrive: a wrong type is named here, not met as a TypeError further on.
  if (kind !== 'component' && kind !== 'module') {
    const message = `kind must be 'component' or 'module' (got ${JSON.stringify(kind) ?? String(kind)})`;
    throw new CorralError(ErrorCodes.REGISTRATION, message, { problems: [{ path: '/kind', message }] });
  }
  const names: unknown = options.names;
  if (names !== undefined && !(Array.isArray(names) && names.every((name) => typeof name === 'string'))) {
    const message = `names must be an array of tool names (got ${describe(names)})`;
    throw new CorralError(ErrorCodes.REGISTRATION, message, { problems: [{ path: '/names', message }] });
  }
  const get = options.fetch ?? ((url: string) => fetch(url));
  const unknown = options.names?.filter((name) => !bundledTools.some((tool) => tool.name === name)) ?? [];
  if (unknown.length > 0) {
    throw new CorralError(
      ErrorCodes.REGISTRATION,
      `Not bundled tools: ${unknown.join(', ')}. Bundled: ${bundledTools.map((tool) => tool.name).join(', ')}`,
      { name: unknown.join(', ') },
    );
  }
  const wanted = options.names ? bundledTools.filter((tool) => options.names!.includes(tool.name)) : bundledTools;
  return Promise.all(
    wanted.map(async (tool) => {
      const spec = kind === 'module' ? { ...tool.spec, component: `${tool.name}.module.wasm`, kind: 'module' } : tool.spec;
      const version = (tool.spec as { version: string }).version;
      const known = corral.registry.list().find((t) => t.spec.name === tool.name && t.spec.version === version);
      if (known && known.spec.kind === (kind === 'module' ? 'module' : 'component')) return known;
      const url = kind === 'module' ? tool.moduleUrl : tool.wasmUrl;
      const validators = builtValidators(tool, get);
      let bytes: Uint8Array;
      try {
        const response = await get(url);
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new CorralError(ErrorCodes.REGISTRATION, `Could not fetch the bundled tool ${tool.name} from ${url}: ${reason}`, {
          name: tool.name,
          url,
          reason,
        });
      }
      // Validated when Corral was built (wasm-tools/validate-specs.mjs; bundled-specs.ts is checked
      // to be those very files): the page need not compile the meta-schemas to check them again.
      const built = await withinGrace(validators);
      const registered = await corral.registry.register(spec, bytes, `bundled ${tool.name}`, {
        validated: true,
        ...(built ? { validators: built } : {}),
      });
      // Fetched at the tool's first call, not now; a missing or stale file means jco transpiles as before.
      if (kind === 'component') {
        const sha256 = registered.wasmSha256;
        corral.executor.addPrebuilt(sha256, async () => {
          const response = await get(tool.preparedUrl);
          return response.ok ? decodePreparedFile(await response.text(), sha256) : undefined;
        });
      }
      return registered;
    }),
  );
}

/** "a string", "a Set", "an array with a number": what was passed where names belong. */
function describe(value: unknown): string {
  if (Array.isArray(value)) {
    const odd = value.find((item) => typeof item !== 'string');
    return `an array with ${odd === null ? 'null' : `a ${typeof odd}`}`;
  }
  if (typeof value === 'object' && value !== null) return `a ${(value as object).constructor?.name ?? 'object'}`;
  return value === null ? 'null' : `a ${typeof value}`;
}
