/**
 * Text the CLI prints can come from a tool: its stderr, error messages that
 * quote it, recorded snapshot fields, spec descriptions. Printed raw, ESC
 * sequences retitle the window, clear the screen or fake earlier output; CR
 * overwrites a line; C1 controls (U+0080–U+009F) act as ESC sequences on some
 * terminals; U+2028/2029 break lines; bidi overrides (U+202E…) make text read
 * differently from what it is. Each of these is shown as a \uXXXX escape:
 * the spelling JSON uses, so JSON text stays valid JSON with the same value
 * (JSON.stringify escapes C0 controls itself, but not C1, DEL, U+2028 or bidi).
 */

/** Everything above except \t and \n, which a multi-line block needs. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** The same plus \t and \n: for text that must stay on its line (a table cell, a `corral: …` message). */
const CONTROLS_ONE_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every character that could act on a terminal escaped; `oneLine` escapes \n and \t too. */
export function forTerminal(text: string, { oneLine = false }: { oneLine?: boolean } = {}): string {
  return text.replace(oneLine ? CONTROLS_ONE_LINE : CONTROLS, unicodeEscape);
}
