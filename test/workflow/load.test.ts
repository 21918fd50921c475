/**
 * Workflow files: what loads, and what is refused, with the exact message,
 * JSON pointer, line and column a person would fix it by.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CorralError } from '@corral/core';
import { loadWorkflow, MAX_STEPS, validateWorkflow, workflowSchema, type LoadOptions, type WorkflowProblem } from '@corral/workflow';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;

function problems(text: string, options: LoadOptions = {}): WorkflowProblem[] {
  try {
    loadWorkflow(text, { source: 'wf.yaml', ...options });
  } catch (err) {
    expect(CorralError.is(err, 'E_INPUT_VALIDATION')).toBe(true);
    return (err as CorralError<'E_INPUT_VALIDATION'>).details.problems as WorkflowProblem[];
  }
  throw new Error('loaded');
}

function message(text: string, options: LoadOptions = {}): string {
  try {
    loadWorkflow(text, { source: 'wf.yaml', ...options });
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('loaded');
}

const issueExample = `name: review-patch
inputs:
  diff: { type: string }
steps:
  - id: summary
    tool: diff-summary
    input: { diff: "{{ inputs.diff }}" }
  - id: deep
    tool: some-linter
    depends_on: [summary]
    condition: "steps.summary.output.totals.additions > 80"
    on_error:
      E_NETWORK_BLOCKED: { action: fallback, tool: offline-linter }
      E_RESOURCE_EXHAUSTED: { action: retry, max: 2, input: { strict: false } }
      default: { action: human_review }
  - id: sign-off
    approval: { prompt: "Merge this patch?" }
    depends_on: [deep]
`;

describe('loading', () => {
  it("loads the issue's example, as YAML and as the same shape in JSON", () => {
    const wf = loadWorkflow(issueExample);
    expect(wf.steps.map((s) => s.id)).toEqual(['summary', 'deep', 'sign-off']);
    expect(wf.steps[1]).toMatchObject({ on_error: { default: { action: 'human_review' } } });
    expect(loadWorkflow(JSON.stringify(wf), { source: 'wf.json' })).toEqual(wf);
  });

  it("loads the README's example", () => {
    const readme = readFileSync(join(ROOT, 'packages/workflow/README.md'), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(readme)![1]!;
    expect(loadWorkflow(yaml, { source: 'README.md' }).steps.map((s) => s.id)).toEqual(['summary', 'deep', 'sign-off']);
  });

  it('ships its JSON Schema as a file, equal to workflowSchema', () => {
    const file = JSON.parse(readFileSync(join(ROOT, 'packages/workflow/schema/workflow.schema.json'), 'utf8'));
    expect(file).toEqual(JSON.parse(JSON.stringify(workflowSchema)));
  });

  it('keeps a __proto__ key in an input as data', () => {
    const wf = loadWorkflow('name: p\nsteps:\n  - id: a\n    tool: t\n    input: { __proto__: { polluted: true } }\n');
    const input = (wf.steps[0] as { input: Record<string, unknown> }).input;
    expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
    expect(Object.keys(input)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('refusing bad workflow files', () => {
  it('a cycle, naming it', () => {
    const text = `name: loop
steps:
  - id: a
    tool: t
    depends_on: [c]
  - id: b
    tool: t
    depends_on: [a]
  - id: c
    tool: t
    depends_on: [b]
  - id: self
    tool: t
    depends_on: [self]
`;
    expect(message(text)).toBe(
      'Invalid workflow wf.yaml: 2 problems: line 5, column 5 (/steps/0/depends_on): depends_on forms a cycle: a -> c -> b -> a; ' +
        'line 14, column 5 (/steps/3/depends_on): depends_on forms a cycle: self -> self',
    );
  });

  it('a dependency on an unknown step, and a duplicate id', () => {
    expect(
      problems('name: x\nsteps:\n  - id: a\n    tool: t\n    depends_on: [b, nope]\n  - id: b\n    tool: t\n  - id: a\n    tool: t\n'),
    ).toEqual([
      { path: '/steps/2/id', message: "duplicate step id 'a' (also /steps/0)", line: 8, column: 9 },
      { path: '/steps/0/depends_on/1', message: "step 'a' depends on an unknown step 'nope'", line: 5, column: 21 },
    ]);
  });

  it('unknown tools, when the caller says which exist', () => {
    const knownTool = (ref: string) => ['diff-summary', 'some-linter'].includes(ref);
    expect(message(issueExample, { knownTool })).toBe(
      "Invalid workflow wf.yaml: 1 problem: line 13, column 52 (/steps/1/on_error/E_NETWORK_BLOCKED/tool): unknown tool 'offline-linter'",
    );
    expect(problems('name: r\nsteps:\n  - id: a\n    tool: [diff-summary, lint@^2]\n', { knownTool })).toEqual([
      { path: '/steps/0/tool/1', message: "unknown tool 'lint@^2'", line: 4, column: 26 },
    ]);
  });

  it('a bad expression, with the step, the field and the column inside the expression', () => {
    const text = issueExample.replace('additions > 80', 'additions >');
    expect(problems(text)).toEqual([
      {
        path: '/steps/1/condition',
        message: "step 'deep' condition, column 39: expected a value after '>'",
        line: 11,
        column: 55, // the '>' in the file: the string starts at column 17, after its quote
      },
    ]);
  });

  it('a bad template, deep in an input, and in the outputs', () => {
    const text = `name: t
inputs:
  diff: { type: string }
outputs:
  summary: "{{ steps.summary.output.text"
steps:
  - id: summary
    tool: diff-summary
    input:
      options:
        - { diff: "{{ inputs.diff | upper }}" }
`;
    expect(problems(text)).toEqual([
      {
        path: '/steps/0/input/options/0/diff',
        message: "step 'summary' input/options/0/diff, column 16: use '||' for boolean logic",
        line: 11,
        column: 35,
      },
      { path: '/outputs/summary', message: "outputs/summary, column 1: '{{' is not closed by '}}'", line: 5, column: 13 },
    ]);
  });

  it('reads of unknown inputs, unknown steps, steps that do not run before, and unknown names', () => {
    const text = `name: refs
inputs:
  diff: {}
steps:
  - id: a
    tool: t
    input: { x: "{{ inputs.dif }}", y: "{{ steps.b.output }}", z: "{{ diff }}" }
  - id: b
    tool: t
    depends_on: [a]
    condition: "steps.a.result == 1 || steps.nope.status == 'x' || steps.a"
`;
    expect(problems(text).map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      "7:21 /steps/0/input/x: step 'a' input/x, column 4: unknown input 'dif' (the workflow declares diff)",
      "7:44 /steps/0/input/y: step 'a' input/y, column 4: steps.b does not run before step 'a': add 'b' to its depends_on (directly or through a step it depends on)",
      "7:71 /steps/0/input/z: step 'a' input/z, column 4: unknown name 'diff': expressions start from inputs or steps (strings are quoted)",
      "11:17 /steps/1/condition: step 'b' condition, column 1: steps.a.result does not exist: a step has output, status and error",
      "11:40 /steps/1/condition: step 'b' condition, column 24: unknown step 'nope'",
      "11:68 /steps/1/condition: step 'b' condition, column 52: steps.a alone is not a value: use steps.a.output, .status or .error",
    ]);
  });

  it('a step that reads a step two depends_on away is fine', () => {
    expect(() =>
      loadWorkflow(
        'name: ok\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t, depends_on: [a] }\n  - { id: c, tool: t, depends_on: [b], condition: "steps.a.status == \'succeeded\'" }\n',
      ),
    ).not.toThrow();
  });

  it('unknown keys, a step with both or neither of tool and approval, a bad id, a bad action', () => {
    const text = `name: shape
colour: blue
steps:
  - id: Bad_Id
    tool: t
  - id: both
    tool: t
    approval: { prompt: p }
  - id: neither
    input: {}
  - id: acts
    tool: t
    on_error:
      E_NETWORK_BLOCKED: { action: retry }
      E_RESOURCE_EXHAUSTED: { action: retry, max: 1, backof_ms: 5 }
      default: { action: explode }
      oops: { action: skip }
`;
    expect(problems(text).map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      '2:1 /colour: is not a known key',
      '4:9 /steps/0/id: must be a step id: a lower-case letter, then lower-case letters, digits, _ or -',
      "6:5 /steps/1: must have exactly one of 'tool' or 'approval'",
      "9:5 /steps/2: must have exactly one of 'tool' or 'approval'",
      "17:7 /steps/3/on_error/oops: is not a valid key: must be an error code (E_NETWORK_BLOCKED …) or 'default'",
      "14:7 /steps/3/on_error/E_NETWORK_BLOCKED: must have 'max'",
      '15:54 /steps/3/on_error/E_RESOURCE_EXHAUSTED/backof_ms: is not a known key',
      '16:26 /steps/3/on_error/default/action: must be one of retry, fallback, skip, offline, human_review, fail',
    ]);
  });

  it('tool-only keys on an approval step, an approval that retries, a route without alternatives, a default of the wrong type', () => {
    const text = `name: misc
inputs:
  n: { type: integer, default: "five" }
steps:
  - id: gate
    approval: { prompt: ok? }
    timeout_ms: 5
    on_error: { default: { action: retry, max: 1 } }
  - id: one
    tool: t
    route: { strategy: thompson }
`;
    expect(problems(text).map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`)).toEqual([
      "3:32 /inputs/n/default: must be an integer, as the input's type says",
      "7:5 /steps/0/timeout_ms: is only for tool steps; step 'gate' is an approval",
      '8:36 /steps/0/on_error/default/action: an approval step can only skip or fail when it is rejected',
      "11:5 /steps/1/route: routes between alternatives: give 'tool' a list of tools",
    ]);
  });

  it('YAML and JSON syntax errors, with their position', () => {
    expect(problems('name: x\nsteps:\n  - id: a\n   tool: t\n')).toEqual([
      { path: '/', message: 'Sequence item without - indicator', line: 4, column: 1 },
    ]);
    expect(problems('name: x\nname: y\nsteps: []\n')[0]).toMatchObject({
      path: '/',
      message: 'Map keys must be unique',
      line: 2,
      column: 1,
    });
    expect(problems('{"name": "x", "steps": [],}', { source: 'wf.json' })[0]!.message).toMatch(/^is not JSON: /);
    // JSON.parse's character offset, turned into the line and column of the trailing comma's successor.
    expect(problems('{\n  "name": "x",\n  "steps": [],\n}\n', { source: 'wf.json' })[0]).toMatchObject({
      message: expect.stringMatching(/^is not JSON: .*\(a trailing comma\?\)$/),
      line: 4,
      column: 1,
    });
  });

  it('what is too big: the file, the step count, the nesting', () => {
    expect(message('#'.repeat(4 * 1024 * 1024 + 1))).toBe('Invalid workflow wf.yaml: 1 problem: /: is larger than 4194304 bytes');
    const many = { name: 'many', steps: Array.from({ length: MAX_STEPS + 1 }, (_, i) => ({ id: `s${i}`, tool: 't' })) };
    expect(() => validateWorkflow(many)).toThrow('Invalid workflow workflow: 1 problem: /steps: must NOT have more than 10000 items');
    let deep: unknown = 1;
    for (let i = 0; i < 70; i++) deep = { x: deep };
    expect(() => validateWorkflow({ name: 'deep', steps: [{ id: 'a', tool: 't', input: deep }] })).toThrow(
      'Invalid workflow workflow: 1 problem: /: nests deeper than 64 levels',
    );
  });

  it('a workflow of 10,000 steps in one chain loads (no recursion over the chain)', () => {
    const steps = Array.from({ length: MAX_STEPS }, (_, i) =>
      i === 0
        ? { id: 's0', tool: 't' }
        : { id: `s${i}`, tool: 't', depends_on: [`s${i - 1}`], condition: `steps.s0.status == 'succeeded'` },
    );
    const started = performance.now();
    expect(validateWorkflow({ name: 'chain', steps }).steps).toHaveLength(MAX_STEPS);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
