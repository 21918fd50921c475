/**
 * Corral tools as MCP tools, and Corral results as MCP tool results.
 *
 * One MCP tool per tool name: the version `Registry.resolve(name)` picks (the
 * highest release, or the highest prerelease when a tool has only those), the
 * same one a call of that name runs. Its spec's schemas are passed through
 * unchanged, so `inputSchema` and `outputSchema` are exactly the tool's.
 */
import { onAbort, type CorralErrorJSON, type InvokeResult, type JsonSchema, type Registry, type Tool } from '@corral/core';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';

/** `_meta` keys Corral reads on a call and writes on tools and results. */
export const META = {
  /** On a call: `{ "/workspace": "file:///…" }`, the folder each declared mount binds to. */
  mounts: 'corral/mounts',
  /** On a listed tool and on a result: the tool's version. */
  version: 'corral/version',
  /** On a listed tool: the mounts the tool declares (`[{ guest, access }]`). */
  declaredMounts: 'corral/declared-mounts',
  /** On a failed result: the whole Corral error (`code`, `message`, `details`, `retryable`). */
  error: 'corral/error',
  /** On a result: the execution snapshot (`{ id, error? }`) when a store records calls. */
  snapshot: 'corral/snapshot',
} as const;

/** Corral's tool names (spec.ts): what a `tools/call` name must look like before any lookup. */
const TOOL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Why a registered tool cannot be offered over MCP, or null when it can. */
export function mcpIncompatibility(tool: Tool): string | null {
  if (!isObjectRootSchema(tool.spec.input_schema)) {
    return 'its input_schema is not an object schema ({"type": "object", …}), which MCP requires of tool arguments';
  }
  return null;
}

/** MCP's rule for inputSchema and outputSchema: a root `type: "object"`, and every property schema an object. */
function isObjectRootSchema(schema: JsonSchema | undefined): schema is Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || schema.type !== 'object') return false;
  const { properties, required } = schema;
  if (properties !== undefined) {
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return false;
    if (Object.values(properties).some((p) => typeof p !== 'object' || p === null)) return false;
  }
  return required === undefined || (Array.isArray(required) && required.every((r) => typeof r === 'string'));
}

/**
 * The tool a `tools/call` of `name` runs: the listed version of that name, or
 * undefined when no such tool is listed. `name` is untrusted: anything that is
 * not a plain Corral tool name (a range such as `x@^1`, an over-long string)
 * finds nothing, so a client can only call what `tools/list` shows.
 */
export function listedTool(registry: Registry, name: string): Tool | undefined {
  if (!TOOL_NAME.test(name)) return undefined;
  let tool: Tool;
  try {
    tool = registry.resolve(name);
  } catch {
    return undefined;
  }
  return mcpIncompatibility(tool) === null ? tool : undefined;
}

/** Each name's listed version, by name; tools MCP cannot describe are passed to `skipped`. */
export function listedTools(registry: Registry, skipped?: (tool: Tool, why: string) => void): Tool[] {
  const names = [...new Set(registry.list().map((t) => t.spec.name))];
  const tools: Tool[] = [];
  for (const name of names) {
    const tool = registry.resolve(name);
    const why = mcpIncompatibility(tool);
    if (why === null) tools.push(tool);
    else skipped?.(tool, why);
  }
  return tools;
}

/** A Corral tool as `tools/list` describes it. */
export function toMcpTool(tool: Tool): McpTool {
  const { spec } = tool;
  const mounts = spec.mounts ?? [];
  const writes = mounts.some((m) => m.access === 'read-write');
  const described: McpTool = {
    name: spec.name,
    description: spec.description ?? `Corral tool ${spec.name} ${spec.version}`,
    inputSchema: spec.input_schema as McpTool['inputSchema'],
    annotations: {
      // Only a read-write mount lets a tool change anything outside its own call.
      readOnlyHint: !writes,
      // Tools never have network access (DESIGN.md): nothing outside the mounts.
      openWorldHint: false,
    },
    _meta: {
      [META.version]: spec.version,
      [META.declaredMounts]: mounts.map((m) => ({ guest: m.guest, access: m.access })),
    },
  };
  // A schema MCP cannot carry is left out: the result then has no promised shape.
  if (isObjectRootSchema(spec.output_schema)) described.outputSchema = spec.output_schema as McpTool['outputSchema'];
  return described;
}

/** A finished call as a `tools/call` result: the output, or the Corral error as an isError result. */
export function toCallToolResult(result: InvokeResult): CallToolResult {
  const meta: Record<string, unknown> = {};
  if (result.version !== null) meta[META.version] = result.version;
  if (result.snapshot) meta[META.snapshot] = result.snapshot;
  if (!result.ok || result.error) {
    // invoke gives every failed result its error; a result without one is a broken invariant.
    const error: CorralErrorJSON = result.error ?? {
      code: 'E_UNEXPECTED_EXIT',
      message: "The call failed without an error (an internal error, not the tool's; please report it)",
      details: { reason: 'internal', cause: 'a failed result had no error' },
      retryable: false,
    };
    return errorResult(error, meta);
  }
  const output = result.output;
  const structured = isPlainObject(output);
  return {
    content: [{ type: 'text', text: JSON.stringify(output) }],
    ...(structured ? { structuredContent: output } : {}),
    _meta: meta,
  };
}

/**
 * A refused or failed call: `isError` with `CODE: message` as text for the
 * model, and the whole error in `_meta` for programs. No `structuredContent`:
 * where the tool declares an outputSchema, clients (the SDK's among them)
 * check any structuredContent against it, error or not.
 */
export function errorResult(error: CorralErrorJSON, meta: Record<string, unknown> = {}): CallToolResult {
  return {
    content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
    isError: true,
    _meta: { ...meta, [META.error]: error },
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `run` with a signal aborted as soon as any of `signals` is (AbortSignal.any, which not every host's types have). */
export async function withAnySignal<T>(
  signals: readonly (AbortSignal | undefined)[],
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const any = new AbortController();
  const stopListening = signals.map((s) => (s ? onAbort(s, () => any.abort()) : () => {}));
  try {
    return await run(any.signal);
  } finally {
    for (const s of stopListening) s();
  }
}
