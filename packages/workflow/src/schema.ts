/**
 * The JSON Schema (draft-07) of a workflow file, shipped as
 * @corral/workflow/workflow.schema.json too (a test keeps the two equal),
 * and its check with ajv. What a schema cannot say (step ids that exist,
 * no cycles, expressions that parse) is checked in load.ts.
 */
import { loadAjv, type ErrorObject, type ValidateFunction } from '@corral/core/deps';
import { pointerToken } from './template.js';

/** Most steps a workflow may have. */
export const MAX_STEPS = 10_000;
/** Most alternatives a routed step may list. */
export const MAX_ALTERNATIVES = 16;

const TOOL_REF = '^[a-z0-9][a-z0-9._-]*(@[^\\s@]+)?$';
const STEP_ID = '^[a-z][a-z0-9_-]*$';
const NAME = '^[A-Za-z_][A-Za-z0-9_-]*$';
const ERROR_KEY = '^(E_[A-Z0-9_]+|default)$';

const toolRef = { type: 'string', pattern: TOOL_REF, maxLength: 128 } as const;
const stepInput = { type: 'object', description: 'The tool input; strings may hold {{ expr }} templates.' } as const;

/** One on_error action; ajv's discriminator picks the branch by `action`, so errors name only that branch's problems. */
const actions = [
  {
    type: 'object',
    required: ['action', 'max'],
    additionalProperties: false,
    properties: {
      action: { const: 'retry' },
      max: { type: 'integer', minimum: 1, maximum: 100, description: 'Attempts after the first.' },
      backoff_ms: { type: 'integer', minimum: 0, maximum: 3_600_000, description: 'Wait before the first retry; doubles each time.' },
      input: { ...stepInput, description: "Merged over the step's input for the retries (templated)." },
    },
  },
  {
    type: 'object',
    required: ['action', 'tool'],
    additionalProperties: false,
    properties: {
      action: { const: 'fallback' },
      tool: toolRef,
      input: { ...stepInput, description: "Replaces the step's input (templated)." },
    },
  },
  {
    type: 'object',
    required: ['action'],
    additionalProperties: false,
    properties: { action: { const: 'skip' } },
  },
  {
    type: 'object',
    required: ['action', 'tool'],
    additionalProperties: false,
    properties: {
      action: { const: 'offline' },
      tool: toolRef,
      input: { ...stepInput, description: "Replaces the step's input (templated)." },
    },
  },
  {
    type: 'object',
    required: ['action'],
    additionalProperties: false,
    properties: { action: { const: 'human_review' }, prompt: { type: 'string', maxLength: 4096 } },
  },
  {
    type: 'object',
    required: ['action'],
    additionalProperties: false,
    properties: { action: { const: 'fail' } },
  },
] as const;

export const workflowSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Corral workflow',
  description: 'Steps that run Corral tools in a fixed order, with conditions, error policies and approvals.',
  type: 'object',
  required: ['name', 'steps'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    name: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]*$', maxLength: 64 },
    description: { type: 'string', maxLength: 4096 },
    inputs: {
      type: 'object',
      maxProperties: 256,
      propertyNames: { pattern: NAME, maxLength: 64 },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        properties: {
          type: { enum: ['string', 'number', 'integer', 'boolean', 'object', 'array'] },
          description: { type: 'string', maxLength: 4096 },
          default: {},
          required: { type: 'boolean' },
        },
      },
    },
    outputs: {
      type: 'object',
      maxProperties: 256,
      propertyNames: { pattern: NAME, maxLength: 64 },
      description: 'Name → value; strings may hold {{ expr }} templates.',
    },
    steps: { type: 'array', minItems: 1, maxItems: MAX_STEPS, items: { $ref: '#/definitions/step' } },
  },
  definitions: {
    step: {
      type: 'object',
      required: ['id'],
      additionalProperties: false,
      // Exactly one of the two: load.ts words this one's error itself.
      oneOf: [{ required: ['tool'] }, { required: ['approval'] }],
      properties: {
        id: { type: 'string', pattern: STEP_ID, maxLength: 64 },
        description: { type: 'string', maxLength: 4096 },
        tool: {
          description: 'A tool (name or name@range), or alternatives to route between.',
          type: ['string', 'array'],
          pattern: TOOL_REF,
          maxLength: 128,
          minItems: 1,
          maxItems: MAX_ALTERNATIVES,
          uniqueItems: true,
          items: toolRef,
        },
        approval: {
          type: 'object',
          required: ['prompt'],
          additionalProperties: false,
          properties: { prompt: { type: 'string', minLength: 1, maxLength: 4096 } },
        },
        input: stepInput,
        depends_on: { type: 'array', maxItems: MAX_STEPS, uniqueItems: true, items: { type: 'string', maxLength: 64 } },
        condition: { type: 'string', minLength: 1 },
        on_error: {
          type: 'object',
          propertyNames: { pattern: ERROR_KEY, maxLength: 64 },
          additionalProperties: { $ref: '#/definitions/action' },
        },
        timeout_ms: { type: 'integer', minimum: 1, maximum: 3_600_000 },
        mounts: {
          type: 'array',
          maxItems: 32,
          items: {
            type: 'object',
            required: ['guest'],
            additionalProperties: false,
            properties: {
              guest: { type: 'string', pattern: '^/', maxLength: 4096 },
              host: {
                type: 'string',
                minLength: 1,
                maxLength: 4096,
                description: 'A host folder (templated): short for source { kind: host, path }.',
              },
              source: {
                type: ['object', 'string'],
                description:
                  'A mount source given to the host as it is (templated): { kind: memory, tree }, { kind: opfs, path } …, or a {{ }} that gives one.',
              },
              access: { enum: ['read', 'read-write'] },
            },
          },
        },
        route: {
          type: 'object',
          additionalProperties: false,
          properties: {
            strategy: { enum: ['utility', 'thompson'] },
            cost_weight: { type: 'number', minimum: 0, maximum: 1000 },
          },
        },
      },
    },
    action: {
      type: 'object',
      required: ['action'],
      discriminator: { propertyName: 'action' },
      oneOf: actions,
    },
  },
} as const;

/** One thing wrong with a workflow, by JSON pointer; `line`/`column` (1-based) when it came from a file. */
export interface WorkflowProblem {
  path: string;
  message: string;
  line?: number;
  column?: number;
}

let compiled: ValidateFunction | undefined;

/** A problem about a key itself (unknown, badly named): placed at the key, not its value. */
type SchemaProblem = WorkflowProblem & { atKey?: boolean };

export function schemaProblems(value: unknown): SchemaProblem[] {
  compiled ??= new (loadAjv().Ajv)({ allErrors: true, logger: false, discriminator: true, strict: false }).compile(workflowSchema);
  if (compiled(value)) return [];
  const problems: SchemaProblem[] = [];
  for (const e of compiled.errors ?? []) {
    const problem = describe(e);
    if (problem && !problems.some((p) => p.path === problem.path && p.message === problem.message)) problems.push(problem);
  }
  return problems;
}

const STEP_PATH = /^\/steps\/\d+$/;

function describe(e: ErrorObject): SchemaProblem | null {
  const p = e.params as Record<string, unknown>;
  const path = e.instancePath || '/';
  // A bad key name (propertyNames): point at the key.
  if (e.keyword === 'propertyNames') return null; // its inner error, just before, says it with the key
  if (e.propertyName !== undefined) {
    const inner = describe({ ...e, propertyName: undefined })?.message;
    return { path: `${e.instancePath}/${pointerToken(e.propertyName)}`, message: `is not a valid key: ${inner}`, atKey: true };
  }
  // A step's tool/approval choice is one message, not one per branch.
  if (STEP_PATH.test(e.instancePath) && e.schemaPath.startsWith('#/oneOf')) {
    return e.keyword === 'oneOf' ? { path, message: "must have exactly one of 'tool' or 'approval'" } : null;
  }
  switch (e.keyword) {
    case 'additionalProperties':
      // Point at the unknown key itself, so the line number is the key's.
      return { path: `${e.instancePath}/${pointerToken(String(p.additionalProperty))}`, message: 'is not a known key', atKey: true };
    case 'required':
      return { path, message: `must have '${String(p.missingProperty)}'` };
    case 'oneOf':
      return null; // on_error actions: the discriminator, or the chosen branch, says what is wrong
    case 'discriminator':
      return {
        path: `${e.instancePath}/action`,
        message: `must be one of ${actions.map((a) => a.properties.action.const).join(', ')}`,
      };
    case 'enum':
      return { path, message: `must be one of ${(p.allowedValues as unknown[]).map((v) => String(v)).join(', ')}` };
    case 'const':
      return { path, message: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'pattern':
      return { path, message: patternMessage(String(p.pattern)) };
    case 'type':
      return { path, message: `must be ${Array.isArray(p.type) ? (p.type as string[]).join(' or ') : String(p.type)}` };
    default:
      return { path, message: e.message ?? `fails ${e.keyword}` };
  }
}

function patternMessage(pattern: string): string {
  switch (pattern) {
    case STEP_ID:
      return 'must be a step id: a lower-case letter, then lower-case letters, digits, _ or -';
    case TOOL_REF:
      return "must be a tool name ('diff-summary') or a name and version range ('diff-summary@^1')";
    case NAME:
      return 'must be a name: a letter or _, then letters, digits, _ or -';
    case ERROR_KEY:
      return "must be an error code (E_NETWORK_BLOCKED …) or 'default'";
    default:
      return `must match ${pattern}`;
  }
}
