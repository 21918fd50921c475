import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const project = '/home/ada/src'; // shared as the client's root; `corral policy grant` decides whether file-stats may read it
const client = new Client({ name: 'my-agent', version: '1.0.0' }, { capabilities: { roots: {} } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: pathToFileURL(project).href }] }));
await client.connect(new StdioClientTransport({ command: 'node', args: ['/path/to/corral/packages/node/bin/corral.js', 'mcp'] }));
const result = await client.callTool({ name: 'file-stats', arguments: {} });
// Granted: the folder's totals in result.structuredContent. Not granted: isError, text "E_POLICY_DENIED: …"
// with the grant command to run, and result._meta['corral/error'].details.reason === 'not_granted'.
console.log(result.isError ? result.content : result.structuredContent);
await client.close();
