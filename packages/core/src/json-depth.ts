/**
 * How deeply JSON may nest, and how to tell without recursing.
 *
 * V8's JSON.parse is iterative and accepts any depth, but JSON.stringify,
 * structured clone, ajv and most consumers recurse: a value nested 500,000
 * deep parses fine and then throws RangeError wherever it is passed on. So
 * Corral refuses such values at the edge (a tool's output, a caller's input)
 * with a typed error, and checks depth with loops only.
 */

/**
 * The deepest nesting of arrays and objects Corral accepts in a tool's
 * input or output: `[]` is depth 1, `{"a":[1]}` depth 2. Real tool data is
 * far shallower; this is about the most every common consumer of the value
 * (JSON.stringify, ajv, a browser's postMessage) handles without overflowing.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * Whether JSON text nests arrays and objects deeper than `max`. A lexical
 * scan: brackets inside strings (with their escapes) do not count, and text
 * that is not JSON is still answered (JSON.parse judges it afterwards).
 */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped, whatever it is
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}
