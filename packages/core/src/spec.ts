/**
 * tool-spec.json: the JSON Schema Corral ships for it, and the validator
 * that reports every problem at once (so a person fixes a spec in one pass).
 */
import { loadAjv, semver, type ValidateFunction } from './deps.js';
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
    const ajv = new (loadAjv().Ajv)({ allErrors: true, logger: false });
    for (const [name, f] of Object.entries(FORMATS)) ajv.addFormat(name, f.check);
    compiledShape = ajv.compile(toolSpecSchema);
  }
  return compiledShape;
}

export type SpecValidation = { ok: true; spec: ToolSpec } | { ok: false; problems: Problem[] };

/** Validate a parsed tool-spec.json; on success return a copy with defaults filled in. */
export function validateSpec(given: unknown): SpecValidation {
  const copied = jsonCopy(given);
  if (!copied.ok) return copied;
  const raw = copied.value;
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

/**
 * What a vouched-for spec is still checked against: toolSpecSchema's own
 * rules, read by this small walker instead of ajv (compiling the schema is
 * what vouching saves). It knows exactly the keywords toolSpecSchema uses
 * and reports problems at the paths ajv would.
 */
function shapeProblems(value: unknown, rule: Record<string, unknown>, path: string, out: Problem[]): void {
  const fail = (message: string) => out.push({ path: path || '/', message });
  const unknown = Object.keys(rule).find((k) => !WALKED_KEYWORDS.has(k));
  if (unknown) throw new Error(`shapeProblems does not know the keyword ${unknown}: teach it, or vouched specs go unchecked`);
  if (rule.type !== undefined) {
    const types = [rule.type].flat() as string[];
    if (!types.some((t) => isJsonType(value, t))) return void fail(`must be ${types.join(',')}`);
  }
  if (Array.isArray(rule.enum) && !rule.enum.includes(value)) fail(`must be equal to one of the allowed values (${rule.enum.join(', ')})`);
  if (typeof value === 'string') {
    // Code points, as ajv counts; a string has at least half as many as UTF-16 units, so most are decided by .length.
    const points = () => [...value].length;
    if (typeof rule.maxLength === 'number' && value.length > rule.maxLength && points() > rule.maxLength)
      fail(`must NOT have more than ${rule.maxLength} characters`);
    if (typeof rule.minLength === 'number' && value.length < 2 * rule.minLength && points() < rule.minLength)
      fail(`must NOT have fewer than ${rule.minLength} characters`);
    if (typeof rule.pattern === 'string' && !new RegExp(rule.pattern, 'u').test(value)) fail(`must match pattern "${rule.pattern}"`);
    const format = typeof rule.format === 'string' ? FORMATS[rule.format] : undefined;
    if (rule.format !== undefined && !format) throw new Error(`shapeProblems does not know the format ${String(rule.format)}`);
    if (format && !format.check(value)) fail(format.message);
  }
  if (typeof value === 'number') {
    if (typeof rule.minimum === 'number' && value < rule.minimum) fail(`must be >= ${rule.minimum}`);
    if (typeof rule.maximum === 'number' && value > rule.maximum) fail(`must be <= ${rule.maximum}`);
    if (typeof rule.exclusiveMinimum === 'number' && value <= rule.exclusiveMinimum) fail(`must be > ${rule.exclusiveMinimum}`);
  }
  if (Array.isArray(value)) {
    // JSON text as identity: enough for the arrays of strings toolSpecSchema makes unique.
    const texts = value.map((item) => JSON.stringify(item));
    if (rule.uniqueItems === true && new Set(texts).size < texts.length) fail('must NOT have duplicate items');
    const items = rule.items as Record<string, unknown> | undefined;
    if (items)
      value.forEach((item, i) => {
        shapeProblems(item, items, `${path}/${i}`, out);
      });
  }
  if (isJsonType(value, 'object')) {
    const object = value as Record<string, unknown>;
    const properties = (rule.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const key of (rule.required ?? []) as string[]) {
      if (object[key] === undefined) fail(`must have required property '${key}'`);
    }
    for (const key of Object.keys(object)) {
      if (Object.hasOwn(properties, key)) shapeProblems(object[key], properties[key]!, `${path}/${key}`, out);
      else if (rule.additionalProperties === false) fail(`must NOT have additional property '${key}'`);
    }
  }
}

const WALKED_KEYWORDS = new Set([
  ...['$schema', 'title', 'type', 'enum', 'required', 'properties', 'additionalProperties', 'items', 'uniqueItems'],
  ...['pattern', 'format', 'maxLength', 'minLength', 'minimum', 'maximum', 'exclusiveMinimum'],
]);

/** JSON Schema's types, as ajv decides them (numbers are finite). */
function isJsonType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    default:
      return typeof value === type;
  }
}

/** validateSpec without the meta-schema check of the spec's own schemas (see ParseSpecOptions.validated). */
function vouchedSpec(raw: unknown): SpecValidation {
  const copied = jsonCopy(raw);
  if (!copied.ok) return copied;
  const copy = copied.value;
  const problems: Problem[] = [];
  shapeProblems(copy, toolSpecSchema, '', problems);
  problems.push(...semanticProblems(copy, false));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, spec: withDefaults(copy) };
}

/**
 * The spec as JSON will have it, checked and kept as one copy: a getter or a
 * toJSON cannot show the check one value and register another.
 */
function jsonCopy(raw: unknown): { ok: true; value: unknown } | { ok: false; problems: Problem[] } {
  try {
    return { ok: true, value: JSON.parse(JSON.stringify(raw) ?? 'null') };
  } catch (err) {
    return { ok: false, problems: [{ path: '/', message: `is not JSON data (${err instanceof Error ? err.message : String(err)})` }] };
  }
}

/** An accepted spec's copy with defaults filled in. */
function withDefaults(copy: unknown): ToolSpec {
  // `copy` is jsonCopy's, never the caller's object.
  const { $schema: _ignored, ...spec } = copy as ToolSpec & { $schema?: string };
  spec.resources = { ...specDefaults.resources, ...spec.resources };
  spec.resources.network_access = [...spec.resources.network_access!];
  spec.mounts ??= [];
  spec.env ??= [];
  return spec;
}

/** Rules a JSON Schema cannot say (or cannot say in a helpful sentence); `schemas`: compile input_schema and output_schema too. */
function semanticProblems(raw: unknown, schemas = true): Problem[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const spec = raw as Record<string, unknown>;
  const problems: Problem[] = [];

  for (const key of schemas ? (['input_schema', 'output_schema'] as const) : []) {
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
   * The caller vouches that validateSpec accepted this very spec, so its
   * input_schema and output_schema are not checked against the JSON Schema
   * meta-schemas here (the first call compiles them: one ajv cannot compile
   * fails that call, E_REGISTRATION). The bundled tools' specs are validated when
   * Corral is built: checking them again compiled the meta-schemas and every
   * tool's schemas in each new process, the largest part of a cold start.
   * Everything else (name, version, limits, mounts, env) is checked as
   * validateSpec checks it, without ajv: a caller who vouches wrongly gets
   * the same refusal, never a tool with limits the sandbox cannot enforce.
   */
  validated?: boolean;
}

/** validateSpec, or a CorralError E_REGISTRATION that lists every problem; see ParseSpecOptions. */
export function parseSpec(raw: unknown, source = 'bytes', options: ParseSpecOptions = {}): ToolSpec {
  const result = options.validated ? vouchedSpec(raw) : validateSpec(raw);
  if (result.ok) return result.spec;
  const n = result.problems.length;
  throw new CorralError(
    ErrorCodes.REGISTRATION,
    `Invalid tool spec ${source}: ${n} problem${n === 1 ? '' : 's'}: ${problemsText(result.problems)}`,
    { source, problems: result.problems },
  );
}
