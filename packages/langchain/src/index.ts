/**
 * @corral/langchain — Corral's tools as LangChain.js tools. Each call goes
 * through the host's `invoke`, so it is sandboxed, limited and snapshotted
 * exactly as any other; this package only translates.
 *
 * A failed call invoked with a tool call (the way an agent calls it) gives
 * a ToolMessage with `status: 'error'` whose text starts with the Corral
 * error code, so the model can read it and act; invoked directly with plain
 * arguments, it throws a ToolCallError carrying the code and the result.
 */
import { ToolMessage } from '@langchain/core/messages';
import { type DynamicStructuredTool, tool } from '@langchain/core/tools';
import { type AgentToolsOptions, type ToolHost, ToolCallError, agentTools, failureText } from '@corral/core/agent-tools';

export type { AgentToolsOptions, ToolHost } from '@corral/core/agent-tools';
export { ToolCallError } from '@corral/core/agent-tools';

/** LangChain tools for the host's tools (every tool at its highest version, or `options.tools`). */
export function langchainTools(host: ToolHost, options: AgentToolsOptions = {}): DynamicStructuredTool[] {
  return agentTools(host, options).map((entry) =>
    tool(
      async (args: unknown, config) => {
        const toolCallId: string | undefined = config?.toolCall?.id;
        const result = await host.invoke(entry.ref, entry.toToolInput(args), {
          ...options.invoke,
          ...(config?.signal ? { signal: config.signal } : {}),
        });
        if (result.ok) {
          // The output as JSON text for the model; the whole envelope (snapshot id, timings) as the artifact.
          const content = JSON.stringify(result.output);
          return toolCallId
            ? new ToolMessage({ status: 'success', content, artifact: result, tool_call_id: toolCallId, name: entry.name })
            : content;
        }
        if (!toolCallId) throw new ToolCallError(result);
        return new ToolMessage({
          status: 'error',
          content: failureText(result),
          artifact: result,
          tool_call_id: toolCallId,
          name: entry.name,
        });
      },
      { name: entry.name, description: entry.description, schema: entry.inputSchema },
    ),
  ) as DynamicStructuredTool[];
}
