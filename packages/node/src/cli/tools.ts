/** `corral tools`: the tools Corral can run, bundled and from --tools folders. */
import type { Tool } from '@corral/core';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, parse, type Cli, registrationHint, toolDirsFlag } from './shared.js';

export const help = `corral tools [--json] [--tools DIR]

List the bundled tools and those found in each --tools DIR.
  --json        print the list as JSON
  --tools DIR   also load tools from DIR (repeatable)`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' }, tools: { type: 'string', multiple: true } }, false);
  if (values.help) return (print(help), EXIT_OK);
  const { Corral } = await import('../corral.js');
  const toolDirs = toolDirsFlag(values.tools);
  const corral = await Corral.create({ toolDirs, store: false });
  try {
    const tools = corral.registry.list();
    if (values.json) {
      print(JSON.stringify(tools.map(describeTool), null, 2));
    } else {
      const width = Math.max(4, ...tools.map((t) => `${t.spec.name}@${t.spec.version}`.length));
      for (const t of tools)
        print(`${`${t.spec.name}@${t.spec.version}`.padEnd(width)}  ${forTerminal(t.spec.description ?? '', { oneLine: true })}`);
      if (tools.length === 0) print('No tools found.');
    }
    for (const err of corral.loadErrors)
      process.stderr.write(`corral: skipped: ${forTerminal(err.message + ` (${err.code})` + registrationHint(err), { oneLine: true })}\n`);
    return EXIT_OK;
  } finally {
    await corral.close();
  }
}

function describeTool(tool: Tool) {
  const { spec } = tool;
  return {
    name: spec.name,
    version: spec.version,
    description: spec.description ?? '',
    source: tool.source,
    sha256: tool.wasmSha256,
    resources: spec.resources ?? {},
    mounts: spec.mounts ?? [],
    input_schema: spec.input_schema,
  };
}
