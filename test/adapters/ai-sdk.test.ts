// @corral/ai-sdk through the AI SDK's own loop: generateText with a scripted
// model that calls a tool, the SDK executing it, and the model's next step
// receiving the result (or the error) as the SDK passes it on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { aiSdkTools } from '@corral/ai-sdk';
import type { Corral } from '@corral/node';
import { adapterHost, exampleInput } from './host.js';
import { toolFiles } from '@corral/tools';

let corral: Corral;
beforeAll(async () => {
  corral = await adapterHost();
});
afterAll(() => corral?.close());

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that first calls `toolName` with `input`, then answers with text. */
function scriptedModel(toolName: string, input: unknown) {
  return new MockLanguageModelV3({
    doGenerate: [
      {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] },
    ],
  });
}

/** What the model was sent as the tool's result on its second step. */
function toolResultSeenByModel(model: MockLanguageModelV3): unknown {
  const prompt = model.doGenerateCalls[1]?.prompt ?? [];
  const parts = prompt.flatMap((message) => (message.role === 'tool' ? message.content : []));
  const result = parts.find((part) => part.type === 'tool-result');
  return result?.type === 'tool-result' ? result.output : undefined;
}

describe('@corral/ai-sdk', () => {
  it('offers every bundled tool with its description and JSON Schema', async () => {
    const tools = aiSdkTools(corral);
    expect(Object.keys(tools)).toEqual(toolFiles.map((t) => t.name));
    expect(tools['diff-summary']!.description).toBe(corral.registry.resolve('diff-summary').spec.description);
  });

  it('runs a tool the model calls and hands the output back to the model', async () => {
    const model = scriptedModel('diff-summary', exampleInput);
    const result = await generateText({ model, tools: aiSdkTools(corral), prompt: 'summarize', stopWhen: stepCountIs(2) });
    expect(result.text).toBe('done');
    const toolResult = result.steps[0]!.toolResults[0]!;
    const direct = await corral.invoke('diff-summary', exampleInput);
    expect(toolResult.output).toEqual(direct.output);
    expect(toolResultSeenByModel(model)).toEqual({ type: 'json', value: direct.output });
  });

  it('gives the model a tool-error it can read, code first, when the call fails', async () => {
    const model = scriptedModel('diff-summary', { diff: 'not a diff' });
    const result = await generateText({ model, tools: aiSdkTools(corral), prompt: 'summarize', stopWhen: stepCountIs(2) });
    const direct = await corral.invoke('diff-summary', { diff: 'not a diff' });
    expect(direct.ok).toBe(false);
    const expected = `${direct.error!.code}: ${direct.error!.message}`;
    const error = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect(error?.type === 'tool-error' && (error.error as Error).message).toBe(expected);
    expect(toolResultSeenByModel(model)).toEqual({ type: 'error-text', value: expected });
  });

  it('refuses input that breaks the schema before anything runs, and tells the model', async () => {
    const model = scriptedModel('diff-summary', { patch: 1 });
    const result = await generateText({ model, tools: aiSdkTools(corral), prompt: 'summarize', stopWhen: stepCountIs(2) });
    const error = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect(error).toBeDefined();
    expect(toolResultSeenByModel(model)).toMatchObject({ type: 'error-text' });
  });
});
