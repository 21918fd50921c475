/**
 * Thin helpers around ajv shared by the spec validator and the invoke
 * pipeline: one way to build an ajv instance, one way to compile a user's
 * JSON Schema, one way to turn ajv errors into `{ path, message }` problems.
 */
import type { Ajv } from 'ajv';
import { ajvRuntime, loadAjv, type ErrorObject, type KeywordCxt, type ValidateFunction } from './deps.js';
import type { JsonSchema } from './types.js';

/** One thing wrong with a value, addressed by a JSON Pointer ('/' is the root). */
export interface Problem {
  path: string;
  message: string;
}

/** A guest path an input may name: absolute, no NUL, no `..` segment. */
export function isSafeGuestPath(value: string): boolean {
  return value.startsWith('/') && !value.includes('\0') && !value.split('/').includes('..');
}

/** Extra wording for formats, so people read a sentence rather than a format name. */
const FORMAT_MESSAGES: Record<string, string> = {
  path: "must be an absolute path without '..' segments or NUL characters",
};

const AJV_OPTIONS = { allErrors: true, strict: false, logger: false } as const;

function is2020(schema: JsonSchema): boolean {
  return typeof schema === 'object' && typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
}

/**
 * Meta-schema checks go through one shared ajv per draft: compiling the
 * meta-schema costs ~20 ms per instance, and checking adds nothing to it.
 */
const checkers = new Map<boolean, Ajv>();
function checker(schema: JsonSchema): Ajv {
  const draft2020 = is2020(schema);
  let ajv = checkers.get(draft2020);
  if (!ajv) {
    const { Ajv, Ajv2020 } = loadAjv();
    ajv = draft2020 ? (new Ajv2020(AJV_OPTIONS) as unknown as Ajv) : new Ajv(AJV_OPTIONS);
    checkers.set(draft2020, ajv);
  }
  return ajv;
}

/**
 * A fresh ajv to compile one tool's schemas (~1 ms without the meta-schema
 * check, done by `checker`). Fresh because two tools, or two versions of one,
 * may reuse the same `$id`, which a shared instance would refuse.
 * `strict: false` accepts annotations such as `x-foo` or `example`; the
 * meta-schema check still catches real mistakes.
 */
function compiler(schema: JsonSchema, source = false): Ajv {
  const { Ajv, Ajv2020, _, addFormats } = loadAjv();
  // `source`: keep the generated code, naming every outside value by what `require` gives it (PREBUILT_MODULES).
  const code = source ? { code: { source: true, formats: _`require("corral:formats")` } } : {};
  const options = { ...AJV_OPTIONS, validateSchema: false, ...code };
  const ajv = is2020(schema) ? (new Ajv2020(options) as unknown as Ajv) : new Ajv(options);
  addFormats(ajv);
  ajv.addFormat('path', isSafeGuestPath);
  useBoundedLengths(ajv);
  return ajv;
}

/**
 * maxLength and minLength count code points, and ajv counts every one of a
 * string for them (a multi-megabyte input took milliseconds per check). A
 * string has at most as many code points as UTF-16 units and at least half as
 * many, so most strings are decided by `.length`; the others are counted only
 * until the limit decides. Same keywords, same errors, same order as ajv's.
 */
function useBoundedLengths(ajv: Ajv): void {
  const { _, str } = loadAjv();
  for (const keyword of ['maxLength', 'minLength'] as const) {
    const test = keyword === 'maxLength' ? longerThan : shorterThan;
    ajv.removeKeyword(keyword);
    ajv.addKeyword({
      keyword,
      type: 'string',
      schemaType: 'number',
      $data: true,
      before: 'pattern',
      error: {
        message: ({ schemaCode }) => str`must NOT have ${keyword === 'maxLength' ? 'more' : 'fewer'} than ${schemaCode} characters`,
        params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
      },
      code(cxt: KeywordCxt) {
        const code = keyword === 'maxLength' ? _`require("corral:schema").longerThan` : _`require("corral:schema").shorterThan`;
        const fn = cxt.gen.scopeValue('func', { ref: test, code });
        cxt.fail$data(_`${fn}(${cxt.data}, ${cxt.schemaCode})`);
      },
    });
  }
}

/** More than `limit` code points (a surrogate pair is one)? */
export function longerThan(s: string, limit: number): boolean {
  if (s.length <= limit) return false;
  if (Math.ceil(s.length / 2) > limit) return true;
  return codePointsUpTo(s, limit + 1) > limit;
}

/** Fewer than `limit` code points? */
export function shorterThan(s: string, limit: number): boolean {
  if (s.length < limit) return true;
  if (Math.ceil(s.length / 2) >= limit) return false;
  return codePointsUpTo(s, limit) < limit;
}

/** The code points of `s`, counted no further than `stop`. */
function codePointsUpTo(s: string, stop: number): number {
  let count = 0;
  for (let i = 0; i < s.length && count < stop; i++, count++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return count;
}

/**
 * Compile a user's JSON Schema. Meta-schema violations come back as problems
 * under `prefix` (e.g. `/input_schema/properties/x/type`); anything else ajv
 * refuses (an unresolvable $ref, an unknown $schema) is one problem at `prefix`.
 */
export function compileUserSchema(
  schema: JsonSchema,
  prefix: string,
): { validate: ValidateFunction; problems?: undefined } | { validate?: undefined; problems: Problem[] } {
  const declared = typeof schema === 'object' ? schema.$schema : undefined;
  if (declared !== undefined && !/json-schema\.org\/(draft-07|draft\/2020-12)\/schema#?$/.test(String(declared))) {
    const message = `uses ${JSON.stringify(declared)}; Corral understands JSON Schema draft-07 (the default) and 2020-12`;
    return { problems: [{ path: `${prefix}/$schema`, message }] };
  }
  try {
    const meta = checker(schema);
    if (!meta.validateSchema(schema)) return { problems: toProblems(meta.errors, prefix) };
    return { validate: compileCheckedSchema(schema) };
  } catch (err) {
    return { problems: [{ path: prefix || '/', message: `is not a usable JSON Schema: ${errorText(err)}` }] };
  }
}

/**
 * Compile a schema that compileUserSchema has already accepted (a
 * registered tool's): no meta-schema check, whose first use in a process
 * compiles the meta-schema itself. Throws what ajv throws.
 */
export function compileCheckedSchema(schema: JsonSchema): ValidateFunction {
  return compiler(schema).compile(schema);
}

/**
 * How validatorSource compiles. A prebuilt validator of another format is
 * not used (the schema is compiled as usual): bump this when ajv, its
 * options or the keywords above change.
 */
export const VALIDATOR_FORMAT = 'ajv-8.20.0/corral-1';

/**
 * The code of compileCheckedSchema's validator for `schema`, for the build
 * to store (wasm-tools/validate-specs.mjs) and prebuiltValidator to load:
 * compiling a schema costs ~60 ms on a process's first call, loading its code ~1 ms.
 */
export function validatorSource(schema: JsonSchema): string {
  const ajv = compiler(schema, true);
  return loadAjv().standaloneCode(ajv, ajv.compile(schema));
}

/** What a prebuilt validator's code may `require`: ajv's runtime helpers and this module's keyword functions. */
const PREBUILT_MODULES: Readonly<Record<string, unknown>> = {
  ...ajvRuntime,
  'corral:schema': { longerThan, shorterThan },
  // Every format compiler() adds: ajv-formats' full set and 'path'.
  'corral:formats': { ...(ajvRuntime['ajv-formats/dist/formats'] as { fullFormats: object }).fullFormats, path: isSafeGuestPath },
};

/**
 * Load validatorSource's code. Only for code Corral's own build made from
 * a schema it accepted (it runs as host code, as ajv's compiled code does);
 * throws when the code needs a module not in PREBUILT_MODULES.
 */
export function prebuiltValidator(source: string): ValidateFunction {
  const module = { exports: {} as { default?: unknown } };
  const require = (name: string): unknown => {
    if (!Object.hasOwn(PREBUILT_MODULES, name)) throw new Error(`a prebuilt validator requires '${name}', which Corral does not provide`);
    return PREBUILT_MODULES[name];
  };
  new Function('module', 'exports', 'require', source)(module, module.exports, require);
  const validate = module.exports.default;
  if (typeof validate !== 'function') throw new Error('a prebuilt validator exports no function');
  return validate as ValidateFunction;
}

/** ajv errors → problems, with messages that name what ajv keeps in `params`. */
export function toProblems(errors: ErrorObject[] | null | undefined, prefix = ''): Problem[] {
  return (errors ?? []).map((e) => ({ path: prefix + e.instancePath || '/', message: describe(e) }));
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return `must NOT have additional property '${String(p.additionalProperty)}'`;
    case 'enum':
      return `${e.message} (${(p.allowedValues as unknown[]).map(show).join(', ')})`;
    case 'const':
      return `must be ${show(p.allowedValue)}`;
    case 'format':
      return FORMAT_MESSAGES[String(p.format)] ?? e.message ?? 'has the wrong format';
    default:
      return e.message ?? `fails ${e.keyword}`;
  }
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** "a: x; b: y" — the one-line form used in error messages. */
export function problemsText(problems: Problem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('; ');
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
