/**
 * A user's program, as test/install/pack.test.ts compiles it (tsc --strict,
 * with library checks on) and runs it in an empty folder where the packed
 * tarballs are installed: the Node host end to end, and the types of every
 * package but the framework adapters (their frameworks' own declarations do
 * not pass library checks; the adapters are examples/*.ts, compiled there
 * too). npm test also type-checks this file against the workspace.
 */
import { BrowserCorral, bundledTools, type BundledTool } from '@corral/browser';
import { validateSpec, type ToolSpec } from '@corral/core';
import { createMcpServer } from '@corral/mcp';
import { BUNDLED_TOOLS_DIR, Corral, CorralError, ErrorCodes, type InvokeResult } from '@corral/node';
import { toolFiles, type BundledToolFiles } from '@corral/tools';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

interface DiffSummary {
  files: { path: string; status: string }[];
  summary: string;
}

const example = JSON.parse(await readFile(join(BUNDLED_TOOLS_DIR, 'diff-summary/examples/example.diff.json'), 'utf8')) as { diff: string };
const spec: unknown = JSON.parse(await readFile(join(BUNDLED_TOOLS_DIR, 'diff-summary/tool-spec.json'), 'utf8'));
const validation = validateSpec(spec);
if (!validation.ok) throw new Error(`the installed diff-summary spec is invalid: ${JSON.stringify(validation)}`);

const corral = await Corral.create({ store: false, size: 1 });
try {
  const result: InvokeResult<DiffSummary> = await corral.invoke<DiffSummary>('diff-summary', example);
  // The envelope is a union on `ok`: no null checks after it (issue 12 found `output` "possibly null" here).
  if (!result.ok) throw new Error(`diff-summary failed: ${result.error.code} ${result.error.message}`);
  const files: number = result.output.files.length;
  const bad = await corral.invoke('diff-summary', { diff: 5 });
  if (bad.error?.code !== ErrorCodes.INPUT_VALIDATION) throw new Error(`expected E_INPUT_VALIDATION, got ${JSON.stringify(bad.error)}`);
  const mcp = createMcpServer(corral);
  const browser: [BundledTool[], BundledToolFiles[], typeof BrowserCorral.create] = [bundledTools, toolFiles, BrowserCorral.create];
  const names: ToolSpec['name'][] = corral.registry.list().map((tool) => tool.spec.name);
  console.log(
    JSON.stringify({
      tools: names,
      files,
      summary: result.output.summary,
      mcp: typeof mcp,
      browser: browser[0].map((tool) => tool.name),
      isError: new CorralError(ErrorCodes.TOOL_NOT_FOUND, 'x', {}) instanceof Error,
    }),
  );
} finally {
  await corral.close();
}
