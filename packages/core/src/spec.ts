/**
 * tool-spec.json: the JSON Schema Corral ships for it, and the validator
 * that reports every problem at once (so a person fixes a spec in one pass).
 */
import { Ajv, semver, type ValidateFunction } from './deps.js';
import { CorralError, ErrorCodes } from './errors.js';
import { compileUserSchema, problemsText, toProblems, type Problem } from './schema.js';
import type { ToolResources, ToolSpec } from './types.js';

export type { Problem } from './schema.js';

/** What a spec gets when it leaves a field out. */
export const specDefaults = {
  resources: {
    cpu_cores: 1,
    memory_mb: 256,
    disk_mb: 64,
    timeout_ms: 30_000,
    network_access: ['none'],
  },
} as const satisfies { resources: Required<ToolResources> };

/** The JSON Schema (draft-07) of tool-spec.json. Custom formats are defined below. */
export const toolSpecSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Corral tool-spec.json',
  type: 'object',
  required: ['name', 'version', 'component', 'input_schema'],
  additionalProperties: false,
  properties: {
    // Lets editors find this schema; ignored by Corral.
    $schema: { type: 'string' },
    name: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]*$', maxLength: 64 },
    version: { type: 'string', format: 'semver' },
    description: { type: 'string', minLength: 1 },
    component: { type: 'string', format: 'wasm-path' },
    kind: { enum: ['component', 'module'] },
    input_schema: { type: ['object', 'boolean'] },
    output_schema: { type: ['object', 'boolean'] },
    resources: {
      type: 'object',
      additionalProperties: false,
      properties: {
        cpu_cores: { type: 'number', exclusiveMinimum: 0 },
        memory_mb: { type: 'integer', minimum: 1, maximum: 4096 },
        disk_mb: { type: 'integer', minimum: 0 },
        timeout_ms: { type: 'integer', minimum: 1, maximum: 3_600_000 },
        network_access: { type: 'array', items: { type: 'string' }, uniqueItems: true },
      },
    },
    mounts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['guest', 'access'],
        additionalProperties: false,
        properties: {
          guest: { type: 'string', format: 'mount-path' },
          access: { enum: ['read', 'read-write'] },
        },
      },
    },
    env: {
      type: 'array',
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
    },
  },
} as const;

/** A relative path to a .wasm file that cannot climb out of the spec's folder. */
function isWasmPath(p: string): boolean {
  return p.endsWith('.wasm') && !p.startsWith('/') && !p.includes('\\') && !p.includes('\0') && !p.split('/').includes('..');
}

/** A normalized absolute guest folder other than '/': no '', '.' or '..' segments. */
function isMountPath(p: string): boolean {
  if (!p.startsWith('/') || p === '/' || p.includes('\0')) return false;
  return p
    .slice(1)
    .split('/')
    .every((s) => s !== '' && s !== '.' && s !== '..');
}

const FORMATS: Record<string, { check: (s: string) => boolean; message: string }> = {
  semver: { check: (s) => semver.valid(s) === s, message: 'must be a semantic version such as 1.0.0' },
  'wasm-path': {
    check: isWasmPath,
    message: "must be a relative path to a .wasm file, with '/' separators and no '..' segments",
  },
  'mount-path': {
    check: isMountPath,
    message: "must be a normalized absolute guest folder other than '/' (like /workspace)",
  },
};

// Compiled once, on first use: the spec schema never changes, and compiling
// it at import time made every program that loads core (the CLI, the browser
// page) pay for it before doing anything.
let compiledShape: ValidateFunction | undefined;
function shapeValidator(): ValidateFunction {
  if (!compiledShape) {
    const ajv = new Ajv({ allErrors: true, logger: false });
    for (const [name, f] of Object.entries(FORMATS)) ajv.addFormat(name, f.check);
    compiledShape = ajv.compile(toolSpecSchema);
  }
  return compiledShape;
}

export type SpecValidation = { ok: true; spec: ToolSpec } | { ok: false; problems: Problem[] };

/** Validate a parsed tool-spec.json; on success return a copy with defaults filled in. */
export function validateSpec(raw: unknown): SpecValidation {
  const problems: Problem[] = [];
  const validateShape = shapeValidator();
  if (!validateShape(raw)) {
    for (const e of validateShape.errors ?? []) {
      const [p] = toProblems([e]);
      const format = e.keyword === 'format' ? FORMATS[String(e.params.format)] : undefined;
      problems.push({ path: p!.path, message: format?.message ?? p!.message });
    }
  }
  problems.push(...semanticProblems(raw));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, spec: withDefaults(raw) };
}

/** A copy of an accepted spec with defaults filled in. */
function withDefaults(raw: unknown): ToolSpec {
  // JSON round-trip: the spec is JSON by definition, and the caller's object stays untouched.
  const { $schema: _ignored, ...spec } = JSON.parse(JSON.stringify(raw)) as ToolSpec & { $schema?: string };
  spec.resources = { ...specDefaults.resources, ...spec.resources };
  spec.resources.network_access = [...spec.resources.network_access!];
  spec.mounts ??= [];
  spec.env ??= [];
  return spec;
}

/** Rules a JSON Schema cannot say (or cannot say in a helpful sentence). */
function semanticProblems(raw: unknown): Problem[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const spec = raw as Record<string, unknown>;
  const problems: Problem[] = [];

  for (const key of ['input_schema', 'output_schema'] as const) {
    const schema = spec[key];
    if (typeof schema === 'boolean' || (typeof schema === 'object' && schema !== null && !Array.isArray(schema))) {
      const compiled = compileUserSchema(schema as ToolSpec['input_schema'], `/${key}`);
      if (compiled.problems) problems.push(...compiled.problems);
    }
  }

  const network = (spec.resources as Record<string, unknown> | undefined)?.network_access;
  if (Array.isArray(network) && network.some((n) => n !== 'none')) {
    problems.push({
      path: '/resources/network_access',
      message: `Corral tools run without network access; use ["none"] or [] (got ${JSON.stringify(network)})`,
    });
  }

  if (Array.isArray(spec.mounts)) {
    const seen = new Map<string, number>();
    spec.mounts.forEach((m: unknown, i) => {
      const guest = (m as { guest?: unknown } | null)?.guest;
      if (typeof guest !== 'string') return;
      const first = seen.get(guest);
      if (first === undefined) seen.set(guest, i);
      else problems.push({ path: `/mounts/${i}/guest`, message: `duplicates /mounts/${first}/guest (${guest})` });
    });
  }

  if (Array.isArray(spec.env)) {
    spec.env.forEach((name: unknown, i) => {
      if (name === 'TZ') problems.push({ path: `/env/${i}`, message: 'TZ is reserved: Corral always sets TZ=UTC' });
    });
  }
  return problems;
}

export interface ParseSpecOptions {
  /**
   * The caller vouches that validateSpec accepted this very spec, so only
   * the defaults are filled in. The bundled tools' specs are validated when
   * Corral is built: checking them again compiled the JSON Schema
   * meta-schemas and every tool's schemas in each new process, the largest
   * part of a cold start.
   */
  validated?: boolean;
}

/** validateSpec, or a CorralError E_REGISTRATION that lists every problem; see ParseSpecOptions. */
export function parseSpec(raw: unknown, source = 'bytes', options: ParseSpecOptions = {}): ToolSpec {
  if (options.validated) return withDefaults(raw);
  const result = validateSpec(raw);
  if (result.ok) return result.spec;
  const n = result.problems.length;
  throw new CorralError(
    ErrorCodes.REGISTRATION,
    `Invalid tool spec ${source}: ${n} problem${n === 1 ? '' : 's'}: ${problemsText(result.problems)}`,
    { source, problems: result.problems },
  );
}
