/** Where a bundled tool's files are, as URLs a page can fetch. */
export interface BundledToolFiles {
  /** The tool's name, which is also its folder and the `name` in its tool-spec.json. */
  name: string;
  /** The wasi:cli command component (what Node runs). */
  wasmUrl: string;
  /** The same tool built as a WASI preview1 module. */
  moduleUrl: string;
  /**
   * The component transpiled by jco when this package was built
   * (prepare-components.mjs), so a page runs it without loading jco. The
   * file is missing when the package was built without that step; the
   * component is then transpiled as any other.
   */
  preparedUrl: string;
  /**
   * The code of the tool's input and output validators, compiled from its
   * tool-spec.json when this package was built (validate-specs.mjs), so a
   * page need not compile the JSON Schemas. Missing without that step.
   */
  validatorsUrl: string;
}

/** Every tool of this package, in name order. */
export declare const toolFiles: BundledToolFiles[];
