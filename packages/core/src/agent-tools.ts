/**
 * The view of a Corral host that agent frameworks need: which tools to offer
 * a model, under what names and schemas, and how to call one. Framework
 * adapters (@corral/langchain, @corral/ai-sdk) are thin wrappers over this,
 * so every framework sees the same tools the same way.
 */
import { CorralError, ErrorCodes } from './errors.js';
import type { InvokeOptions } from './invoke.js';
import type { Registry } from './registry.js';
import type { InvokeResult, JsonSchema, Tool } from './types.js';

/** What an adapter needs of a Corral host (`Corral`, `BrowserCorral`): its tools and a way to call one. */
export interface ToolHost {
  readonly registry: Pick<Registry, 'list' | 'resolve'>;
  invoke(ref: string, input: unknown, options?: InvokeOptions): Promise<InvokeResult>;
}

export interface AgentToolsOptions {
  /**
   * Which tools to offer, as refs ('diff-summary', 'diff-summary@^1').
   * Default: every registered tool, at its highest version.
   */
  tools?: readonly string[];
  /** Options for every call (mounts, env, timeoutMs, …). */
  invoke?: InvokeOptions;
}

/** One tool as a model sees it. */
export interface AgentTool {
  /** The tool's name made safe for model APIs (`^[a-zA-Z0-9_-]{1,64}$`): dots become underscores. */
  name: string;
  /** The exact tool called ('name@version'), so a later registration never changes what the model was shown. */
  ref: string;
  tool: Tool;
  description: string;
  /** Always an object schema, as model APIs require; see `toToolInput`. */
  inputSchema: Record<string, unknown>;
  outputSchema: JsonSchema | undefined;
  /** Turns the arguments a model sends into the tool's input (unwraps a non-object input, see `inputSchema`). */
  toToolInput(args: unknown): unknown;
}

/** The tools to offer a model, in a stable order (by name). Throws E_TOOL_NOT_FOUND for a ref that matches nothing. */
export function agentTools(host: ToolHost, options: AgentToolsOptions = {}): AgentTool[] {
  // A bare name resolves as `invoke` would: the highest release, else the highest prerelease.
  const refs = options.tools ?? [...new Set(host.registry.list().map((tool) => tool.spec.name))];
  const tools = refs.map((ref) => host.registry.resolve(ref));
  const byName = new Map<string, AgentTool>();
  for (const tool of tools) {
    const entry = agentTool(tool);
    const clash = byName.get(entry.name);
    if (clash && clash.ref !== entry.ref) {
      throw new CorralError(
        ErrorCodes.INPUT_VALIDATION,
        `Tools ${clash.ref} and ${entry.ref} would both be offered to the model as '${entry.name}'; list only one of them in \`tools\``,
        { name: entry.name, refs: [clash.ref, entry.ref] },
      );
    }
    byName.set(entry.name, entry);
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The text a model reads when a call failed: the stable code first, so it can act on it. */
export function failureText(result: InvokeResult): string {
  const error = result.error;
  return error ? `${error.code}: ${error.message}` : `${result.tool} failed`;
}

/** An error carrying a failed call's result, for frameworks whose tools report failure by throwing. */
export class ToolCallError extends Error {
  readonly code: string;
  readonly result: InvokeResult;
  constructor(result: InvokeResult) {
    super(failureText(result));
    this.name = 'ToolCallError';
    this.code = result.error?.code ?? ErrorCodes.UNEXPECTED_EXIT;
    this.result = result;
  }
}

function agentTool(tool: Tool): AgentTool {
  const { spec } = tool;
  const schema = spec.input_schema;
  const isObject = typeof schema === 'object' && schema.type === 'object';
  return {
    name: spec.name.replaceAll('.', '_'),
    ref: `${spec.name}@${spec.version}`,
    tool,
    description: spec.description ?? `${spec.name} ${spec.version} (a Corral tool)`,
    // Model APIs take object arguments only: any other input travels as { input }.
    inputSchema: isObject ? schema : { type: 'object', properties: { input: schema }, required: ['input'], additionalProperties: false },
    outputSchema: spec.output_schema,
    toToolInput: isObject ? (args) => args : (args) => (args as { input?: unknown } | null)?.input,
  };
}
