/** `corral tools`: the tools Corral can run, bundled and from --tools folders. */
import { componentCoreModules, type Tool } from '@corral/core';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, UsageError, cell, parse, type Cli, registrationHint, toolDirsFlag } from './shared.js';
import { table } from './policy-shared.js';
import { noStore, openExisting } from './store.js';

export const help = `corral tools [--json] [--tools DIR]
corral tools stats [--json] [--store PATH] [--threshold P] [--min-evidence N] [--prior A,B]

List the bundled tools and those found in each --tools DIR.
  --json        print the list as JSON
  --tools DIR   also load tools from DIR (repeatable)

'stats': how reliable each tool version has been, from the calls in the
snapshot store: a Beta(A + successes, B + failures) belief of success with
its 95% credible interval, and the mean duration. Workflows route steps that
name alternative tools by these beliefs. Calls refused for their input or a
policy, stopped, or interrupted say nothing about the tool and are not counted.
  --threshold P      mark for retirement below this mean success (default 0.5)
  --min-evidence N   ... once N calls were counted (default 20)
  --prior A,B        the belief about a tool never seen (default 1,1: uniform)
  --store PATH       the snapshot store (default as for corral run)`;

export async function command(args: string[], cli: Cli): Promise<number> {
  const { print } = cli;
  if (args[0] === 'stats') return stats(args.slice(1), cli);
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, tools: { type: 'string', multiple: true } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 0)
    throw new UsageError(`no tools command '${positionals[0]}': 'corral tools' lists, 'corral tools stats' shows reliability.`);
  const { Corral } = await import('../corral.js');
  const toolDirs = toolDirsFlag(values.tools);
  const corral = await Corral.create({ toolDirs, store: false });
  try {
    const tools = corral.registry.list();
    if (values.json) {
      print(
        JSON.stringify(
          tools.map((t) => describeTool(t, unreadable(t))),
          null,
          2,
        ),
      );
    } else {
      const width = Math.max(4, ...tools.map((t) => `${t.spec.name}@${t.spec.version}`.length));
      for (const t of tools)
        print(`${`${t.spec.name}@${t.spec.version}`.padEnd(width)}  ${forTerminal(t.spec.description ?? '', { oneLine: true })}`);
      if (tools.length === 0) print('No tools found.');
      for (const t of tools) {
        const problem = unreadable(t);
        if (problem)
          process.stderr.write(
            `corral: warning: ${t.spec.name}@${t.spec.version} will fail when called: ${forTerminal(problem, { oneLine: true })} (corral validate ${forTerminal(JSON.stringify(t.source), { oneLine: true })} says more)\n`,
          );
      }
    }
    for (const err of corral.loadErrors)
      process.stderr.write(`corral: skipped: ${forTerminal(err.message + ` (${err.code})` + registrationHint(err), { oneLine: true })}\n`);
    return EXIT_OK;
  } finally {
    await corral.close();
  }
}

/**
 * Why a component's bytes cannot be read (a file cut short, say), or
 * undefined: registration takes such a file, and its first call fails to
 * compile it. Walking its sections costs well under a millisecond.
 */
function unreadable(tool: Tool): string | undefined {
  if (tool.spec.kind !== 'component') return undefined;
  try {
    componentCoreModules(tool.wasm, tool.spec.component);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function describeTool(tool: Tool, problem?: string) {
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
    ...(problem ? { problem } : {}),
  };
}

async function stats(args: string[], { print }: Cli): Promise<number> {
  const { values } = parse(
    args,
    {
      json: { type: 'boolean' },
      store: { type: 'string' },
      threshold: { type: 'string' },
      'min-evidence': { type: 'string' },
      prior: { type: 'string' },
    },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  const threshold = values.threshold === undefined ? 0.5 : Number(values.threshold);
  if (!(threshold >= 0 && threshold <= 1) || values.threshold === '')
    throw new UsageError(`bad --threshold ${values.threshold}: a probability from 0 to 1.`);
  const minEvidence = values['min-evidence'] === undefined ? 20 : Number(values['min-evidence']);
  if (!Number.isInteger(minEvidence) || minEvidence < 0)
    throw new UsageError(`bad --min-evidence ${values['min-evidence']}: a whole number.`);
  const prior = values.prior === undefined ? undefined : (await import('./workflow.js')).priorFlag(values.prior);
  const store = await openExisting(values.store);
  if (!store) throw noStore(values.store);
  try {
    const { toolStats } = await import('@corral/workflow');
    const rows = await toolStats(store, { threshold, minEvidence, ...(prior ? { prior } : {}) });
    if (values.json) {
      print(JSON.stringify(rows, null, 2));
      return EXIT_OK;
    }
    if (rows.length === 0) {
      print(`No tool calls recorded in ${store.location} yet.`);
      return EXIT_OK;
    }
    const pct = (p: number) => `${(p * 100).toFixed(1)}%`;
    print(
      table(
        ['tool', 'calls', 'ok', 'failed', 'P(success)', '95% interval', 'mean time', ''],
        rows.map((r) =>
          [
            r.key,
            String(r.successes + r.failures),
            String(r.successes),
            String(r.failures),
            pct(r.mean),
            `${pct(r.interval[0])} – ${pct(r.interval[1])}`,
            r.meanDurationMs === null ? '' : `${r.meanDurationMs.toFixed(1)} ms`,
            r.retire ? 'retire' : '',
          ].map(cell),
        ),
      ),
    );
    return EXIT_OK;
  } finally {
    await store.close();
  }
}
