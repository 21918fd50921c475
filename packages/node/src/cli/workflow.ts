/** `corral workflow run|resume|status|approve|list|validate`: declarative, durable workflows over the tools. */
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { parse as parseYaml } from '@corral/workflow/deps';
import { ErrorCodes } from '@corral/core/errors';
import { isoFromNs, type ApprovalRecord, type WorkflowEvent, type WorkflowRunRecord } from '@corral/core';
import type { Workflow, WorkflowResult, Workflows } from '@corral/workflow';
import { forTerminal } from '../terminal.js';
import { actor, table } from './policy-shared.js';
import {
  EXIT_OK,
  EXIT_TOOL_FAILED,
  UsageError,
  cell,
  fileFlag,
  fileProblem,
  flagValue,
  parse,
  prepareProgress,
  toolDirsFlag,
  type Cli,
} from './shared.js';

/** The run waits for a person: not a failure, not done either (scripts tell the three apart). */
export const EXIT_WAITING = 3;

export const help = `corral workflow run FILE [--input NAME=VALUE]... [--inputs FILE] [options]
corral workflow resume RUN_ID [--tools DIR] [options]
corral workflow status RUN_ID [--json]
corral workflow approve RUN_ID STEP [--reject] [--comment TEXT] [--by NAME] [--tools DIR]
corral workflow list [--pending] [--status S] [--json]
corral workflow validate FILE [--tools DIR] [--json]

Run a workflow file (YAML or JSON: steps over the tools, with depends_on,
conditions, on_error policies and approval steps; see
packages/workflow/README.md). Every step's start and end is recorded in the
snapshot store before it is acted on, so a run stopped or killed at any
moment continues with 'corral workflow resume RUN_ID', and a step whose end
was recorded never runs again. Resume and approve with the same --tools as
the run (they are refused, recording nothing, when a tool it names is
missing). Relative host folders are made absolute when the run starts.
  --input NAME=VALUE   a workflow input (repeatable). VALUE is text for a
                       string input and JSON for the other types;
                       NAME=@FILE reads the value from FILE
  --inputs FILE        all inputs at once, a JSON or YAML object
  --run-id ID          run: the new run's id (default: a random UUID); a run
                       with this id already in the store is refused, and so are
                       ids like http-UUID and mcp-UUID (runs a server started
                       for a remote caller: only a server resumes those)
  --json               print the result (or the record) as JSON
  --quiet              no progress on stderr
  --concurrency N      steps running at once (default 4)
  --prior A,B          routing: the Beta(A, B) belief about a tool with no
                       recorded calls (default 1,1; corral tools stats shows beliefs)
  --tools DIR          also load tools from DIR (repeatable)
  --store PATH         the snapshot store (default as for corral run)
  --pending            list: only runs waiting for an approval
  --status S           list: only runs in state S (running, waiting,
                       succeeded, failed, cancelled; repeatable)
  --limit N            list: at most N runs, newest first (default 100)
  --reject             approve: refuse the step (it fails, or its on_error decides)
  --comment TEXT       approve: kept with the decision
  --by NAME            approve: who decides (default: the OS user)
  --no-resume          approve: record the decision only; do not continue the run

Exit status: 0 the run succeeded, 1 it failed, 2 the command was misused,
3 the run waits for an approval (corral workflow approve, then it goes on).`;

const OPTIONS = {
  input: { type: 'string', multiple: true },
  inputs: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  concurrency: { type: 'string' },
  prior: { type: 'string' },
  tools: { type: 'string', multiple: true },
  store: { type: 'string' },
  pending: { type: 'boolean' },
  status: { type: 'string', multiple: true },
  reject: { type: 'boolean' },
  comment: { type: 'string' },
  by: { type: 'string' },
  'no-resume': { type: 'boolean' },
  limit: { type: 'string' },
  'run-id': { type: 'string' },
} as const;

const SUBCOMMANDS = ['run', 'resume', 'status', 'approve', 'list', 'validate'] as const;
type Values = ReturnType<typeof parse<typeof OPTIONS>>['values'];

export async function command(args: string[], cli: Cli): Promise<number> {
  const { values, positionals } = parse(args, OPTIONS, true);
  const [sub, ...rest] = positionals;
  if (values.help || sub === undefined) {
    if (sub === undefined && !values.help) throw new UsageError(`name what to do: ${SUBCOMMANDS.join(', ')}.`);
    return (cli.print(help), EXIT_OK);
  }
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) throw new UsageError(`no workflow command '${sub}': ${SUBCOMMANDS.join(', ')}.`);
  const arity: Record<string, number> = { run: 1, resume: 1, status: 1, approve: 2, list: 0, validate: 1 };
  const what: Record<string, string> = {
    run: 'FILE',
    resume: 'RUN_ID',
    status: 'RUN_ID',
    approve: 'RUN_ID STEP',
    list: 'nothing',
    validate: 'FILE',
  };
  if (rest.length !== arity[sub])
    throw new UsageError(`'corral workflow ${sub}' takes ${what[sub]} (got ${rest.length ? rest.join(' ') : 'none'}).`);
  if (sub !== 'run' && (values.input || values.inputs || values['run-id'] !== undefined))
    throw new UsageError('--input, --inputs and --run-id are for corral workflow run.');
  if (values['run-id'] !== undefined && !/^[A-Za-z0-9._:-]{1,128}$/.test(values['run-id']))
    throw new UsageError(`bad --run-id ${JSON.stringify(values['run-id'])}: 1 to 128 of A-Z a-z 0-9 . _ : -`);
  if (values['run-id'] !== undefined && (await import('@corral/workflow')).remoteRunKind(values['run-id']) !== null)
    throw new UsageError(`bad --run-id ${values['run-id']}: ids like KIND-UUID (http-…, mcp-…) are those of runs a server starts.`);
  if (sub !== 'approve' && (values.reject || values.comment !== undefined || values['no-resume'] || values.by !== undefined))
    throw new UsageError('--reject, --comment, --by and --no-resume are for corral workflow approve.');
  if (sub !== 'list' && (values.pending || values.status || values.limit !== undefined))
    throw new UsageError('--pending, --status and --limit are for corral workflow list.');
  const concurrency = values.concurrency === undefined ? undefined : wholeNumber('--concurrency', values.concurrency, 1, 256);
  const prior = values.prior === undefined ? undefined : priorFlag(values.prior);

  if (sub === 'validate') return validate(rest[0]!, values, cli);

  // Everything read before a worker starts: a bad flag or file costs nothing.
  let file: { text: string; workflow: Workflow; inputs: Record<string, unknown> } | undefined;
  if (sub === 'run') file = { ...(await readWorkflow(rest[0]!)), inputs: {} };
  if (file) {
    // Defaults applied and checked here (a missing or mistyped input is misuse, said before anything
    // starts), and host folders made absolute: the run must act on the folders it started on,
    // whichever folder a later `resume` or `approve` runs in.
    const { resolveInputs } = await import('@corral/workflow');
    const given = await readInputs(values, file.workflow);
    file.inputs = absoluteHostPaths(
      flagValue(() => resolveInputs(file!.workflow, given)),
      process.cwd(),
    );
  }

  const { Corral } = await import('../corral.js');
  const { Workflows } = await import('@corral/workflow');
  const needsTools = sub === 'run' || sub === 'resume' || (sub === 'approve' && !values['no-resume']);
  const corral = await Corral.create({
    toolDirs: toolDirsFlag(values.tools),
    ...(values.store !== undefined ? { store: values.store } : {}),
    ...(needsTools ? prepareProgress(cli.io.stderr) : {}),
  });
  try {
    const workflows = new Workflows(corral, {
      by: actor(values.by),
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(prior !== undefined ? { reliability: { prior } } : {}),
    });
    switch (sub) {
      case 'run': {
        // Again, now that the tools are known: an unknown one is named with its line.
        const checked = absoluteHostPaths(workflows.load(file!.text, { source: rest[0]! }), process.cwd());
        return await drive(cli, values, checked, (hooks) =>
          workflows.run(checked, file!.inputs, { ...hooks, ...(values['run-id'] !== undefined ? { runId: values['run-id'] } : {}) }),
        );
      }
      case 'resume': {
        const { run } = await workflows.status(rest[0]!);
        return await drive(cli, values, run.definition, (hooks) => workflows.resume(rest[0]!, hooks));
      }
      case 'status':
        return await status(workflows, rest[0]!, values, cli);
      case 'approve': {
        const [runId, step] = rest as [string, string];
        if (values.comment !== undefined && values.comment.length > 4096) throw new UsageError('--comment is limited to 4096 characters.');
        let decided: ApprovalRecord | undefined;
        const { run } = await workflows.status(runId);
        const code = await drive(cli, values, run.definition, async (hooks) => {
          const { approval, result } = await workflows.approve(runId, step, {
            ...(values.reject ? { reject: true } : {}),
            ...(values.comment !== undefined ? { comment: values.comment } : {}),
            by: actor(values.by),
            resume: !values['no-resume'],
            ...hooks,
          });
          decided = approval;
          if (!values.json)
            cli.print(
              `${approval.status === 'approved' ? 'Approved' : 'Rejected'} step ${step} of run ${runId} (by ${approval.decided_by}).` +
                (workflows.resumesElsewhere(runId) && !values['no-resume']
                  ? ' The run was started through a server for a remote caller: that server continues it, through its policy.'
                  : ''),
            );
          return result;
        });
        if ((values['no-resume'] || workflows.resumesElsewhere(runId)) && decided && values.json)
          cli.print(JSON.stringify(decided, null, 2));
        return code;
      }
      case 'list':
        return await list(workflows, values, cli);
    }
    return EXIT_OK;
  } finally {
    await corral.close();
  }
}

/** Run or resume with progress on stderr, then print the result; the exit status says how it ended. */
async function drive(
  cli: Cli,
  values: Values,
  definition: unknown,
  go: (hooks: { onEvent?: (e: WorkflowEvent) => void; signal: AbortSignal }) => Promise<WorkflowResult | null>,
): Promise<number> {
  const stderr = cli.io.stderr as NodeJS.WritableStream & { isTTY?: boolean };
  const progress = values.quiet || values.json ? undefined : new Progress(stderr, definition);
  const stop = new AbortController();
  let runId: string | undefined;
  // Ctrl-C stops the run as a crash would: nothing more is recorded, and resume continues it.
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let result: WorkflowResult | null;
  try {
    result = await go({
      onEvent: (e) => {
        runId = e.run_id;
        progress?.event(e);
      },
      signal: stop.signal,
    });
  } catch (err) {
    if (stop.signal.aborted && (err as { code?: unknown }).code === ErrorCodes.CANCELLED) {
      progress?.done();
      cli.fail(`stopped; the steps recorded so far stay done: corral workflow resume ${runId ?? 'RUN_ID'} continues the run.`);
      return 130;
    }
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    progress?.done();
  }
  if (result === null) return EXIT_OK;
  if (values.json) cli.print(JSON.stringify(result, null, 2));
  else cli.print(resultText(result));
  return result.status === 'succeeded' ? EXIT_OK : result.status === 'waiting' ? EXIT_WAITING : EXIT_TOOL_FAILED;
}

function resultText(r: WorkflowResult): string {
  const rows = r.steps.map((s) => [
    s.id,
    s.status,
    s.tool ?? '',
    String(s.attempts),
    s.status === 'pending' ? '' : ms(s.durationMs),
    s.error && s.status !== 'succeeded' ? `${s.error.code}: ${s.error.message}` : (s.note ?? ''),
  ]);
  const lines = [
    `Workflow ${r.workflow}, run ${r.runId}: ${r.status}`,
    table(
      ['step', 'status', 'tool', 'tries', 'time', 'note'],
      rows.map((row) => row.map(cell)),
    ),
  ];
  if (r.status === 'succeeded' && r.outputs !== undefined) lines.push(JSON.stringify(r.outputs, null, 2));
  if (r.status === 'failed' && r.error)
    lines.push(`Failed${r.error.step ? ` at step ${r.error.step}` : ''}: ${r.error.code}: ${r.error.message}`);
  for (const p of r.pending ?? [])
    lines.push(
      `Waiting for approval of step ${p.step}: ${cell(p.prompt)}\n  corral workflow approve ${r.runId} ${p.step}   (or --reject; approval ${p.approvalId})`,
    );
  return lines.join('\n');
}

async function status(workflows: Workflows, runId: string, values: Values, cli: Cli): Promise<number> {
  const { run, events, pending } = await workflows.status(runId);
  if (values.json) {
    cli.print(JSON.stringify({ run, events, pending }, null, 2));
    return EXIT_OK;
  }
  const steps = stepStates(run, events);
  const lastNs = events.reduce((max, e) => (BigInt(e.at_ns) > max ? BigInt(e.at_ns) : max), BigInt(run.updated_ns));
  const lines = [
    `Workflow ${run.workflow}, run ${run.id}: ${run.status}`,
    `Started ${isoFromNs(run.created_ns)}, last change ${isoFromNs(lastNs)}`,
    // A step still running or waiting is timed to now (to the last change when the run is over).
    treeText(run, steps, run.status === 'running' || run.status === 'waiting' ? BigInt(Date.now()) * 1_000_000n : lastNs),
  ];
  if (run.error) lines.push(`Failed${run.error.step ? ` at step ${run.error.step}` : ''}: ${run.error.code}: ${run.error.message}`);
  if (run.status === 'succeeded' && run.outputs !== null) lines.push(JSON.stringify(run.outputs, null, 2));
  for (const a of pending)
    lines.push(
      `Waiting for approval of step ${a.workflow_step}: ${cell(a.prompt ?? '')}\n  corral workflow approve ${run.id} ${a.workflow_step}`,
    );
  if (run.status === 'running')
    lines.push(`Running, or interrupted: if no process drives it any more (it was stopped or killed), corral workflow resume ${run.id}`);
  if (run.status === 'waiting' && pending.length === 0) lines.push(`Its approvals are decided: corral workflow resume ${run.id} goes on`);
  cli.print(lines.join('\n'));
  return EXIT_OK;
}

async function list(workflows: Workflows, values: Values, cli: Cli): Promise<number> {
  const statuses = values.status ?? [];
  const known = ['running', 'waiting', 'succeeded', 'failed', 'cancelled'];
  for (const s of statuses) if (!known.includes(s)) throw new UsageError(`bad --status ${s}: ${known.join(', ')}.`);
  const limit = values.limit === undefined ? 100 : wholeNumber('--limit', values.limit, 1, 10_000);
  const runs = await workflows.list({
    ...(values.pending ? { pending: true } : {}),
    ...(statuses.length ? { status: statuses as WorkflowRunRecord['status'][] } : {}),
    limit,
  });
  if (values.json) {
    cli.print(JSON.stringify(runs, null, 2));
    return EXIT_OK;
  }
  if (runs.length === 0) {
    cli.print(values.pending ? 'No workflow run waits for an approval.' : 'No workflow runs.');
    return EXIT_OK;
  }
  const rows = runs.map((r) => [
    r.id,
    r.workflow,
    r.status,
    isoFromNs(r.created_ns).slice(0, 19).replace('T', ' '),
    r.status === 'waiting' && r.pending.length === 0
      ? `nothing: decided, resume it (corral workflow resume ${r.id})`
      : r.pending.map((a) => `${a.workflow_step}: ${a.prompt ?? ''}`).join('; '),
  ]);
  cli.print(
    table(
      ['run', 'workflow', 'status', 'started (UTC)', 'waiting for'],
      rows.map((row) => row.map(cell)),
    ),
  );
  return EXIT_OK;
}

async function validate(path: string, values: Values, cli: Cli): Promise<number> {
  const { text } = await readWorkflow(path);
  const { Corral } = await import('../corral.js');
  const { loadWorkflow } = await import('@corral/workflow');
  const corral = await Corral.create({ toolDirs: toolDirsFlag(values.tools), store: false });
  let workflow: Workflow;
  try {
    workflow = loadWorkflow(text, { source: path, knownTool: (ref) => corral.registry.has(ref) });
  } finally {
    await corral.close();
  }
  if (values.json) cli.print(JSON.stringify({ ok: true, name: workflow.name, steps: workflow.steps.length }, null, 2));
  else cli.print(`${path}: workflow ${workflow.name}, ${workflow.steps.length} steps: valid.`);
  return EXIT_OK;
}

/** The file's text and workflow, its form checked (tools are checked against the registry later). */
async function readWorkflow(path: string): Promise<{ text: string; workflow: Workflow }> {
  fileFlag('FILE', path);
  const { loadWorkflow } = await import('@corral/workflow');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`${path}: ${fileProblem(err)}.`);
  }
  return { text, workflow: loadWorkflow(text, { source: path }) };
}

/** --inputs FILE, then each --input NAME=VALUE over it. */
async function readInputs(values: Values, workflow: Workflow): Promise<Record<string, unknown>> {
  const inputs: Record<string, unknown> = {};
  if (values.inputs !== undefined) {
    fileFlag('--inputs', values.inputs);
    let parsed: unknown;
    try {
      parsed = parseYaml(await readFile(values.inputs, 'utf8'), { maxAliasCount: 100 });
    } catch (err) {
      throw new UsageError(`--inputs ${values.inputs}: not JSON or YAML (${(err as Error).message.split('\n')[0]}).`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new UsageError(`--inputs ${values.inputs}: must hold an object of input names to values.`);
    Object.assign(inputs, parsed);
  }
  for (const flag of values.input ?? []) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw new UsageError(`bad --input ${JSON.stringify(flag)}: expected NAME=VALUE (NAME=@FILE reads a file).`);
    const name = flag.slice(0, eq);
    let text = flag.slice(eq + 1);
    if (text.startsWith('@')) {
      const from = fileFlag(`--input ${name}=@`, text.slice(1));
      text = await readFile(from, 'utf8');
    }
    const type = workflow.inputs?.[name]?.type;
    if (type === undefined || type === 'string') {
      Object.defineProperty(inputs, name, { value: text, enumerable: true, writable: true, configurable: true });
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new UsageError(
        `--input ${name}: the input is of type ${type}, so its value is JSON (got ${JSON.stringify(text.slice(0, 80))}).`,
      );
    }
    Object.defineProperty(inputs, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return inputs;
}

/** --prior A,B: both above 0. */
export function priorFlag(text: string): { alpha: number; beta: number } {
  const parts = text.split(',');
  const [alpha, beta] = parts.map(Number);
  if (parts.length !== 2 || !(alpha! > 0 && beta! > 0) || !Number.isFinite(alpha) || !Number.isFinite(beta))
    throw new UsageError(`bad --prior ${text}: A,B with both above 0, e.g. 1,1.`);
  return { alpha: alpha!, beta: beta! };
}

function wholeNumber(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new UsageError(`bad ${flag} ${JSON.stringify(text)}: a whole number from ${min} to ${max}.`);
  return n;
}

const ms = (n: number) => (n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`);

interface StepState {
  id: string;
  status: string;
  tool: string | null;
  attempts: number;
  first: bigint | null;
  last: bigint | null;
  note: string | null;
}

/** Each step's state as its last event says it (for a display: the engine keeps its own). */
export function stepStates(run: Pick<WorkflowRunRecord, 'definition'>, events: readonly WorkflowEvent[]): StepState[] {
  const steps = ((run.definition as { steps?: { id: string; tool?: unknown }[] }).steps ?? []).map(
    (s): StepState => ({ id: s.id, status: 'pending', tool: null, attempts: 0, first: null, last: null, note: null }),
  );
  const byId = new Map(steps.map((s) => [s.id, s]));
  const word: Record<string, string> = {
    step_started: 'running',
    step_succeeded: 'succeeded',
    step_failed: 'failed',
    step_skipped: 'skipped',
    step_waiting: 'waiting',
    step_approved: 'approved',
    step_rejected: 'rejected',
  };
  for (const e of events) {
    const s = e.step === null ? undefined : byId.get(e.step);
    if (!s) continue;
    s.status = word[e.kind] ?? s.status;
    if (e.tool) s.tool = e.tool;
    s.attempts = Math.max(s.attempts, e.attempt);
    s.first ??= BigInt(e.at_ns);
    s.last = BigInt(e.at_ns);
    s.note = e.error ? `${e.error.code}: ${e.error.message}` : (e.note ?? s.note);
  }
  return steps;
}

/** Steps as a tree: each under the dependency it waits on last, with state and time. */
function treeText(run: Pick<WorkflowRunRecord, 'definition'>, steps: StepState[], now: bigint): string {
  const deps = new Map(
    ((run.definition as { steps?: { id: string; depends_on?: string[] }[] }).steps ?? []).map((s) => [s.id, s.depends_on ?? []]),
  );
  const children = new Map<string | null, string[]>();
  for (const s of steps) {
    const parent = (deps.get(s.id) ?? []).at(-1) ?? null;
    children.set(parent, [...(children.get(parent) ?? []), s.id]);
  }
  const byId = new Map(steps.map((s) => [s.id, s]));
  const mark: Record<string, string> = {
    pending: '·',
    running: '▸',
    waiting: '?',
    approved: '✓',
    succeeded: '✓',
    skipped: '-',
    failed: '✗',
    rejected: '✗',
  };
  const lines: string[] = [];
  const walk = (parent: string | null, prefix: string) => {
    const kids = children.get(parent) ?? [];
    kids.forEach((id, i) => {
      const s = byId.get(id)!;
      const lastKid = i === kids.length - 1;
      const branch = parent === null ? '' : lastKid ? '└─ ' : '├─ ';
      const end = s.status === 'running' || s.status === 'waiting' ? now : s.last;
      const time = s.first !== null && end !== null ? ms(Number(end - s.first) / 1e6) : '';
      const extra = [s.tool, s.attempts > 1 ? `${s.attempts} tries` : '', time, s.note ?? ''].filter(Boolean).join(', ');
      lines.push(`${prefix}${branch}${mark[s.status] ?? ' '} ${s.id}  ${s.status}${extra ? `  (${extra})` : ''}`);
      walk(id, parent === null ? prefix : prefix + (lastKid ? '   ' : '│  '));
    });
  };
  walk(null, '');
  return lines.map((l) => forTerminal(l, { oneLine: true })).join('\n');
}

/**
 * Live progress on stderr: on a terminal the step tree redrawn in place (with
 * running times ticking), elsewhere one line per event, so a log reads as a
 * story and stdout stays the result only.
 */
class Progress {
  readonly #out: NodeJS.WritableStream & { isTTY?: boolean };
  readonly #events: WorkflowEvent[] = [];
  readonly #run: Pick<WorkflowRunRecord, 'definition'>;
  #drawn = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** `definition`: the workflow, so the tree shows the steps that have not started too. */
  constructor(out: NodeJS.WritableStream & { isTTY?: boolean }, definition: unknown) {
    this.#out = out;
    this.#run = { definition };
  }

  event(e: WorkflowEvent): void {
    if (!this.#out.isTTY) {
      const at = isoFromNs(e.at_ns).slice(11, 23);
      const what = e.kind.replace(/^(step|run)_/, '');
      const tool = e.tool ? `${e.tool}${e.tool_version ? `@${e.tool_version}` : ''}` : '';
      // A failure says what failed; other events say why (the on_error action taken, who approved).
      const why = e.kind === 'step_failed' && e.error ? `${e.error.code}: ${e.error.message}` : (e.note ?? '');
      const tail = [tool, e.attempt > 1 ? `attempt ${e.attempt}` : '', why].filter(Boolean).join(', ');
      this.#out.write(`${forTerminal(`[${at}] ${e.step ?? 'run'} ${what}${tail ? ` (${tail})` : ''}`, { oneLine: true })}\n`);
      return;
    }
    this.#events.push(e);
    this.#timer ??= setInterval(() => this.#draw(), 250);
    this.#timer.unref?.();
    this.#draw();
  }

  #draw(): void {
    // Lines cut to the terminal's width: a wrapped line would throw the cursor-up count off.
    const width = Math.max(20, ((this.#out as { columns?: number }).columns ?? 100) - 1);
    const text = treeText(this.#run, stepStates(this.#run, this.#events), BigInt(Date.now()) * 1_000_000n)
      .split('\n')
      .map((line) => ([...line].length > width ? `${[...line].slice(0, width - 1).join('')}…` : line))
      .join('\n');
    const up = this.#drawn > 0 ? `\x1b[${this.#drawn}A\x1b[J` : '';
    this.#out.write(up + text + '\n');
    this.#drawn = text.split('\n').length;
  }

  done(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Every `{ kind: 'host', path }` in `value` (inputs, a step's literal mount
 * source) and every literal `host:` of a step's mounts, made absolute against
 * `cwd`. Templated ones are left alone: what they render from is made absolute
 * in the inputs.
 */
export function absoluteHostPaths<T>(value: T, cwd: string): T {
  const walk = (v: unknown, key?: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (typeof v !== 'object' || v === null) return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o))
      Object.defineProperty(out, k, { value: walk(x, k), enumerable: true, writable: true, configurable: true });
    const literal = (p: unknown): p is string => typeof p === 'string' && !p.includes('{{') && p !== '' && !isAbsolute(p);
    if (o.kind === 'host' && literal(o.path)) out.path = resolvePath(cwd, o.path);
    // A step's mount: `host: ./folder` is short for a host source.
    if (key === undefined && typeof o.guest === 'string' && literal(o.host)) out.host = resolvePath(cwd, o.host);
    return out;
  };
  return walk(value) as T;
}
