/**
 * `{{ expr }}` templates in strings, and values (a step's input, an output)
 * whose strings hold them. A string that is exactly one `{{ expr }}` gives
 * the expression's value as it is (a number, an object …); otherwise each
 * value is written into the string: strings as they are, anything else as
 * JSON. Templates are parsed once, at load.
 */
import { ExpressionError, evaluate, parseExpression, type Expr, type Scope } from './expression.js';

export interface TemplatePart {
  expr: Expr;
  /** The text between the braces, and its 0-based offset in the template. */
  source: string;
  offset: number;
}

export interface Template {
  /** Literal text and expressions, in order. */
  parts: Array<string | TemplatePart>;
  /** True when the whole string is one `{{ expr }}`: the value is not turned into text. */
  whole: boolean;
}

/** Whether a string holds a template at all (plain strings stay constants). */
export function hasTemplate(text: string): boolean {
  return text.includes('{{');
}

/** Parse a template; throws ExpressionError with a 1-based column within `text`. */
export function parseTemplate(text: string): Template {
  const parts: Template['parts'] = [];
  let i = 0;
  let literal = '';
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    if (open < 0) break;
    literal += text.slice(i, open);
    const start = open + 2;
    const close = findClose(text, start);
    if (close < 0) throw new ExpressionError("'{{' is not closed by '}}'", open + 1);
    const source = text.slice(start, close);
    if (source.trim() === '') throw new ExpressionError("'{{ }}' holds no expression", open + 1);
    if (literal) parts.push(literal);
    literal = '';
    parts.push({ expr: parseExpression(source, start), source, offset: start });
    i = close + 2;
  }
  literal += text.slice(i);
  if (literal) parts.push(literal);
  return { parts, whole: parts.length === 1 && typeof parts[0] !== 'string' };
}

/** The '}}' that ends an expression starting at `from`, skipping quoted strings (which may hold '}}'). */
function findClose(text: string, from: number): number {
  let quote: string | null = null;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '}' && text[i + 1] === '}') {
      return i;
    }
  }
  return -1;
}

export function renderTemplate(template: Template, scope: Scope): unknown {
  if (template.whole) return evaluate((template.parts[0] as TemplatePart).expr, scope);
  let out = '';
  for (const part of template.parts) {
    if (typeof part === 'string') out += part;
    else {
      const v = evaluate(part.expr, scope);
      out += typeof v === 'string' ? v : JSON.stringify(v ?? null);
    }
  }
  return out;
}

/** A value with its templates parsed: rendering builds a fresh copy each time. */
export type CompiledValue =
  | { kind: 'constant'; value: null | boolean | number | string }
  | { kind: 'template'; template: Template }
  | { kind: 'array'; items: CompiledValue[] }
  | { kind: 'object'; entries: Array<[string, CompiledValue]> };

/** Where a template failed: the JSON pointer of its string, below the value compiled, and the error. */
export interface TemplateProblem {
  pointer: string;
  error: ExpressionError;
}

/** JSON Pointer escaping of one key (RFC 6901). */
export function pointerToken(key: string | number): string {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * Parse every template in a JSON value. Problems are collected, not thrown,
 * so a file's every bad template is reported at once.
 */
export function compileValue(value: unknown, problems: TemplateProblem[], pointer = ''): CompiledValue {
  if (typeof value === 'string') {
    if (!hasTemplate(value)) return { kind: 'constant', value };
    try {
      return { kind: 'template', template: parseTemplate(value) };
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      problems.push({ pointer, error: err });
      return { kind: 'constant', value };
    }
  }
  if (Array.isArray(value)) return { kind: 'array', items: value.map((v, i) => compileValue(v, problems, `${pointer}/${i}`)) };
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).map(([k, v]): [string, CompiledValue] => [
      k,
      compileValue(v, problems, `${pointer}/${pointerToken(k)}`),
    ]);
    return { kind: 'object', entries };
  }
  return { kind: 'constant', value: (value ?? null) as null | boolean | number };
}

export function renderValue(value: CompiledValue, scope: Scope): unknown {
  switch (value.kind) {
    case 'constant':
      return value.value;
    case 'template':
      return renderTemplate(value.template, scope);
    case 'array':
      return value.items.map((v) => renderValue(v, scope));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of value.entries) {
        // A key named __proto__ is data here (YAML makes it an own property too), never the prototype.
        Object.defineProperty(out, k, { value: renderValue(v, scope), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
}

/** Every template in a compiled value, with its pointer, for load-time reference checks. */
export function templatesIn(value: CompiledValue, pointer = ''): Array<{ pointer: string; template: Template }> {
  switch (value.kind) {
    case 'constant':
      return [];
    case 'template':
      return [{ pointer, template: value.template }];
    case 'array':
      return value.items.flatMap((v, i) => templatesIn(v, `${pointer}/${i}`));
    case 'object':
      return value.entries.flatMap(([k, v]) => templatesIn(v, `${pointer}/${pointerToken(k)}`));
  }
}
