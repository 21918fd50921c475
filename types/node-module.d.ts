/**
 * The one piece of Node's module API packages/core uses, for
 * src/ajv-loader.node.ts (loaded only where the package.json "node"
 * condition applies: Node, Deno, Bun). Core compiles without @types/node;
 * this file is not emitted.
 */
declare module 'node:module' {
  export function createRequire(path: string): (id: string) => unknown;
}
interface ImportMeta {
  readonly url: string;
}
