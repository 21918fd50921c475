import { langchainTools } from '@corral/langchain';
import { Corral } from '@corral/node';

const corral = await Corral.create();
const tools = langchainTools(corral, { tools: ['diff-summary'] });
// Give `tools` to a chat model (model.bindTools(tools)) or an agent; each call is sandboxed and recorded.
const message = await tools[0]!.invoke({ type: 'tool_call', id: 'call-1', name: 'diff-summary', args: { diff: 'diff --git a/x b/x\n' } });
console.log(message.status, message.content); // 'success' and the output as JSON, or 'error' and "E_CODE: message"
await corral.close();
