import { aiSdkTools } from '@corral/ai-sdk';
import { Corral } from '@corral/node';
import { generateText, stepCountIs } from 'ai';

const corral = await Corral.create();
const { text } = await generateText({
  model: 'anthropic/claude-sonnet-4.5', // any AI SDK model or provider
  tools: aiSdkTools(corral), // every registered tool; a failed call reaches the model as "E_CODE: message"
  stopWhen: stepCountIs(5),
  prompt: 'Summarize the change in this diff: ...',
});
console.log(text);
await corral.close();
