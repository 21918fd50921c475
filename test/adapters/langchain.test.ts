// @corral/langchain through LangChain's own tool interface: `invoke` with a
// tool call (what an agent's tool node sends) and with plain arguments.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolMessage } from '@langchain/core/messages';
import { ToolInputParsingException } from '@langchain/core/tools';
import { ToolCallError, langchainTools } from '@corral/langchain';
import type { Corral, InvokeResult } from '@corral/node';
import { adapterHost, exampleInput } from './host.js';
import { toolFiles } from '@corral/tools';

let corral: Corral;
beforeAll(async () => {
  corral = await adapterHost();
});
afterAll(() => corral?.close());

function diffSummary() {
  const tool = langchainTools(corral).find((t) => t.name === 'diff-summary');
  if (!tool) throw new Error('diff-summary was not offered');
  return tool;
}

describe('@corral/langchain', () => {
  it('offers every bundled tool with its spec description and input schema', () => {
    const tools = langchainTools(corral);
    expect(tools.map((t) => t.name)).toEqual(toolFiles.map((t) => t.name));
    const spec = corral.registry.resolve('diff-summary').spec;
    expect(diffSummary().description).toBe(spec.description);
    expect(diffSummary().schema).toEqual(spec.input_schema);
  });

  it('answers a tool call with a ToolMessage carrying the output and the recorded envelope', async () => {
    const message = await diffSummary().invoke({ type: 'tool_call', id: 'call-1', name: 'diff-summary', args: exampleInput });
    expect(message).toBeInstanceOf(ToolMessage);
    expect(message.status).toBe('success');
    expect(message.tool_call_id).toBe('call-1');
    const envelope = message.artifact as InvokeResult;
    expect(envelope.ok).toBe(true);
    expect(JSON.parse(message.content as string)).toEqual(envelope.output);
    expect((envelope.output as { totals: { files: number } }).totals.files).toBeGreaterThan(0);
    // The call went through the pipeline, so it is in the snapshot store.
    expect(envelope.snapshot?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await corral.store!.getExecution(envelope.snapshot!.id))?.tool).toBe('diff-summary');
  });

  it('reports a failed call as an error ToolMessage the model can read, code first', async () => {
    // Schema-valid for LangChain, refused by the tool itself: text without any diff header.
    const message = await diffSummary().invoke({ type: 'tool_call', id: 'call-2', name: 'diff-summary', args: { diff: 'not a diff' } });
    expect(message.status).toBe('error');
    const envelope = message.artifact as InvokeResult;
    expect(envelope.ok).toBe(false);
    expect(message.content).toBe(`${envelope.error!.code}: ${envelope.error!.message}`);
  });

  it('throws ToolCallError with the code when invoked with plain arguments', async () => {
    const error = await diffSummary()
      .invoke({ diff: 'not a diff' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolCallError);
    expect((error as ToolCallError).result.ok).toBe(false);
    expect((error as ToolCallError).message.startsWith(`${(error as ToolCallError).code}: `)).toBe(true);
  });

  it('lets LangChain refuse arguments that do not match the schema before anything runs', async () => {
    await expect(
      diffSummary().invoke({ type: 'tool_call', id: 'call-3', name: 'diff-summary', args: { patch: 1 } }),
    ).rejects.toBeInstanceOf(ToolInputParsingException);
  });

  it('offers only the tools asked for, and names a missing one', () => {
    expect(langchainTools(corral, { tools: ['file-stats'] }).map((t) => t.name)).toEqual(['file-stats']);
    expect(() => langchainTools(corral, { tools: ['no-such-tool'] })).toThrow(expect.objectContaining({ code: 'E_TOOL_NOT_FOUND' }));
  });
});
