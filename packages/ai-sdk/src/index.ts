/**
 * @corral/ai-sdk — Corral's tools as Vercel AI SDK tools. Each call goes
 * through the host's `invoke`, so it is sandboxed, limited and snapshotted
 * exactly as any other; this package only translates.
 *
 * A failed call throws a ToolCallError whose message starts with the Corral
 * error code: the AI SDK turns a throwing `execute` into a `tool-error`
 * part, which the model reads on its next step.
 */
import { type Tool, dynamicTool, jsonSchema } from 'ai';
import { type AgentToolsOptions, type ToolHost, ToolCallError, agentTools } from '@corral/core/agent-tools';

export type { AgentToolsOptions, ToolHost } from '@corral/core/agent-tools';
export { ToolCallError } from '@corral/core/agent-tools';

/** A ToolSet for `generateText`/`streamText`: the host's tools (each at its highest version, or `options.tools`) by name. */
export function aiSdkTools(host: ToolHost, options: AgentToolsOptions = {}): Record<string, Tool<unknown, unknown>> {
  const tools: Record<string, Tool<unknown, unknown>> = {};
  for (const entry of agentTools(host, options)) {
    tools[entry.name] = dynamicTool({
      description: entry.description,
      // Corral validates input against the tool's own schema (with its formats) on every call.
      inputSchema: jsonSchema(entry.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args, { abortSignal }) => {
        const result = await host.invoke(entry.ref, entry.toToolInput(args), {
          ...options.invoke,
          ...(abortSignal ? { signal: abortSignal } : {}),
        });
        if (!result.ok) throw new ToolCallError(result);
        return result.output;
      },
    });
  }
  return tools;
}
