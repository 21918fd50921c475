/**
 * Reading a workflow file: YAML or JSON text → a validated, typed
 * Workflow, or E_INPUT_VALIDATION listing every problem with its JSON
 * pointer and, for a file, its line and column. Past the schema, a
 * workflow's steps must form a DAG, its expressions and templates must
 * parse and read only inputs it declares and steps that run before.
 */
import { CorralError, ErrorCodes, MAX_WORKFLOW_RECORD_BYTES } from '@corral/core';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, Scalar, type Document, type Node } from './deps.js';
import { ExpressionError, parseExpression, references, type Expr } from './expression.js';
import { schemaProblems, type WorkflowProblem } from './schema.js';
import {
  compileValue,
  parseTemplate,
  pointerToken,
  templatesIn,
  type CompiledValue,
  type Template,
  type TemplateProblem,
} from './template.js';
import { isApprovalStep, type OnErrorAction, type Workflow, type WorkflowInput, type WorkflowStep } from './types.js';

/** Largest workflow file read, in bytes (a run keeps the definition in its record). */
export const MAX_WORKFLOW_BYTES = MAX_WORKFLOW_RECORD_BYTES;
/** Deepest nesting of a workflow document. */
export const MAX_WORKFLOW_DEPTH = 64;
/** Problems listed in one error, at most. */
const MAX_PROBLEMS = 100;

export interface ValidateOptions {
  /** Whether a tool exists; called with each tool reference as written (`name` or `name@range`). */
  knownTool?: (name: string) => boolean;
}

export interface LoadOptions extends ValidateOptions {
  /** Where the text came from (a file path), for messages. */
  source?: string;
  /** Default: `json` when `source` ends in .json, else `yaml`. */
  format?: 'yaml' | 'json';
}

/** A step with its expressions and templates parsed: what the engine runs. */
export interface CompiledStep {
  def: WorkflowStep;
  index: number;
  id: string;
  deps: string[];
  approval: boolean;
  /** The tool, or the alternatives to route between. */
  tools: string[];
  condition: Expr | null;
  input: CompiledValue | null;
  prompt: Template | null;
  mounts: Array<{ guest: string; access: 'read' | 'read-write'; host: CompiledValue | null; source: CompiledValue | null }>;
  onError: Map<string, CompiledAction>;
}

export type CompiledAction = OnErrorAction & { key: string; compiledInput: CompiledValue | null; compiledPrompt: Template | null };

export interface CompiledWorkflow {
  workflow: Workflow;
  steps: CompiledStep[];
  byId: Map<string, CompiledStep>;
  outputs: CompiledValue | null;
}

/** A problem before it is placed in a file: `offset` is a 0-based position inside the string at `path`. */
interface Found {
  path: string;
  message: string;
  offset?: number;
  /** The problem is the key at `path` (unknown, badly named), not its value. */
  atKey?: boolean;
}

/**
 * Parse and validate workflow text (YAML, or JSON). Throws CorralError
 * E_INPUT_VALIDATION whose `details.problems` are `{ path, message, line?, column? }`.
 */
export function loadWorkflow(text: string, options: LoadOptions = {}): Workflow {
  const source = options.source ?? 'workflow';
  const format = options.format ?? (/\.json$/i.test(source) ? 'json' : 'yaml');
  if (typeof text !== 'string') throw invalid(source, [{ path: '/', message: 'must be text' }]);
  if (
    text.length > MAX_WORKFLOW_BYTES ||
    (text.length * 3 > MAX_WORKFLOW_BYTES && new TextEncoder().encode(text).length > MAX_WORKFLOW_BYTES)
  ) {
    throw invalid(source, [{ path: '/', message: `is larger than ${MAX_WORKFLOW_BYTES} bytes` }]);
  }
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    // YAML 1.2 core schema, no merge keys, few aliases: a workflow is plain data.
    doc = parseDocument(text, { schema: 'core', uniqueKeys: true, prettyErrors: true, strict: true, merge: false, lineCounter });
  } catch (err) {
    throw invalid(source, [{ path: '/', message: `cannot be parsed: ${err instanceof Error ? err.message : String(err)}` }]);
  }
  if (doc.errors.length > 0) {
    throw invalid(
      source,
      doc.errors.map((e) => ({
        path: '/',
        // yaml's first line repeats the position, which problemText adds itself.
        message: e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, ''),
        ...(e.linePos ? { line: e.linePos[0].line, column: e.linePos[0].col } : {}),
      })),
    );
  }
  if (format === 'json') {
    try {
      JSON.parse(text);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // JSON.parse says a character offset; a person wants the line and column.
      const at = /at position (\d+)/.exec(message);
      const where = at ? lineCounter.linePos(Number(at[1])) : undefined;
      throw invalid(source, [
        {
          path: '/',
          message: `is not JSON: ${message.replace(/ in JSON at position \d+.*$/s, '')}${/trailing comma|property name/i.test(message) ? ' (a trailing comma?)' : ''}`,
          ...(where ? { line: where.line, column: where.col } : {}),
        },
      ]);
    }
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 50 });
  } catch (err) {
    throw invalid(source, [{ path: '/', message: err instanceof Error ? err.message : String(err) }]);
  }
  const { problems } = check(value, options);
  if (problems.length > 0)
    throw invalid(
      source,
      problems.map((p) => place(p, doc, lineCounter, text)),
    );
  return value as Workflow;
}

/** Validate a workflow given as data (parsed JSON, a stored definition). Throws like loadWorkflow, without line numbers. */
export function validateWorkflow(value: unknown, options: ValidateOptions = {}): Workflow {
  const { problems } = check(value, options);
  if (problems.length > 0)
    throw invalid(
      'workflow',
      problems.map(({ path, message }) => ({ path, message })),
    );
  return value as Workflow;
}

const compiledCache = new WeakMap<object, CompiledWorkflow>();

/** The engine's view of a workflow: validated (without tool checks) and compiled, once per object. */
export function compileWorkflow(value: unknown): CompiledWorkflow {
  if (typeof value === 'object' && value !== null) {
    const cached = compiledCache.get(value);
    if (cached) return cached;
  }
  const { problems, compiled } = check(value, {});
  if (problems.length > 0 || !compiled)
    throw invalid(
      'workflow',
      problems.map(({ path, message }) => ({ path, message })),
    );
  compiledCache.set(value as object, compiled);
  return compiled;
}

function invalid(source: string, problems: WorkflowProblem[]): CorralError {
  const n = problems.length;
  const text = problems.map(problemText).join('; ');
  return new CorralError(ErrorCodes.INPUT_VALIDATION, `Invalid workflow ${source}: ${n} problem${n === 1 ? '' : 's'}: ${text}`, {
    source,
    problems,
  });
}

/** "line 7, column 5 (/steps/1/depends_on): message", or without the line when there is none. */
export function problemText(p: WorkflowProblem): string {
  return p.line !== undefined ? `line ${p.line}, column ${p.column} (${p.path}): ${p.message}` : `${p.path}: ${p.message}`;
}

function depthOf(value: unknown): number {
  // A loop, not recursion: the value's depth is what is being bounded.
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) max = d;
    if (max > MAX_WORKFLOW_DEPTH) return max;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

function check(value: unknown, options: ValidateOptions): { problems: Found[]; compiled?: CompiledWorkflow } {
  if (depthOf(value) > MAX_WORKFLOW_DEPTH) return { problems: [{ path: '/', message: `nests deeper than ${MAX_WORKFLOW_DEPTH} levels` }] };
  const shape = schemaProblems(value);
  if (shape.length > 0) return { problems: shape.slice(0, MAX_PROBLEMS) };
  const problems: Found[] = [];
  const compiled = compile(value as Workflow, problems, options);
  return problems.length > 0 ? { problems: problems.slice(0, MAX_PROBLEMS) } : { problems, compiled };
}

/** Semantic checks on a workflow the schema accepted, compiling it on the way. */
function compile(wf: Workflow, problems: Found[], options: ValidateOptions): CompiledWorkflow {
  const inputs = wf.inputs ?? {};
  for (const [name, spec] of Object.entries(inputs)) {
    if (spec.default !== undefined && spec.type && !hasType(spec.default, spec.type)) {
      problems.push({ path: `/inputs/${pointerToken(name)}/default`, message: `must be ${article(spec.type)}, as the input's type says` });
    }
  }

  // Ids: unique, then every depends_on names one.
  const index = new Map<string, number>();
  wf.steps.forEach((step, i) => {
    const first = index.get(step.id);
    if (first !== undefined) problems.push({ path: `/steps/${i}/id`, message: `duplicate step id '${step.id}' (also /steps/${first})` });
    else index.set(step.id, i);
  });
  const deps: number[][] = wf.steps.map((step, i) =>
    (step.depends_on ?? []).flatMap((dep, j) => {
      const at = index.get(dep);
      if (at === undefined) {
        problems.push({ path: `/steps/${i}/depends_on/${j}`, message: `step '${step.id}' depends on an unknown step '${dep}'` });
        return [];
      }
      return [at];
    }),
  );
  const acyclic = findCycles(wf.steps, deps, problems);
  const ancestors = acyclic ? ancestorSets(deps) : null;

  const knownTool = options.knownTool;
  const checkTool = (ref: string, path: string): void => {
    if (knownTool && !knownTool(ref)) problems.push({ path, message: `unknown tool '${ref}'` });
  };

  const steps: CompiledStep[] = wf.steps.map((def, i) => {
    const at = `/steps/${i}`;
    const where = `step '${def.id}'`;
    const approval = isApprovalStep(def);
    const scopeOk = (id: string): string | null => {
      const j = index.get(id);
      if (j === undefined) return `unknown step '${id}'`;
      if (ancestors && !has(ancestors[i]!, j)) {
        return `steps.${id} does not run before ${where}: add '${id}' to its depends_on (directly or through a step it depends on)`;
      }
      return null;
    };
    const expressions = new Checker(problems, inputs, scopeOk);

    const condition = def.condition !== undefined ? expressions.expression(def.condition, `${at}/condition`, `${where} condition`) : null;
    const input = def.input !== undefined ? expressions.value(def.input, `${at}/input`, `${where} input`) : null;
    let tools: string[] = [];
    let prompt: Template | null = null;
    const mounts: CompiledStep['mounts'] = [];
    if (approval) {
      prompt = expressions.template(def.approval.prompt, `${at}/approval/prompt`, `${where} prompt`);
      for (const key of ['mounts', 'route', 'timeout_ms'] as const) {
        if (key in def) problems.push({ path: `${at}/${key}`, message: `is only for tool steps; ${where} is an approval`, atKey: true });
      }
    } else {
      tools = typeof def.tool === 'string' ? [def.tool] : def.tool;
      if (typeof def.tool === 'string') checkTool(def.tool, `${at}/tool`);
      else
        def.tool.forEach((t, j) => {
          checkTool(t, `${at}/tool/${j}`);
        });
      if (def.route && typeof def.tool === 'string') {
        problems.push({ path: `${at}/route`, message: `routes between alternatives: give 'tool' a list of tools` });
      }
      (def.mounts ?? []).forEach((m, j) => {
        const path = `${at}/mounts/${j}`;
        const host = m.host !== undefined ? expressions.value(m.host, `${path}/host`, `${where} mounts/${j}/host`) : null;
        const source = m.source !== undefined ? expressions.value(m.source, `${path}/source`, `${where} mounts/${j}/source`) : null;
        if (host && source) problems.push({ path: `${path}/source`, message: 'give host or source, not both', atKey: true });
        if (source?.kind === 'constant') {
          problems.push({ path: `${path}/source`, message: 'must be an object ({ kind: …, … }) or a {{ }} template that gives one' });
        }
        mounts.push({ guest: m.guest, access: m.access ?? 'read', host, source });
      });
    }

    const onError = new Map<string, CompiledAction>();
    for (const [key, action] of Object.entries(def.on_error ?? {})) {
      const path = `${at}/on_error/${pointerToken(key)}`;
      if (approval && action.action !== 'skip' && action.action !== 'fail') {
        problems.push({ path: `${path}/action`, message: `an approval step can only skip or fail when it is rejected` });
      }
      let compiledInput: CompiledValue | null = null;
      let compiledPrompt: Template | null = null;
      if ((action.action === 'fallback' || action.action === 'offline') && action.tool) checkTool(action.tool, `${path}/tool`);
      if ('input' in action && action.input !== undefined) {
        compiledInput = expressions.value(action.input, `${path}/input`, `${where} on_error ${key} input`);
      }
      if (action.action === 'human_review' && action.prompt !== undefined) {
        compiledPrompt = expressions.template(action.prompt, `${path}/prompt`, `${where} on_error ${key} prompt`);
      }
      onError.set(key, { ...action, key, compiledInput, compiledPrompt });
    }
    return { def, index: i, id: def.id, deps: def.depends_on ?? [], approval, tools, condition, input, prompt, mounts, onError };
  });

  // Outputs are rendered after every step ended: any step may be read.
  const outputChecker = new Checker(problems, inputs, (id) => (index.has(id) ? null : `unknown step '${id}'`));
  const outputs = wf.outputs !== undefined ? outputChecker.value(wf.outputs, '/outputs', 'outputs') : null;

  return { workflow: wf, steps, byId: new Map(steps.map((s) => [s.id, s])), outputs };
}

/** Parses expressions and templates of one place, checking what they read; problems are collected. */
class Checker {
  constructor(
    readonly problems: Found[],
    readonly inputs: Record<string, WorkflowInput>,
    /** Why a step may not be read here, or null when it may. */
    readonly stepProblem: (id: string) => string | null,
  ) {}

  #report(path: string, where: string, err: ExpressionError): void {
    this.problems.push({ path, message: `${where}, column ${err.column}: ${err.message}`, offset: err.column - 1 });
  }

  /** Check what an expression reads; `pos` values are 0-based within the string at `path`. */
  #references(expr: Expr, path: string, where: string): void {
    for (const ref of references(expr)) {
      const why = this.#referenceProblem(ref.path);
      if (why) this.#report(path, where, new ExpressionError(why, ref.pos + 1));
    }
  }

  #referenceProblem(path: string[]): string | null {
    const [root, name, field] = path;
    if (root === 'inputs') {
      if (name === undefined || Object.hasOwn(this.inputs, name)) return null;
      const declared = Object.keys(this.inputs);
      return `unknown input '${name}' (${declared.length ? `the workflow declares ${declared.join(', ')}` : 'the workflow declares no inputs'})`;
    }
    if (root === 'steps') {
      if (name === undefined)
        return 'read a step as steps.ID.output, steps.ID.status or steps.ID.error (steps alone, or steps[expr], is not allowed)';
      const why = this.stepProblem(name);
      if (why) return why;
      if (field === undefined) return `steps.${name} alone is not a value: use steps.${name}.output, .status or .error`;
      if (field !== 'output' && field !== 'status' && field !== 'error') {
        return `steps.${name}.${field} does not exist: a step has output, status and error`;
      }
      return null;
    }
    return `unknown name '${root}': expressions start from inputs or steps (strings are quoted)`;
  }

  expression(source: string, path: string, where: string): Expr | null {
    try {
      const expr = parseExpression(source);
      this.#references(expr, path, where);
      return expr;
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      this.#report(path, where, err);
      return null;
    }
  }

  template(source: string, path: string, where: string): Template | null {
    try {
      const template = parseTemplate(source);
      for (const part of template.parts) if (typeof part !== 'string') this.#references(part.expr, path, where);
      return template;
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      this.#report(path, where, err);
      return null;
    }
  }

  value(value: unknown, path: string, where: string): CompiledValue {
    const failed: TemplateProblem[] = [];
    const compiled = compileValue(value, failed);
    for (const f of failed) this.#report(path + f.pointer, `${where}${f.pointer}`, f.error);
    for (const { pointer, template } of templatesIn(compiled)) {
      for (const part of template.parts) if (typeof part !== 'string') this.#references(part.expr, path + pointer, `${where}${pointer}`);
    }
    return compiled;
  }
}

/** Report each cycle once, as `a -> b -> a` (-> reads "depends on"); true when there is none. Iterative: 10,000 steps in a chain must not overflow the stack. */
function findCycles(steps: WorkflowStep[], deps: number[][], problems: Found[]): boolean {
  const color = new Uint8Array(steps.length); // 0 unseen, 1 on the path, 2 done
  const onPath = new Int32Array(steps.length).fill(-1);
  const reported = new Set<string>();
  for (let root = 0; root < steps.length; root++) {
    if (color[root] !== 0) continue;
    const stack: Array<[node: number, next: number]> = [[root, 0]];
    color[root] = 1;
    onPath[root] = 0;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [v, k] = top;
      const out = deps[v]!;
      if (k < out.length) {
        top[1]++;
        const w = out[k]!;
        if (color[w] === 0) {
          color[w] = 1;
          onPath[w] = stack.length;
          stack.push([w, 0]);
        } else if (color[w] === 1) {
          const cycle = stack.slice(onPath[w]!).map(([n]) => n);
          // Start at the cycle's first step in the file, so the message does not depend on the walk.
          const first = cycle.indexOf(Math.min(...cycle));
          const ordered = [...cycle.slice(first), ...cycle.slice(0, first)];
          const key = [...ordered].sort((a, b) => a - b).join(',');
          if (!reported.has(key)) {
            reported.add(key);
            const ids = [...ordered, ordered[0]!].map((n) => steps[n]!.id);
            problems.push({ path: `/steps/${ordered[0]}/depends_on`, message: `depends_on forms a cycle: ${ids.join(' -> ')}` });
          }
        }
      } else {
        color[v] = 2;
        onPath[v] = -1;
        stack.pop();
      }
    }
  }
  return reported.size === 0;
}

/** Each step's ancestors through depends_on, as bit sets (10,000 steps: 12.5 MB at most), built in topological order. */
function ancestorSets(deps: number[][]): Uint32Array[] {
  const n = deps.length;
  const words = Math.ceil(n / 32);
  const sets: Uint32Array[] = new Array(n);
  const done = new Uint8Array(n);
  // Depth-first post-order without recursion: a step's set is built after its dependencies'.
  for (let root = 0; root < n; root++) {
    if (done[root]) continue;
    const stack: Array<[number, number]> = [[root, 0]];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [v, k] = top;
      if (k < deps[v]!.length) {
        top[1]++;
        const w = deps[v]![k]!;
        if (!done[w]) stack.push([w, 0]);
      } else {
        stack.pop();
        if (done[v]) continue;
        const set = new Uint32Array(words);
        for (const w of deps[v]!) {
          const other = sets[w]!;
          for (let x = 0; x < words; x++) set[x]! |= other[x]!;
          set[w >> 5]! |= 1 << (w & 31);
        }
        sets[v] = set;
        done[v] = 1;
      }
    }
  }
  return sets;
}

function has(set: Uint32Array, i: number): boolean {
  return (set[i >> 5]! & (1 << (i & 31))) !== 0;
}

export function hasType(value: unknown, type: WorkflowInput['type']): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return true;
  }
}

export function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** Put a problem in the file: the line and column of the node its pointer names (of a character inside a string, when `offset` is set). */
function place(p: Found, doc: Document, lines: LineCounter, text: string): WorkflowProblem {
  const { path, message } = p;
  let node: unknown = doc.contents;
  let key: Node | null = null;
  let found = true;
  for (const raw of path.split('/').slice(1)) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (isMap(node)) {
      const pair = node.items.find((item) => (isScalar(item.key) ? String(item.key.value) : String(item.key)) === seg);
      if (!pair) {
        found = false;
        break;
      }
      key = isScalar(pair.key) ? pair.key : null;
      node = pair.value;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (item === undefined) {
        found = false;
        break;
      }
      key = null;
      node = item;
    } else {
      found = false;
      break;
    }
  }
  let at: number | undefined;
  if (found && p.offset !== undefined && isScalar(node) && node.range) at = stringOffset(node, text, p.offset);
  if (at === undefined && found) {
    // A scalar's own position names it best; a key names an object or list better than its
    // first item does (which may sit lines below), and a problem that is about the key itself.
    const target = key?.range && (p.atKey || !isScalar(node)) ? key : (node as Node | null);
    at = target?.range?.[0];
  }
  if (at === undefined) at = (node as Node | null)?.range?.[0];
  if (at === undefined) return { path, message };
  const { line, col } = lines.linePos(at);
  return { path, message, line, column: col };
}

/** The file offset of character `offset` of a string scalar, when the source spells the string literally (no escapes, one line). */
function stringOffset(node: Scalar, text: string, offset: number): number | undefined {
  const [start, end] = node.range!;
  const raw = text.slice(start, end);
  const value = String(node.value);
  if (node.type === Scalar.PLAIN && raw === value) return start + offset;
  if ((node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE) && raw.slice(1, -1) === value) return start + 1 + offset;
  return undefined;
}
