/**
 * What `corral init`, `corral build` and `corral test` need from a source
 * language: the files of a new tool, and how to turn its sources into the
 * component its tool-spec.json names. One module per language (c.ts,
 * rust.ts, js.ts); the commands know only this interface.
 */

/** The languages a tool can be written in. `js` covers TypeScript too. */
export type LanguageName = 'c' | 'rust' | 'js';

/** A new tool's files, by path relative to its folder. */
export type Scaffold = Record<string, string>;

export interface BuildContext {
  /** The tool folder (absolute): tool-spec.json and the sources. */
  dir: string;
  /** The tool's name, as tool-spec.json gives it. */
  name: string;
  /** The component file to write (absolute): the spec's `component`. */
  out: string;
  /** A progress line for the user (stderr); one per step that takes time. */
  log: (line: string) => void;
}

/**
 * A toolchain the build needs is not on this machine: the message names
 * what to install (`corral build` prints it and exits 1).
 */
export class MissingToolchain extends Error {}

export interface Language {
  name: LanguageName;
  /** The files of a new tool NAME: spec, source, README, an example input and its expected output. */
  scaffold(name: string): Scaffold;
  /** Whether DIR holds this language's sources (used when `corral build` is not told the language). */
  detect(dir: string): Promise<boolean>;
  /** Build the component; throws MissingToolchain when a compiler is absent, Error with the compiler's output otherwise. */
  build(ctx: BuildContext): Promise<void>;
}
