/**
 * A JSON input form from a tool's input_schema: the pure part (which field
 * becomes which control, and how the controls' values become the input
 * object). advanced.ts draws the controls. Anything the form cannot express
 * (nested objects, arrays, unions) gets a JSON text box for that field, and
 * a schema that is not an object with properties gets one for the whole input.
 */

export type FieldKind = 'string' | 'text' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface Field {
  name: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  /** For 'enum': the allowed values (as JSON-able values). */
  options?: unknown[];
  /** The schema's default, when it has one. */
  default?: unknown;
  minimum?: number;
  maximum?: number;
  /** For strings: a regular expression the browser can check. */
  pattern?: string;
}

/** A form value: text for every control but checkboxes. */
export type FieldValue = string | boolean;

type Schema = Record<string, unknown>;
/** Property names that usually hold many lines. */
const LONG_TEXT = /^(diff|patch|text|content|contents|body|source|code|document|prompt|markdown|html|json|yaml|csv)$/i;
const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Fields for an object schema with `properties`; null when the schema needs the raw JSON editor. */
export function fieldsFromSchema(schema: unknown): Field[] | null {
  if (!isObject(schema) || !isObject(schema.properties)) return null;
  if (schema.type !== undefined && schema.type !== 'object') return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  return Object.entries(schema.properties).map(([name, raw]) => fieldFor(name, isObject(raw) ? raw : {}, required.has(name)));
}

function fieldFor(name: string, s: Schema, required: boolean): Field {
  const field: Field = { name, kind: 'json', required };
  if (typeof s.description === 'string') field.description = s.description;
  else if (typeof s.title === 'string') field.description = s.title;
  if ('default' in s) field.default = s.default;
  const type = Array.isArray(s.type) ? (s.type.length === 1 ? s.type[0] : undefined) : s.type;
  const values = Array.isArray(s.enum) ? s.enum : 'const' in s ? [s.const] : null;
  if (values && values.length > 0 && values.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) {
    field.kind = 'enum';
    field.options = values;
  } else if (type === 'string') {
    // Long free text (a diff, a document) gets a text area; other strings an input line.
    const long = (typeof s.maxLength === 'number' && s.maxLength > 1000) || LONG_TEXT.test(name);
    field.kind = long && typeof s.pattern !== 'string' && typeof s.format !== 'string' ? 'text' : 'string';
    if (typeof s.pattern === 'string') field.pattern = s.pattern;
  } else if (type === 'number' || type === 'integer') {
    field.kind = type;
    if (typeof s.minimum === 'number') field.minimum = s.minimum;
    if (typeof s.maximum === 'number') field.maximum = s.maximum;
  } else if (type === 'boolean') {
    field.kind = 'boolean';
  }
  return field;
}

/** The control's starting value. */
export function initialValue(field: Field): FieldValue {
  if (field.kind === 'boolean') return field.default === true;
  if (field.default === undefined) return field.kind === 'enum' && field.required ? JSON.stringify(field.options![0]) : '';
  if (field.kind === 'json' || field.kind === 'enum') return JSON.stringify(field.default, null, field.kind === 'json' ? 2 : 0);
  return String(field.default);
}

export class FormError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The input object from the controls' values. Empty optional fields are
 * left out (so the tool's own defaults apply); JSON boxes are parsed.
 * Type checks beyond parsing are the runtime's job: it validates the input
 * against the schema and answers E_INPUT_VALIDATION with every problem.
 */
export function inputFromValues(fields: Field[], values: Record<string, FieldValue>): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name] ?? initialValue(field);
    if (field.kind === 'boolean') {
      // An unticked optional box without a default says nothing.
      if (value === true || field.required || field.default !== undefined) input[field.name] = value === true;
      continue;
    }
    const text = String(value);
    if (text === '' && field.kind !== 'string' && field.kind !== 'text') {
      if (field.required) throw new FormError(field.name, 'required');
      continue;
    }
    if (text === '' && !field.required) continue;
    switch (field.kind) {
      case 'number':
      case 'integer':
        input[field.name] = Number(text);
        break;
      case 'enum':
      case 'json':
        try {
          input[field.name] = JSON.parse(text);
        } catch (err) {
          throw new FormError(field.name, (err as Error).message);
        }
        break;
      default:
        input[field.name] = text;
    }
  }
  return input;
}
