/**
 * The expression language and templates: what parses (and the column of
 * what does not), what values come out, and that nothing but own data
 * properties of plain objects and arrays is ever reached.
 */
import {
  ExpressionError,
  evaluate,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  parseExpression,
  parseTemplate,
  renderTemplate,
  truthy,
} from '@corral/workflow';
import { describe, expect, it } from 'vitest';

const scope = {
  inputs: { n: 5, name: 'corral', list: [1, 'two', { three: 3 }], empty: '', zero: 0, nothing: null, nested: { a: { b: [10, 20] } } },
  steps: {
    summary: { status: 'succeeded', output: { totals: { additions: 120, files: 3 }, 'odd-key': true }, error: null },
    lint: { status: 'failed', output: null, error: { code: 'E_NETWORK_BLOCKED', message: 'no network' } },
  },
};
const run = (src: string) => evaluate(parseExpression(src), scope);

function parseError(src: string): { message: string; column: number } {
  try {
    parseExpression(src);
  } catch (err) {
    expect(err).toBeInstanceOf(ExpressionError);
    return { message: (err as ExpressionError).message, column: (err as ExpressionError).column };
  }
  throw new Error(`parsed: ${src}`);
}

describe('expressions', () => {
  it.each([
    ['42', 42],
    ['-1.5e2', -150],
    ["'single'", 'single'],
    ['"double \\"quoted\\" \\u00e9\\n"', 'double "quoted" é\n'],
    ['true', true],
    ['null', null],
    ['inputs.n', 5],
    ['inputs["name"]', 'corral'],
    ['inputs.list[1]', 'two'],
    ['inputs.list[2].three', 3],
    ['inputs.nested.a.b[1]', 20],
    ['steps.summary.output.totals.additions > 80', true],
    ['steps.summary.output["odd-key"]', true],
    ['steps.summary.output.totals.additions >= 120 && steps.summary.output.totals.files < 3', false],
    ["steps.lint.status == 'failed' || false", true],
    ["steps.lint.error.code == 'E_NETWORK_BLOCKED'", true],
    ['!(inputs.n == 5)', false],
    ['!!inputs.name', true],
    ['inputs.list.length', 3],
    ['inputs.name.length', 6],
    ["'two' in inputs.list", true],
  ] as Array<[string, unknown]>)('%s', (src, value) => {
    expect(run(src)).toEqual(value);
  });

  it('compares JSON values structurally, and never across types', () => {
    expect(run('inputs.list == [1, "two", inputs.list[2]]')).toBe(true);
    expect(run("inputs.n == '5'")).toBe(false);
    expect(run("inputs.n != '5'")).toBe(true);
    expect(run('inputs.n < "6"')).toBe(false); // number against string: false, not an error
    expect(run('inputs.n >= "6"')).toBe(false);
    expect(run("'abc' < 'abd'")).toBe(true);
    expect(run('null == inputs.missing')).toBe(true);
    expect(run('inputs.nothing < 1')).toBe(false);
    expect(run('-inputs.name')).toBe(null);
  });

  it('gives null for anything missing, at any depth, instead of failing', () => {
    expect(run('inputs.missing')).toBe(null);
    expect(run('inputs.missing.deeper[3].still')).toBe(null);
    expect(run('inputs.list[7]')).toBe(null);
    expect(run('inputs.list[-1]')).toBe(null);
    expect(run('inputs.list[1.5]')).toBe(null);
    expect(run('inputs.n.length')).toBe(null);
    expect(run('inputs[inputs.list]')).toBe(null);
    expect(run('steps.nope.output')).toBe(null);
  });

  it('has in for arrays, substrings and object keys', () => {
    expect(run("'orr' in inputs.name")).toBe(true);
    expect(run('1 in inputs.name')).toBe(false);
    expect(run("'a' in inputs.nested")).toBe(true);
    expect(run("'b' in inputs.nested")).toBe(false);
    expect(run("'x' in inputs.n")).toBe(false);
  });

  it('counts false, null, 0 and "" as false; everything else, empty arrays included, as true', () => {
    for (const v of [false, null, 0, '', Number.NaN, undefined]) expect(truthy(v)).toBe(false);
    for (const v of [true, 1, 'x', [], {}, -1]) expect(truthy(v)).toBe(true);
    expect(run('inputs.empty || inputs.zero || inputs.nothing')).toBe(false);
  });

  it('refuses bad expressions with the column of the fault', () => {
    expect(parseError('steps.summary.output.totals.additions > ')).toEqual({ message: "expected a value after '>'", column: 39 });
    expect(parseError('')).toEqual({ message: 'the expression is empty', column: 1 });
    expect(parseError('a = 1')).toEqual({ message: "'=' assigns in other languages; compare with '=='", column: 3 });
    expect(parseError('a & b')).toEqual({ message: "use '&&' for boolean logic", column: 3 });
    expect(parseError("'open")).toEqual({ message: "the string that starts here is not closed (missing ')", column: 1 });
    expect(parseError('"bad \\q"')).toEqual({ message: 'unknown escape \\q', column: 6 });
    expect(parseError('(a == 1')).toEqual({ message: "expected ')', found the end of the expression", column: 8 });
    expect(parseError('a b')).toEqual({ message: "unexpected 'b' after a complete expression", column: 3 });
    expect(parseError('1 < 2 < 3')).toEqual({ message: "comparisons do not chain: write 'a < b && b < c'", column: 7 });
    expect(parseError('a.')).toEqual({ message: "expected a member name after '.', found the end of the expression", column: 3 });
    expect(parseError('12abc')).toEqual({ message: "'12a' is not a number", column: 1 });
    expect(parseError('a $ b')).toEqual({ message: "unexpected character '$'", column: 3 });
    expect(parseError('in')).toEqual({ message: "expected a value before 'in'", column: 1 });
    expect(parseError('{"a": 1}.a')).toEqual({ message: "unexpected character '{'", column: 1 });
  });

  it('bounds length and nesting', () => {
    expect(parseError('1'.repeat(MAX_EXPRESSION_LENGTH + 1)).message).toBe(
      `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`,
    );
    expect(() => parseExpression(`${'('.repeat(MAX_EXPRESSION_DEPTH - 2)}1${')'.repeat(MAX_EXPRESSION_DEPTH - 2)}`)).not.toThrow();
    const deep = parseError(`${'('.repeat(MAX_EXPRESSION_DEPTH + 1)}1${')'.repeat(MAX_EXPRESSION_DEPTH + 1)}`);
    expect(deep.message).toBe(`the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
    expect(parseError('!'.repeat(200) + 'true').message).toBe(`the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels`);
  });
});

describe('expressions cannot reach past plain data', () => {
  it('refuse __proto__, constructor and prototype written out', () => {
    expect(parseError('inputs.constructor')).toEqual({ message: "'constructor' cannot be read in an expression", column: 8 });
    expect(parseError('inputs.__proto__.polluted')).toEqual({ message: "'__proto__' cannot be read in an expression", column: 8 });
    expect(parseError("inputs['prototype']")).toEqual({ message: "'prototype' cannot be read in an expression", column: 8 });
  });

  it('give null for them when computed, and for inherited members, getters and class instances', () => {
    const name = { inputs: { k: 'constructor', p: '__proto__', s: 'toString', h: 'hasOwnProperty' } };
    const tricky = {
      ...name,
      steps: {
        a: {
          output: JSON.parse('{"__proto__": {"polluted": true}, "plain": 1}'),
          error: Object.defineProperty({}, 'secret', { get: () => 'ran a getter', enumerable: true }),
          status: new Date(0),
        },
      },
    };
    const ev = (src: string) => evaluate(parseExpression(src), tricky);
    expect(ev('inputs[inputs.k]')).toBe(null);
    expect(ev('inputs[inputs.p]')).toBe(null);
    expect(ev('inputs[inputs.s]')).toBe(null); // inherited from Object.prototype
    expect(ev('inputs[inputs.h]')).toBe(null);
    expect(ev('inputs.k[inputs.k]')).toBe(null); // a string's constructor
    expect(ev('inputs.k[inputs.k][inputs.k]')).toBe(null); // …and Function
    expect(ev('steps.a.output[inputs.p].polluted')).toBe(null); // an own "__proto__" key from JSON.parse
    expect(ev('steps.a.output.plain')).toBe(1);
    expect(ev('steps.a.error.secret')).toBe(null); // a getter is never run
    expect(ev('steps.a.status.getTime')).toBe(null); // not a plain object
    expect(ev("'x' in steps.a.status")).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('templates', () => {
  const render = (text: string) => renderTemplate(parseTemplate(text), scope);

  it('give the raw value for a string that is exactly one {{ }}, text otherwise', () => {
    expect(render('{{ steps.summary.output.totals }}')).toEqual({ additions: 120, files: 3 });
    expect(render('{{inputs.n}}')).toBe(5);
    expect(render(' {{ inputs.n }}')).toBe(' 5');
    expect(render('{{ inputs.name }} has {{ inputs.n }} of {{ inputs.list }}; {{ inputs.missing }}')).toBe(
      'corral has 5 of [1,"two",{"three":3}]; null',
    );
    expect(render('no templates')).toBe('no templates');
    expect(render('{{ \'}}\' }} and {{ "{{" }}')).toBe('}} and {{');
  });

  it('refuse unclosed and empty {{ }}, and bad expressions, with the column in the template', () => {
    const error = (text: string) => {
      try {
        parseTemplate(text);
      } catch (err) {
        return { message: (err as ExpressionError).message, column: (err as ExpressionError).column };
      }
      return null;
    };
    expect(error('diff: {{ inputs.diff')).toEqual({ message: "'{{' is not closed by '}}'", column: 7 });
    expect(error('a {{ }} b')).toEqual({ message: "'{{ }}' holds no expression", column: 3 });
    expect(error('x={{ inputs.n > }}')).toEqual({ message: "expected a value after '>'", column: 15 });
  });
});
