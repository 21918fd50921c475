/**
 * The expression language of `condition` and `{{ }}` templates: literals,
 * member access, comparisons, boolean logic, `in`. Its own tokenizer and
 * recursive-descent parser; evaluation walks the tree over plain JSON data.
 * Nothing here calls eval or Function, and no member access reaches beyond
 * the own properties of plain objects and arrays.
 *
 * Semantics a user must know (README.md says them too):
 * - a missing member (or a member of something that is not an object or
 *   array) is `null`, never an error;
 * - `==`/`!=` compare JSON values structurally, without type coercion;
 * - `< <= > >=` compare two numbers or two strings; any other pair is false;
 * - `&&`, `||`, `!` give booleans; falsy values are false, null, 0 and "".
 */

/** Longest expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Deepest nesting of an expression (parentheses, operators, members). */
export const MAX_EXPRESSION_DEPTH = 64;

/** Names no expression may read, whatever object they are on. */
const FORBIDDEN_MEMBERS = new Set(['__proto__', 'constructor', 'prototype']);

/** A parse error: `column` is 1-based within the expression (or the template holding it). */
export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
  constructor(
    message: string,
    readonly column: number,
  ) {
    super(message);
  }
}

export type BinaryOp = '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in';

/** `pos` is the 0-based offset in the source the expression was parsed from. */
export type Expr =
  | { kind: 'literal'; value: string | number | boolean | null; pos: number }
  | { kind: 'array'; items: Expr[]; pos: number }
  | { kind: 'root'; name: string; pos: number }
  | { kind: 'member'; object: Expr; name: string; pos: number }
  | { kind: 'index'; object: Expr; index: Expr; pos: number }
  | { kind: 'not'; operand: Expr; pos: number }
  | { kind: 'negate'; operand: Expr; pos: number }
  | { kind: 'binary'; op: BinaryOp; left: Expr; right: Expr; pos: number };

type Token =
  | { type: 'number'; value: number; pos: number }
  | { type: 'string'; value: string; pos: number }
  | { type: 'name'; value: string; pos: number }
  | { type: 'op'; value: string; pos: number }
  | { type: 'end'; value: ''; pos: number };

const OPERATORS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']', '.', ',', '-'];
const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', '/': '/', n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

/** `offset` is added to every position, so errors point into a template holding the expression. */
function tokenize(src: string, offset: number): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (message: string, at: number): never => {
    throw new ExpressionError(message, offset + at + 1);
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(src.slice(i))!;
      i += m[0].length;
      if (/[A-Za-z_]/.test(src[i] ?? '')) fail(`'${m[0]}${src[i]}' is not a number`, start);
      const value = Number(m[0]);
      if (!Number.isFinite(value)) fail(`${m[0]} is too large a number`, start);
      tokens.push({ type: 'number', value, pos: offset + start });
    } else if (c === '"' || c === "'") {
      let value = '';
      i++;
      for (;;) {
        if (i >= src.length) fail(`the string that starts here is not closed (missing ${c})`, start);
        const d = src[i]!;
        if (d === c) break;
        if (d === '\\') {
          const e = src[i + 1] ?? '';
          if (e === 'u') {
            const hex = src.slice(i + 2, i + 6);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('\\u must be followed by 4 hex digits', i);
            value += String.fromCharCode(Number.parseInt(hex, 16));
            i += 6;
          } else if (e in ESCAPES) {
            value += ESCAPES[e];
            i += 2;
          } else {
            fail(`unknown escape \\${e}`, i);
          }
        } else {
          value += d;
          i++;
        }
      }
      i++;
      tokens.push({ type: 'string', value, pos: offset + start });
    } else if (/[A-Za-z_]/.test(c)) {
      // Step ids may hold '-', and the language has no subtraction, so a name may too.
      const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(src.slice(i))!;
      i += m[0].length;
      tokens.push({ type: 'name', value: m[0], pos: offset + start });
    } else {
      const op = OPERATORS.find((o) => src.startsWith(o, i));
      if (!op) {
        if (c === '=') fail("'=' assigns in other languages; compare with '=='", start);
        if (c === '&' || c === '|') fail(`use '${c}${c}' for boolean logic`, start);
        fail(`unexpected character '${c}'`, start);
      }
      i += op!.length;
      tokens.push({ type: 'op', value: op!, pos: offset + start });
    }
  }
  tokens.push({ type: 'end', value: '', pos: offset + src.length });
  return tokens;
}

class Parser {
  #i = 0;
  #depth = 0;
  constructor(readonly tokens: Token[]) {}

  get #token(): Token {
    return this.tokens[this.#i]!;
  }

  #fail(message: string, token: Token = this.#token): never {
    throw new ExpressionError(message, token.pos + 1);
  }

  #describe(token: Token): string {
    if (token.type === 'end') return 'the end of the expression';
    if (token.type === 'string') return `the string ${JSON.stringify(token.value)}`;
    return `'${token.value}'`;
  }

  #isOp(value: string): boolean {
    const t = this.#token;
    return t.type === 'op' && t.value === value;
  }

  #expect(value: string, what: string): void {
    if (!this.#isOp(value)) this.#fail(`expected ${what}, found ${this.#describe(this.#token)}`);
    this.#i++;
  }

  /** Every level of nesting goes through here, so depth is bounded before the stack is. */
  #nested<T>(parse: () => T): T {
    if (++this.#depth > MAX_EXPRESSION_DEPTH) this.#fail(`the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
    try {
      return parse();
    } finally {
      this.#depth--;
    }
  }

  parse(): Expr {
    if (this.#token.type === 'end') this.#fail('the expression is empty');
    const expr = this.#or();
    const rest = this.tokens[this.#i]!; // read again: #or() moved on
    if (rest.type !== 'end') this.#fail(`unexpected ${this.#describe(rest)} after a complete expression`);
    return expr;
  }

  #or(): Expr {
    return this.#nested(() => {
      let left = this.#and();
      while (this.#isOp('||')) {
        const op = this.#token;
        this.#i++;
        left = { kind: 'binary', op: '||', left, right: this.#operand(() => this.#and(), op), pos: op.pos };
      }
      return left;
    });
  }

  #and(): Expr {
    let left = this.#equality();
    while (this.#isOp('&&')) {
      const op = this.#token;
      this.#i++;
      left = { kind: 'binary', op: '&&', left, right: this.#operand(() => this.#equality(), op), pos: op.pos };
    }
    return left;
  }

  #equality(): Expr {
    let left = this.#relation();
    while (this.#isOp('==') || this.#isOp('!=')) {
      const op = this.#token;
      this.#i++;
      left = { kind: 'binary', op: op.value as BinaryOp, left, right: this.#operand(() => this.#relation(), op), pos: op.pos };
    }
    return left;
  }

  #relationOp(): BinaryOp | null {
    const t = this.#token;
    if (t.type === 'op' && ['<', '<=', '>', '>='].includes(t.value)) return t.value as BinaryOp;
    if (t.type === 'name' && t.value === 'in') return 'in';
    return null;
  }

  #relation(): Expr {
    const left = this.#unary();
    const op = this.#relationOp();
    if (!op) return left;
    const token = this.#token;
    this.#i++;
    const right = this.#operand(() => this.#unary(), token);
    if (this.#relationOp()) this.#fail(`comparisons do not chain: write 'a ${op} b && b ${this.#token.value} c'`);
    return { kind: 'binary', op, left, right, pos: token.pos };
  }

  /** The operand after the operator `op` (already consumed), with a clear message, at the operator, when it is missing. */
  #operand(parse: () => Expr, op: Token): Expr {
    if (this.#token.type === 'end') this.#fail(`expected a value after '${op.value}'`, op);
    return parse();
  }

  #unary(): Expr {
    const t = this.#token;
    if (t.type !== 'op' || (t.value !== '!' && t.value !== '-')) return this.#postfix();
    return this.#nested(() => {
      this.#i++;
      const operand = this.#operand(() => this.#unary(), t);
      if (t.value === '-') {
        // Fold -3 into a literal, so a negative number reads like one in messages and trees.
        if (operand.kind === 'literal' && typeof operand.value === 'number') return { ...operand, value: -operand.value, pos: t.pos };
        return { kind: 'negate', operand, pos: t.pos };
      }
      return { kind: 'not', operand, pos: t.pos };
    });
  }

  #postfix(): Expr {
    let expr = this.#primary();
    for (;;) {
      const t = this.#token;
      if (t.type === 'op' && t.value === '.') {
        this.#i++;
        const name = this.#token;
        if (name.type !== 'name') this.#fail(`expected a member name after '.', found ${this.#describe(name)}`);
        if (FORBIDDEN_MEMBERS.has(name.value)) this.#fail(`'${name.value}' cannot be read in an expression`, name);
        this.#i++;
        expr = { kind: 'member', object: expr, name: name.value, pos: name.pos };
      } else if (t.type === 'op' && t.value === '[') {
        this.#i++;
        const index = this.#nested(() => this.#operand(() => this.#or(), t));
        if (index.kind === 'literal' && typeof index.value === 'string' && FORBIDDEN_MEMBERS.has(index.value)) {
          this.#fail(`'${index.value}' cannot be read in an expression`, { type: 'op', value: '[', pos: index.pos });
        }
        this.#expect(']', "']'");
        expr = { kind: 'index', object: expr, index, pos: t.pos };
      } else {
        return expr;
      }
    }
  }

  #primary(): Expr {
    const t = this.#token;
    switch (t.type) {
      case 'number':
      case 'string':
        this.#i++;
        return { kind: 'literal', value: t.value, pos: t.pos };
      case 'name':
        this.#i++;
        if (t.value === 'true' || t.value === 'false') return { kind: 'literal', value: t.value === 'true', pos: t.pos };
        if (t.value === 'null') return { kind: 'literal', value: null, pos: t.pos };
        if (t.value === 'in') this.#fail("expected a value before 'in'", t);
        return { kind: 'root', name: t.value, pos: t.pos };
      case 'op':
        if (t.value === '(') {
          this.#i++;
          const inner = this.#or();
          this.#expect(')', "')'");
          return inner;
        }
        if (t.value === '[') {
          this.#i++;
          const items: Expr[] = [];
          while (!this.#isOp(']')) {
            items.push(this.#nested(() => this.#or()));
            if (!this.#isOp(',')) break;
            this.#i++;
          }
          this.#expect(']', "',' or ']'");
          return { kind: 'array', items, pos: t.pos };
        }
        return this.#fail(`expected a value, found ${this.#describe(t)}`);
      case 'end':
        return this.#fail('expected a value, found the end of the expression');
    }
  }
}

/**
 * Parse an expression; throws ExpressionError with a 1-based column.
 * `offset` (0-based) is where the expression starts in a larger text, a template.
 */
export function parseExpression(source: string, offset = 0): Expr {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionError(`the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`, offset + 1);
  }
  return new Parser(tokenize(source, offset)).parse();
}

/** A JSON value, as expressions see them. */
export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

/** Plain data only: arrays, and objects whose prototype is Object.prototype or null (class instances are opaque). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** `value[key]` as expressions see it: own data properties only, null for everything else. */
export function member(value: unknown, key: string | number): unknown {
  if (typeof key === 'number') {
    if (Array.isArray(value) && Number.isInteger(key) && key >= 0 && key < value.length) return value[key] ?? null;
    return null;
  }
  if (FORBIDDEN_MEMBERS.has(key)) return null;
  if (key === 'length' && (typeof value === 'string' || Array.isArray(value))) return value.length;
  if (!isPlainObject(value) || !Object.hasOwn(value, key)) return null;
  const descriptor = Object.getOwnPropertyDescriptor(value, key);
  // A getter is code, not data: never run it.
  if (!descriptor || !('value' in descriptor)) return null;
  return descriptor.value === undefined ? null : descriptor.value;
}

export function truthy(v: unknown): boolean {
  return !(v === null || v === undefined || v === false || v === 0 || v === '' || Number.isNaN(v));
}

/** Structural equality of JSON values; values of different types are never equal. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined) return b === null;
  if (b === undefined) return a === null;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function compare(op: BinaryOp, a: unknown, b: unknown): boolean {
  if (!((typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string'))) return false;
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    default:
      return a >= b;
  }
}

function contains(container: unknown, item: unknown): boolean {
  if (Array.isArray(container)) return container.some((x) => jsonEqual(x, item));
  if (typeof container === 'string') return typeof item === 'string' && container.includes(item);
  if (isPlainObject(container)) return typeof item === 'string' && member(container, item) !== null;
  return false;
}

/** The values expressions start from: `inputs` and `steps`. */
export type Scope = Readonly<Record<string, unknown>>;

/** Evaluate a parsed expression. Never throws on data: what is missing is null. */
export function evaluate(expr: Expr, scope: Scope): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'array':
      return expr.items.map((item) => evaluate(item, scope));
    case 'root':
      return member(scope, expr.name);
    case 'member':
      return member(evaluate(expr.object, scope), expr.name);
    case 'index': {
      const key = evaluate(expr.index, scope);
      return typeof key === 'string' || typeof key === 'number' ? member(evaluate(expr.object, scope), key) : null;
    }
    case 'not':
      return !truthy(evaluate(expr.operand, scope));
    case 'negate': {
      const v = evaluate(expr.operand, scope);
      return typeof v === 'number' ? -v : null;
    }
    case 'binary':
      switch (expr.op) {
        case '||':
          return truthy(evaluate(expr.left, scope)) || truthy(evaluate(expr.right, scope));
        case '&&':
          return truthy(evaluate(expr.left, scope)) && truthy(evaluate(expr.right, scope));
        case '==':
          return jsonEqual(evaluate(expr.left, scope), evaluate(expr.right, scope));
        case '!=':
          return !jsonEqual(evaluate(expr.left, scope), evaluate(expr.right, scope));
        case 'in':
          return contains(evaluate(expr.right, scope), evaluate(expr.left, scope));
        default:
          return compare(expr.op, evaluate(expr.left, scope), evaluate(expr.right, scope));
      }
  }
}

/** A path an expression reads from a root, as far as it is static: `steps.a.output` → ['steps', 'a', 'output']. */
export interface Reference {
  path: string[];
  /** 0-based offset of the root name. */
  pos: number;
}

/**
 * Every read of a root in `expr`, with its leading static members (`.x` or
 * `["x"]`): what load-time checks compare against the workflow's inputs
 * and steps.
 */
export function references(expr: Expr): Reference[] {
  const out: Reference[] = [];
  const walk = (e: Expr): void => {
    const chain = staticChain(e);
    if (chain) {
      out.push(chain);
      // What is left of the chain (computed indexes) may read roots too.
      for (let x: Expr = e; x.kind === 'member' || x.kind === 'index'; x = x.object) if (x.kind === 'index') walk(x.index);
      return;
    }
    switch (e.kind) {
      case 'array':
        e.items.forEach(walk);
        return;
      case 'not':
      case 'negate':
        walk(e.operand);
        return;
      case 'binary':
        walk(e.left);
        walk(e.right);
        return;
      default:
        return;
    }
  };
  walk(expr);
  return out;
}

/** For a member/index chain that starts at a root: the root and the static members right after it. */
function staticChain(e: Expr): Reference | null {
  const links: Expr[] = [];
  let x = e;
  while (x.kind === 'member' || x.kind === 'index') {
    links.unshift(x);
    x = x.object;
  }
  if (x.kind !== 'root') return null;
  const path = [x.name];
  for (const link of links) {
    if (link.kind === 'member') path.push(link.name);
    else if (link.kind === 'index' && link.index.kind === 'literal' && typeof link.index.value === 'string') path.push(link.index.value);
    else break;
  }
  return { path, pos: x.pos };
}
