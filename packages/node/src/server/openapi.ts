/**
 * The OpenAPI 3.1 document of `corral serve`, generated from the tools that
 * are registered when it is asked for.
 *
 * Shape, chosen for client generators: besides the generic `POST /execute`
 * (tool named in the body, input of any shape), every tool gets its own
 * operation, `POST /execute/{name}` (operationId `executeDiffSummary`), whose
 * request and result schemas are the tool's own `input_schema` and
 * `output_schema`. Generators (openapi-generator, openapi-typescript, …)
 * turn that into one typed method per tool; a `oneOf` over tools on
 * `/execute` would need a discriminator on a `const` property, which most of
 * them type poorly or not at all.
 *
 * Tool schemas are JSON Schema (draft-07 unless they say 2020-12), the
 * dialect family OpenAPI 3.1 uses; they are embedded as written, except that
 * a root `$id`/`$schema` is dropped and local `$ref`s ("#/definitions/x")
 * are re-pointed at where the schema now sits in the document.
 */
import type { Tool } from '@corral/core';
import { CorralError, ErrorCodes, specDefaults } from '@corral/core';
import { workflowInputSchema, workflowResultSchema, type Workflow } from '@corral/workflow';
import { statusTable } from './status.js';

export interface OpenApiOptions {
  /** The version reported in `info.version` (Corral's). */
  version: string;
  /** Bearer auth is required (documented as the `bearerAuth` scheme, and 401s). */
  auth: boolean;
  /** An approver token is configured (the `approverAuth` scheme: the only one POST /approvals/{id} takes). Default false. */
  approverAuth?: boolean;
  /** How long POST /execute holds a call waiting for approval before answering 202, in ms (documented on 202). */
  approvalWaitMs?: number;
  /** The Host header is checked (documented as 403s). */
  hostCheck: boolean;
  /** Largest request body, in bytes (documented on 413). */
  maxBodyBytes: number;
  /** An MCP endpoint is mounted at /mcp. */
  mcp: boolean;
  /** The workflows served (each gets its own typed operation, as tools do). Default none. */
  workflows?: readonly Workflow[];
}

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
// Bodies that are a result envelope or `{ error }` use anyOf, not oneOf: an envelope has an `error` too, so it matches both.
const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
const json = (schema: Json) => ({ 'application/json': { schema } });

/**
 * `diff-summary` → `DiffSummary`; names that would collide get `_2`, `_3`…, and so does one whose
 * schemas would take the name of a schema of the document's own (`clashes`: a tool named `execute`
 * would otherwise replace ExecuteRequest).
 */
function pascalNames(names: string[], clashes: (candidate: string) => boolean = () => false): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  for (const name of names) {
    const base =
      name
        .split(/[._-]+/)
        .filter(Boolean)
        .map((part) => part[0]!.toUpperCase() + part.slice(1))
        .join('') || 'Tool';
    let candidate = base;
    for (let n = 2; taken.has(candidate) || clashes(candidate); n++) candidate = `${base}_${n}`;
    taken.add(candidate);
    out.set(name, candidate);
  }
  return out;
}

/**
 * Keywords whose values are data, not schemas: a `$ref` inside them is left
 * alone. (Some OpenAPI tools, swagger-parser among them, still read a
 * `{"$ref": …}` object inside `const` or `enum` as a reference and fail on
 * it; JSON Schema has no way to escape it.)
 */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * A tool's schema, copied, ready to sit at `#/components/schemas/NAME`:
 * local `$ref`s are re-pointed there, a root `$id`/`$schema` dropped
 * (the document's dialect is JSON Schema 2020-12, the family tool schemas use).
 * A loop with its own stack: schemas may be deeply nested.
 */
export function embedSchema(schema: unknown, at: string): unknown {
  if (typeof schema !== 'object' || schema === null) return schema ?? true;
  const copy = structuredClone(schema) as Json;
  delete copy.$id;
  delete copy.$schema;
  const todo: unknown[] = [copy];
  while (todo.length > 0) {
    const node = todo.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      todo.push(...node);
      continue;
    }
    const obj = node as Json;
    for (const [key, value] of Object.entries(obj)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#')) {
        obj.$ref = `${at}${value.slice(1)}`;
      } else if (!DATA_KEYWORDS.has(key)) {
        todo.push(value);
      }
    }
  }
  return copy;
}

/** The first sentence of a description, for an operation's summary. */
function summaryOf(text: string | undefined, fallback: string): string {
  if (!text) return fallback;
  const first = text
    .split(/(?<=\.)\s/)[0]!
    .replace(/\s+/g, ' ')
    .trim();
  return first.length <= 120 ? first : `${first.slice(0, 117)}…`;
}

/** The newest version of each tool name (Registry.list orders name ascending, version descending). */
export function newestTools(tools: Tool[]): Tool[] {
  const seen = new Set<string>();
  return tools.filter((t) => !seen.has(t.spec.name) && (seen.add(t.spec.name), true));
}

/** The envelope `POST /execute` returns (InvokeResult), with `output` typed as given. */
function resultSchema(output: Json, description: string): Json {
  return {
    type: 'object',
    description,
    required: [
      'ok',
      'tool',
      'version',
      'output',
      'error',
      'exit_code',
      'duration_ms',
      'stdout_head',
      'stderr_tail',
      'stdout_truncated',
      'stderr_truncated',
    ],
    properties: {
      ok: { type: 'boolean', description: 'True when the tool succeeded and its output matched its output_schema.' },
      tool: { type: 'string', description: 'The tool that ran (the name asked for, when none matched).' },
      version: { type: ['string', 'null'], description: 'The version that ran; null when no tool matched.' },
      output: { anyOf: [output, { type: 'null' }], description: "The tool's output; null when ok is false." },
      error: { anyOf: [ref('Error'), { type: 'null' }] },
      exit_code: { type: ['integer', 'null'] },
      duration_ms: { type: 'number' },
      stdout_head: { type: 'string', description: 'The first 1 KiB of stdout.' },
      stderr_tail: { type: 'string', description: 'The last 1 KiB of stderr.' },
      stdout_truncated: { type: 'boolean' },
      stderr_truncated: { type: 'boolean' },
      snapshot: ref('SnapshotRef'),
    },
  };
}

/** A guest mount path as tool specs declare them: /name[/name…], no '.', '..' or empty segments. */
const GUEST_PATH = '^(/(?!\\.\\.?(/|$))[^/\\u0000]+)+$';

const MOUNTS_DESCRIPTION =
  "Host folders to bind to the tool's declared mounts: guest mount → absolute host folder (or {folder, access}). The server's policy (corral.policy.yaml) decides: a folder it does not grant, a mount the tool does not declare, or more access than granted is refused with 403 E_POLICY_DENIED.";

const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'claimed', 'done', 'revoked'];
const APPROVAL_SCOPES = ['once', 'folder', 'tool'];

const TIMEOUT_DESCRIPTION =
  "Wall-clock limit of the call in milliseconds; at most the tool's own resources.timeout_ms (a call may shorten it, never lengthen it).";

/** Build the document for the tools registered now (`corral.registry.list()`). */
export function buildOpenApi(tools: Tool[], options: OpenApiOptions): Json {
  if (!Array.isArray(tools))
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'buildOpenApi: tools must be an array of tools, such as corral.registry.list()', {
      option: 'tools',
    });
  if (typeof options !== 'object' || options === null)
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, 'buildOpenApi: options must be an object ({ version, auth, … })', {
      option: 'options',
    });
  const newest = newestTools(tools);
  const workflows = options.workflows ?? [];
  const schemas: Json = {
    Error: {
      type: 'object',
      description:
        "A classified error. `code` is one of Corral's (E_TOOL_NOT_FOUND, E_INPUT_VALIDATION, E_RESOURCE_EXHAUSTED, E_NETWORK_BLOCKED, E_UNEXPECTED_EXIT, E_CANCELLED, E_CLOSED, E_POLICY_DENIED, …) or, for problems of the HTTP request itself, E_UNAUTHORIZED, E_FORBIDDEN, E_NOT_FOUND, E_METHOD_NOT_ALLOWED, E_CONFLICT, E_INTERNAL.",
      required: ['code', 'message', 'details', 'retryable'],
      properties: {
        code: { type: 'string', pattern: '^E_[A-Z_]+$' },
        message: { type: 'string', description: 'A sentence a person can act on.' },
        details: { type: 'object', description: 'Facts about the error (JSON paths, limits, the field at fault).' },
        retryable: { type: 'boolean', description: 'Whether the same request can succeed later.' },
      },
    },
    ErrorResponse: {
      type: 'object',
      description: 'The body of every error that is not a call result: the request itself was refused.',
      required: ['error'],
      properties: { error: ref('Error') },
    },
    SnapshotRef: {
      type: 'object',
      description: "The call's execution snapshot in the server's store; `error` says when it could not be written.",
      required: ['id'],
      properties: { id: { type: 'string' }, error: { type: 'string' } },
    },
    MountBinding: {
      description: 'An absolute host folder, or the folder and the access wanted (default: the most the policy grants).',
      oneOf: [
        { type: 'string', pattern: '^/', maxLength: 4096 },
        {
          type: 'object',
          additionalProperties: false,
          required: ['folder'],
          properties: {
            folder: { type: 'string', pattern: '^/', maxLength: 4096 },
            access: { type: 'string', enum: ['read', 'read-write'] },
          },
        },
      ],
    },
    Mounts: {
      type: 'object',
      description: MOUNTS_DESCRIPTION,
      maxProperties: 64,
      propertyNames: { pattern: GUEST_PATH, maxLength: 256 },
      additionalProperties: ref('MountBinding'),
    },
    FolderUse: {
      type: 'object',
      required: ['guest', 'folder', 'access'],
      properties: {
        guest: { type: 'string' },
        folder: { type: 'string', description: 'The real path of the host folder.' },
        access: { type: 'string', enum: ['read', 'read-write'] },
      },
    },
    Approval: {
      type: 'object',
      description:
        "A call waiting for (or given) a person's approval, or a workflow step waiting for one (workflow_run_id set: deciding it runs no call; a run this server started for a remote caller goes on at once, as that caller; another process's run goes on when it resumes). pending → approved | rejected | expired; approved → claimed (running) → done; approved, claimed or done → revoked.",
      required: [
        'id',
        'status',
        'tool',
        'version',
        'workflow_run_id',
        'workflow_step',
        'prompt',
        'requested_by',
        'requested_at',
        'expires_at',
        'folders',
        'input_sha256',
        'max_scope',
        'scope',
        'decided_by',
        'decided_at',
        'comment',
        'execution_id',
        'revoked_by',
        'revoked_at',
      ],
      properties: {
        id: { type: 'string' },
        status: { type: 'string', enum: APPROVAL_STATUSES },
        tool: { type: 'string', description: "The tool to call; for a workflow step's approval, the workflow's name." },
        version: { type: 'string', description: "The tool's version; '0' for a workflow step's approval." },
        workflow_run_id: { type: ['string', 'null'], description: 'The workflow run whose step waits; null for a tool call.' },
        workflow_step: { type: ['string', 'null'], description: 'The step that waits; null for a tool call.' },
        prompt: { type: ['string', 'null'], description: "What the approver is asked (a workflow step's prompt)." },
        requested_by: { type: 'string', description: 'The caller, e.g. "http:REQUEST-ID@ADDRESS" or "mcp:CLIENT".' },
        requested_at: { type: 'string', format: 'date-time' },
        expires_at: { type: 'string', format: 'date-time', description: 'A pending approval nobody decides by then expires.' },
        folders: { type: 'array', items: ref('FolderUse'), description: 'The host folders the call would see.' },
        input_sha256: { type: 'string' },
        max_scope: { type: 'string', enum: APPROVAL_SCOPES, description: 'The widest scope the policy lets an approver give.' },
        scope: { type: ['string', 'null'], enum: [...APPROVAL_SCOPES, null] },
        decided_by: { type: ['string', 'null'] },
        decided_at: { type: ['string', 'null'], format: 'date-time' },
        comment: { type: ['string', 'null'] },
        execution_id: { type: ['string', 'null'], description: "The call's execution snapshot, once it ran." },
        revoked_by: { type: ['string', 'null'] },
        revoked_at: { type: ['string', 'null'], format: 'date-time' },
        input: { description: "The call's input (GET /approvals/{id} only)." },
      },
    },
    ApprovalList: {
      type: 'object',
      required: ['approvals'],
      properties: { approvals: { type: 'array', items: ref('Approval'), description: 'Pending approvals, newest first.' } },
    },
    ApprovalDetail: {
      type: 'object',
      required: ['approval'],
      properties: {
        approval: ref('Approval'),
        result: {
          ...ref('ExecuteResult'),
          description:
            "The call's result envelope, once this server ran it (kept in memory: the latest 1000 results); `approval.execution_id` names its snapshot in any case.",
        },
      },
    },
    ApprovalAccepted: {
      type: 'object',
      description:
        'The call waits for approval; it runs once approved, and GET /approvals/{id} (the Location) shows its status and result.',
      required: ['approval', 'message'],
      properties: { approval: ref('Approval'), message: { type: 'string' } },
    },
    DecisionRequest: {
      type: 'object',
      additionalProperties: false,
      required: ['decision'],
      properties: {
        decision: { type: 'string', enum: ['approve', 'reject'] },
        comment: { type: 'string', maxLength: 4096, description: 'Kept with the decision; shown to the caller on a rejection.' },
        scope: {
          type: 'string',
          enum: APPROVAL_SCOPES,
          description:
            "How far an approval reaches (default once): once, this call; folder, also later calls of this tool version inside these folders; tool, every later call of this tool version. At most the approval's max_scope; not with reject.",
        },
      },
    },
    ExecuteRequest: {
      type: 'object',
      additionalProperties: false,
      required: ['tool', 'input'],
      properties: {
        tool: {
          type: 'string',
          minLength: 1,
          maxLength: 256,
          description: "A tool name, optionally with a semver range: 'diff-summary' or 'diff-summary@^1'.",
          ...(newest.length > 0 ? { examples: [newest[0]!.spec.name] } : {}),
        },
        input: { description: "The tool's input, checked against its input_schema." },
        mounts: ref('Mounts'),
        timeout_ms: { type: 'integer', minimum: 1, description: TIMEOUT_DESCRIPTION },
      },
    },
    ExecuteResult: resultSchema({}, 'The result envelope of a call (what `corral.invoke` returns).'),
    ToolInfo: {
      type: 'object',
      required: ['name', 'version', 'description', 'kind', 'wasm_sha256', 'input_schema', 'resources', 'mounts', 'env'],
      properties: {
        name: { type: 'string' },
        version: { type: 'string' },
        description: { type: 'string' },
        kind: { type: 'string', enum: ['component', 'module'] },
        wasm_sha256: { type: 'string' },
        input_schema: { type: ['object', 'boolean'] },
        output_schema: { type: ['object', 'boolean'] },
        resources: { type: 'object' },
        mounts: { type: 'array', items: { type: 'object' } },
        env: { type: 'array', items: { type: 'string' } },
      },
    },
    ToolList: {
      type: 'object',
      required: ['tools'],
      properties: { tools: { type: 'array', items: ref('ToolInfo') } },
    },
    Health: {
      type: 'object',
      required: ['status'],
      properties: { status: { type: 'string', enum: ['ok', 'draining'] } },
    },
    WorkflowInfo: {
      type: 'object',
      required: ['name', 'description', 'inputs', 'input_schema', 'steps'],
      properties: {
        name: { type: 'string' },
        description: { type: 'string' },
        inputs: {
          type: 'object',
          description: "The workflow's input declarations as its file writes them (type, description, default, required).",
          additionalProperties: { type: 'object' },
        },
        input_schema: { type: 'object', description: 'The same declarations as a JSON Schema of the `inputs` object.' },
        steps: { type: 'integer', description: 'How many steps it has.' },
      },
    },
    WorkflowList: {
      type: 'object',
      required: ['workflows'],
      properties: { workflows: { type: 'array', items: ref('WorkflowInfo') } },
    },
    WorkflowRunRequest: {
      type: 'object',
      additionalProperties: false,
      properties: {
        inputs: {
          type: 'object',
          description: "The workflow's inputs (see its input_schema): at most 64 levels deep and 4 MiB as JSON.",
        },
      },
    },
    WorkflowResult: {
      ...workflowResultSchema,
      description:
        'What a run came to: `status` succeeded, failed or waiting (then `pending` lists the approvals it waits for: decide them with POST /approvals/{id} and the approver token, or corral approve ID; the server then continues the run). A step the policy refused failed with E_POLICY_DENIED in its `error`.',
    },
    WorkflowRun: {
      type: 'object',
      description: 'The run record, as the store keeps it (times in UTC nanoseconds, as text).',
      required: ['id', 'workflow', 'definition', 'definition_sha256', 'inputs', 'status', 'created_ns', 'updated_ns', 'outputs', 'error'],
      properties: {
        id: { type: 'string' },
        workflow: { type: 'string' },
        definition: { type: 'object', description: 'The validated workflow the run follows.' },
        definition_sha256: { type: 'string' },
        inputs: { description: 'The inputs after defaults.' },
        status: { type: 'string', enum: ['running', 'waiting', 'succeeded', 'failed', 'cancelled'] },
        created_ns: { type: 'string' },
        updated_ns: { type: 'string' },
        outputs: {},
        error: { anyOf: [{ type: 'object' }, { type: 'null' }] },
      },
    },
    WorkflowEvent: {
      type: 'object',
      description: "One entry of the run's journal, in order (seq 1, 2, 3 …).",
      required: ['run_id', 'seq', 'at_ns', 'step', 'kind', 'attempt'],
      properties: {
        run_id: { type: 'string' },
        seq: { type: 'integer' },
        at_ns: { type: 'string' },
        step: { type: ['string', 'null'] },
        kind: { type: 'string' },
        attempt: { type: 'integer' },
        tool: { type: ['string', 'null'] },
        tool_version: { type: ['string', 'null'] },
        execution_id: { type: ['string', 'null'] },
        approval_id: { type: ['string', 'null'] },
        output: {},
        error: { anyOf: [{ type: 'object' }, { type: 'null' }] },
        note: { type: ['string', 'null'] },
      },
    },
    WorkflowStatus: {
      type: 'object',
      required: ['run', 'events', 'pending'],
      properties: {
        run: ref('WorkflowRun'),
        events: { type: 'array', items: ref('WorkflowEvent') },
        pending: { type: 'array', items: ref('Approval'), description: 'The approvals the run waits for.' },
      },
    },
  };
  // Each tool's and workflow's schemas are NAME + a suffix: never one of the document's own names, nor each other's.
  const own = new Set(Object.keys(schemas));
  const names = pascalNames(
    newest.map((t) => t.spec.name),
    (c) => ['Input', 'Output', 'Request', 'Result'].some((suffix) => own.has(c + suffix)),
  );
  const toolSchemas = new Set([...names.values()].flatMap((p) => ['Input', 'Output', 'Request', 'Result'].map((x) => p + x)));
  const flowNames = pascalNames(
    workflows.map((w) => `workflow-${w.name}`),
    (c) => ['Inputs', 'RunRequest'].some((suffix) => own.has(c + suffix) || toolSchemas.has(c + suffix)),
  );
  for (const w of workflows) {
    const p = flowNames.get(`workflow-${w.name}`)!;
    schemas[`${p}Inputs`] = workflowInputSchema(w);
    schemas[`${p}RunRequest`] = {
      type: 'object',
      additionalProperties: false,
      properties: { inputs: ref(`${p}Inputs`) },
    };
  }
  for (const tool of newest) {
    const p = names.get(tool.spec.name)!;
    const max = tool.spec.resources?.timeout_ms ?? specDefaults.resources.timeout_ms;
    schemas[`${p}Input`] = embedSchema(tool.spec.input_schema, `#/components/schemas/${p}Input`);
    schemas[`${p}Output`] = embedSchema(tool.spec.output_schema ?? true, `#/components/schemas/${p}Output`);
    schemas[`${p}Request`] = {
      type: 'object',
      additionalProperties: false,
      required: ['input'],
      properties: {
        input: ref(`${p}Input`),
        mounts: {
          type: 'object',
          description: `${MOUNTS_DESCRIPTION} ${tool.spec.name} declares ${
            (tool.spec.mounts ?? []).map((m) => `${m.guest} (${m.access})`).join(', ') || 'no mounts'
          }.`,
          additionalProperties: false,
          properties: Object.fromEntries((tool.spec.mounts ?? []).map((m) => [m.guest, ref('MountBinding')])),
        },
        timeout_ms: { type: 'integer', minimum: 1, maximum: max, description: TIMEOUT_DESCRIPTION },
      },
    };
    schemas[`${p}Result`] = resultSchema(ref(`${p}Output`), `The result envelope of a ${tool.spec.name} call.`);
  }

  const errorResponse = (description: string, headers?: Json) => ({
    description,
    ...(headers ? { headers } : {}),
    content: json(ref('ErrorResponse')),
  });
  const responses: Json = {
    BadRequest: errorResponse(
      'The request body is not JSON, not UTF-8, or not the documented object (unknown key, wrong type, timeout_ms out of range): E_INPUT_VALIDATION, with details.problems as { path, message }.',
    ),
    Unauthorized: errorResponse('No bearer token, or the wrong one: E_UNAUTHORIZED.', {
      'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer realm="corral"' },
    }),
    Forbidden: errorResponse(
      `E_FORBIDDEN: ${
        [
          ...(options.hostCheck
            ? ["the Host header names none of the server's own names (DNS-rebinding protection on a loopback server)"]
            : []),
          ...(options.approverAuth ? ['the approver token was used outside /approvals (details.reason "approver_token")'] : []),
        ].join('; or ') || 'the request was refused'
      }.`,
    ),
    PayloadTooLarge: errorResponse(
      `The body is larger than ${options.maxBodyBytes} bytes (--max-body-mb): E_INPUT_VALIDATION with details.reason "body_too_large".`,
    ),
    UnsupportedMediaType: errorResponse('The body is not declared as application/json (UTF-8): E_INPUT_VALIDATION.'),
    NotFound: errorResponse('No approval with that id (or not an approval id at all): E_NOT_FOUND.'),
    ServiceUnavailable: {
      description:
        'Busy or shutting down; retry after Retry-After seconds. E_RESOURCE_EXHAUSTED (details.resource "http_concurrency", "waiting_workflow_runs" for a workflow run while too many wait for a person, or "queue" as a call result), E_CLOSED, or E_CANCELLED for a call stopped by shutdown.',
      headers: { 'Retry-After': { schema: { type: 'integer' } } },
      content: json({ anyOf: [ref('ErrorResponse'), ref('ExecuteResult')] }),
    },
  };

  // 403 without a call: the Host check, or the approver token where it does not reach.
  const forbidden = options.hostCheck || options.approverAuth === true;
  const common = (): Json => ({
    ...(options.auth ? { 401: responseRef('Unauthorized') } : {}),
    ...(forbidden ? { 403: responseRef('Forbidden') } : {}),
  });
  const waitSeconds = Math.round((options.approvalWaitMs ?? 10_000) / 1000);
  const executeResponses = (result: string): Json => ({
    202: {
      description: `The policy requires a person's approval and nobody decided within ${waitSeconds} s (the server's --approval-wait; a \`Prefer: wait=N\` or \`Prefer: respond-async\` header shortens it). The call stays pending and runs once approved (\`corral approve ID\`, or POST /approvals/{id} with the approver token), also after a restart; follow it at Location.`,
      headers: {
        Location: { schema: { type: 'string' }, description: '/approvals/{id}' },
        'Retry-After': { schema: { type: 'integer' }, description: 'Seconds until a poll of Location is worth it.' },
      },
      content: json(ref('ApprovalAccepted')),
    },
    200: {
      description:
        "The call ran. `ok` says whether the tool succeeded; a tool that failed inside its sandbox (E_UNEXPECTED_EXIT, E_RESOURCE_EXHAUSTED at its own memory, time, disk or output limit, E_NETWORK_BLOCKED) is still 200, with ok false and the classified error. The call is recorded in the server's snapshot store (`snapshot.id`).",
      content: json(ref(result)),
    },
    400: responseRef('BadRequest'),
    ...common(),
    403: {
      description:
        "The policy refused the call before it ran: the envelope's error is E_POLICY_DENIED with details.reason (not_granted, undeclared_mount, access_not_granted, folder_missing, protected_folder, tool_denied, unlisted_tool, policy_invalid, approval_rejected, approval_expired, approval_revoked, approval_unavailable, bad_request), recorded in the audit trail." +
        (forbidden ? ' Or the request itself was refused ({ error } with E_FORBIDDEN: see Forbidden).' : ''),
      content: json(forbidden ? { anyOf: [ref(result), ref('ErrorResponse')] } : ref(result)),
    },
    404: { description: 'No tool with that name, or no version in the range: E_TOOL_NOT_FOUND (recorded).', content: json(ref(result)) },
    413: responseRef('PayloadTooLarge'),
    415: responseRef('UnsupportedMediaType'),
    422: { description: "The input does not match the tool's input_schema: E_INPUT_VALIDATION (recorded).", content: json(ref(result)) },
    500: {
      description: 'The server could not run the tool (a tool whose schema cannot be compiled, an internal error).',
      content: json({ anyOf: [ref('ErrorResponse'), ref(result)] }),
    },
    503: responseRef('ServiceUnavailable'),
  });

  const paths: Json = {
    '/execute': {
      post: {
        operationId: 'execute',
        summary: 'Run any registered tool',
        description:
          'Runs the tool named in the body on `input`, in a sandbox worker, and returns the result envelope. For typed inputs and outputs, use the per-tool operations (`POST /execute/{name}`).',
        tags: ['execute'],
        requestBody: { required: true, content: json(ref('ExecuteRequest')) },
        responses: executeResponses('ExecuteResult'),
      },
    },
  };
  for (const tool of newest) {
    const p = names.get(tool.spec.name)!;
    paths[`/execute/${tool.spec.name}`] = {
      post: {
        operationId: `execute${p}`,
        summary: summaryOf(tool.spec.description, `Run ${tool.spec.name}`),
        description: `${tool.spec.description ?? `Runs ${tool.spec.name}.`}\n\nRuns the newest registered version (${tool.spec.version} when this document was generated).`,
        tags: ['tools'],
        'x-corral-tool': { name: tool.spec.name, version: tool.spec.version, wasm_sha256: tool.wasmSha256 },
        requestBody: { required: true, content: json(ref(`${p}Request`)) },
        responses: executeResponses(`${p}Result`),
      },
    };
  }
  const approverOnly = options.approverAuth ? { security: [{ approverAuth: [] }] } : {};
  const eitherToken = options.auth && options.approverAuth ? { security: [{ bearerAuth: [] }, { approverAuth: [] }] } : {};
  const idParameter = {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The approval id (from a 202 answer, GET /approvals or corral approvals).',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  };
  paths['/approvals'] = {
    get: {
      operationId: 'listApprovals',
      summary: 'Calls waiting for approval',
      description: 'The pending approvals, newest first, without their inputs. Either token reads them.',
      tags: ['approvals'],
      ...eitherToken,
      responses: { 200: { description: 'The pending approvals.', content: json(ref('ApprovalList')) }, ...common() },
    },
  };
  paths['/approvals/{id}'] = {
    get: {
      operationId: 'getApproval',
      summary: 'One approval, and its result once it ran',
      description:
        "The approval (with the call's input) and, once this server ran the approved call, its result envelope. Poll it after a 202: status pending, then approved, claimed (running) and done — or rejected, expired, revoked.",
      tags: ['approvals'],
      parameters: [idParameter],
      ...eitherToken,
      responses: {
        200: { description: 'The approval.', content: json(ref('ApprovalDetail')) },
        ...common(),
        404: responseRef('NotFound'),
      },
    },
    post: {
      operationId: 'decideApproval',
      summary: 'Approve or reject a call',
      description:
        'A person\'s decision, recorded in the audit trail (by "http-approver@ADDRESS"). Only the approver token (--approver-token-file) may decide: the agent holds the API token and must not approve its own calls. A waiting call goes on at once; one whose request is gone runs now.',
      tags: ['approvals'],
      parameters: [idParameter],
      ...approverOnly,
      requestBody: { required: true, content: json(ref('DecisionRequest')) },
      responses: {
        200: {
          description: 'Decided: the approval as it now stands.',
          content: json({ type: 'object', required: ['approval'], properties: { approval: ref('Approval') } }),
        },
        400: responseRef('BadRequest'),
        ...(options.auth || options.approverAuth ? { 401: responseRef('Unauthorized') } : {}),
        403: errorResponse(
          'E_FORBIDDEN: the server has no approver token (details.reason "no_approver_token": start it with --approver-token-file, or use corral approve ID), the API token was used (details.reason "api_token_cannot_approve")' +
            (options.hostCheck ? ", or the Host header is not one of the server's names." : '.'),
        ),
        404: responseRef('NotFound'),
        409: errorResponse('The approval is no longer pending (decided, expired): E_CONFLICT with details.status.'),
        413: responseRef('PayloadTooLarge'),
        415: responseRef('UnsupportedMediaType'),
      },
    },
  };
  const runResponses = (): Json => ({
    200: {
      description:
        "The run ended or waits for a person: read `status`. Every tool call of its steps went through the policy as this caller's own call would; a refused one failed its step with E_POLICY_DENIED (and the step's on_error applied). Location: the run (GET it for its events).",
      headers: { Location: { schema: { type: 'string' }, description: '/workflows/runs/{id}' } },
      content: json(ref('WorkflowResult')),
    },
    400: responseRef('BadRequest'),
    ...common(),
    404: errorResponse('No workflow with that name: E_NOT_FOUND.'),
    413: responseRef('PayloadTooLarge'),
    415: responseRef('UnsupportedMediaType'),
    422: errorResponse(
      "The inputs are not what the workflow declares (an unknown or missing input, a wrong type), or nest deeper than 64 levels: E_INPUT_VALIDATION (details.problems, or details.reason 'input_too_deep' / 'input_too_large'). Nothing ran.",
    ),
    503: responseRef('ServiceUnavailable'),
  });
  paths['/workflows'] = {
    get: {
      operationId: 'listWorkflows',
      summary: 'The workflows this server runs',
      description: 'The workflows loaded from the --workflows folders, with their input declarations.',
      tags: ['workflows'],
      responses: { 200: { description: 'The workflows.', content: json(ref('WorkflowList')) }, ...common() },
    },
  };
  const nameParameter = {
    name: 'name',
    in: 'path',
    required: true,
    description: 'The workflow (GET /workflows lists them).',
    schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]*$', maxLength: 64 },
  };
  paths['/workflows/{name}/runs'] = {
    post: {
      operationId: 'runWorkflow',
      summary: 'Run a workflow',
      description:
        "Runs the workflow with `inputs` and answers when it ends or waits for a person. The inputs are the caller's and untrusted: every tool call a step makes goes through the policy gate as a direct call of this caller would (folder grants, tool allow/deny, protected folders); a step whose tool the policy makes wait for approval fails with E_POLICY_DENIED (approval_required). For typed inputs, use the per-workflow operations.",
      tags: ['workflows'],
      parameters: [nameParameter],
      requestBody: { required: true, content: json(ref('WorkflowRunRequest')) },
      responses: runResponses(),
    },
  };
  for (const w of workflows) {
    const p = flowNames.get(`workflow-${w.name}`)!;
    paths[`/workflows/${w.name}/runs`] = {
      post: {
        operationId: `run${p}`,
        summary: summaryOf(w.description, `Run workflow ${w.name}`),
        description: `${w.description ?? `Runs workflow ${w.name}.`}\n\nEvery tool call of its steps goes through the policy as this caller's own call would.`,
        tags: ['workflows'],
        'x-corral-workflow': { name: w.name, steps: w.steps.length },
        requestBody: { required: true, content: json(ref(`${p}RunRequest`)) },
        responses: runResponses(),
      },
    };
  }
  const runIdParameter = {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The run id (the `runId` a run answered).',
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  };
  paths['/workflows/runs/{id}'] = {
    get: {
      operationId: 'getWorkflowRun',
      summary: "A workflow run's status",
      description:
        'The run record, its journal of events, and the approvals it waits for. Runs started through a server (over HTTP or MCP) only: a run started with corral workflow run is 404 here.',
      tags: ['workflows'],
      parameters: [runIdParameter],
      responses: {
        200: { description: 'The run.', content: json(ref('WorkflowStatus')) },
        ...common(),
        404: errorResponse('No run with that id started through a server (or not a run id at all): E_NOT_FOUND.'),
      },
    },
  };
  paths['/workflows/runs/{id}/resume'] = {
    post: {
      operationId: 'resumeWorkflowRun',
      summary: 'Take a workflow run up again',
      description:
        "Continues a run started through a server that was stopped by a crash or a shutdown, or one whose approvals were decided (the server also does that by itself). As the caller that started it when its approvals keep who that was, else as this request's caller; steps whose end is recorded never run again, a step that was running when the run stopped runs again (at least once). Resume a `running` run only when no process drives it any more: one still driven elsewhere would have its step in flight run twice before the journal stops one of the two (409 then). Send no body, or {}.",
      tags: ['workflows'],
      parameters: [runIdParameter],
      responses: {
        200: { description: 'The run, as it ended or waits now.', content: json(ref('WorkflowResult')) },
        400: responseRef('BadRequest'),
        ...common(),
        404: errorResponse('No run with that id: E_NOT_FOUND.'),
        409: errorResponse("Another process drives the run: E_CONFLICT (details.reason 'run_driven_elsewhere')."),
        413: responseRef('PayloadTooLarge'),
        415: responseRef('UnsupportedMediaType'),
        503: responseRef('ServiceUnavailable'),
      },
    },
  };
  paths['/tools'] = {
    get: {
      operationId: 'listTools',
      summary: 'List the registered tools',
      description: 'Every registered tool and version (name ascending, newest version first), with its schemas and limits.',
      tags: ['meta'],
      responses: { 200: { description: 'The tools.', content: json(ref('ToolList')) }, ...common() },
    },
  };
  paths['/openapi.json'] = {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      description: 'Generated from the tools registered when it is requested.',
      tags: ['meta'],
      responses: { 200: { description: 'An OpenAPI 3.1 document.', content: json({ type: 'object' }) }, ...common() },
    },
  };
  paths['/healthz'] = {
    get: {
      operationId: 'health',
      summary: 'Liveness',
      description: 'Never needs a token. 503 while the server is shutting down.',
      tags: ['meta'],
      security: [],
      responses: {
        200: { description: 'Serving.', content: json(ref('Health')) },
        ...(options.hostCheck ? { 403: errorResponse("The Host header names none of the server's own names: E_FORBIDDEN.") } : {}),
        503: { description: 'Shutting down.', content: json(ref('Health')) },
      },
    },
  };
  paths['/metrics'] = {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description:
        'Calls by tool and outcome, errors by code, call latency, queue depth, running calls, workers and worker restarts, HTTP requests, process metrics.',
      tags: ['meta'],
      responses: {
        200: { description: 'Prometheus text exposition format 0.0.4.', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...common(),
      },
    },
  };
  if (options.mcp) {
    paths['/mcp'] = {
      post: {
        operationId: 'mcp',
        summary: 'MCP (Streamable HTTP)',
        description: 'The Model Context Protocol endpoint: JSON-RPC messages over Streamable HTTP, as the MCP specification defines.',
        tags: ['mcp'],
        requestBody: { required: true, content: json({ type: 'object' }) },
        responses: { 200: { description: 'A JSON-RPC response, or an SSE stream of them.' }, ...common() },
      },
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Corral HTTP API',
      version: options.version,
      description: `Run sandboxed WASI tools over HTTP. Every call is validated against the tool's contract, runs in a sandbox worker, and is recorded in the server's snapshot store.\n\n${statusTable}`,
    },
    ...(options.auth ? { security: [{ bearerAuth: [] }] } : {}),
    tags: [
      { name: 'execute', description: 'Run a tool by name' },
      { name: 'tools', description: 'One typed operation per registered tool' },
      { name: 'approvals', description: "Calls waiting for a person's approval, and deciding them" },
      { name: 'workflows', description: 'Workflows over the tools: run one, follow a run, take it up again' },
      { name: 'meta', description: 'Tools, this document, health, metrics' },
      ...(options.mcp ? [{ name: 'mcp', description: 'Model Context Protocol' }] : []),
    ],
    paths,
    components: {
      schemas,
      responses,
      ...(options.auth || options.approverAuth
        ? {
            securitySchemes: {
              ...(options.auth ? { bearerAuth: { type: 'http', scheme: 'bearer', description: 'The API token (--token-file).' } } : {}),
              ...(options.approverAuth
                ? {
                    approverAuth: {
                      type: 'http',
                      scheme: 'bearer',
                      description: 'The approver token (--approver-token-file): reads and decides approvals, nothing else.',
                    },
                  }
                : {}),
            },
          }
        : {}),
    },
  };
}
