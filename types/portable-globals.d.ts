/**
 * The host globals packages/core and packages/wasi may use: the ones every
 * host they run on (Node ≥ 20, browsers, Web Workers, Deno, Bun) provides
 * with the same behaviour. Those two packages compile with `lib: ["ES2023"]`
 * and this file, nothing else, so a DOM or Node global (`navigator`,
 * `indexedDB`, `self.postMessage`, `process`, `Buffer`) fails the build
 * there. Add a global here only after checking every host has it.
 *
 * Only the members the code uses are declared; the shapes follow
 * TypeScript's lib.dom.d.ts so a value from either host fits them. This
 * file is not emitted: consumers of the built packages resolve these names
 * against their own DOM lib or @types/node.
 */

// Base64 (Node ≥ 16, browsers, Deno, Bun)
declare function atob(data: string): string;
declare function btoa(data: string): string;

// Encoding API
interface TextEncoderEncodeIntoResult {
  read: number;
  written: number;
}
interface TextEncoder {
  encode(input?: string): Uint8Array<ArrayBuffer>;
  encodeInto(source: string, destination: Uint8Array): TextEncoderEncodeIntoResult;
}
declare var TextEncoder: { prototype: TextEncoder; new (): TextEncoder };

interface TextDecodeOptions {
  stream?: boolean;
}
interface TextDecoderOptions {
  fatal?: boolean;
  ignoreBOM?: boolean;
}
interface TextDecoder {
  decode(input?: AllowSharedBufferSource, options?: TextDecodeOptions): string;
}
declare var TextDecoder: { prototype: TextDecoder; new (label?: string, options?: TextDecoderOptions): TextDecoder };

type BufferSource = ArrayBufferView<ArrayBuffer> | ArrayBuffer;
type AllowSharedBufferSource = ArrayBufferLike | ArrayBufferView<ArrayBufferLike>;

// Web Crypto
interface SubtleCrypto {
  digest(algorithm: 'SHA-1' | 'SHA-256' | 'SHA-384' | 'SHA-512', data: BufferSource): Promise<ArrayBuffer>;
}
interface Crypto {
  readonly subtle: SubtleCrypto;
  getRandomValues<T extends ArrayBufferView | null>(array: T): T;
  randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
}
declare var crypto: Crypto;

// High Resolution Time
interface Performance {
  readonly timeOrigin: number;
  now(): number;
}
declare var performance: Performance;

// Timers
declare function setTimeout(handler: () => void, timeout?: number): unknown;
declare function clearTimeout(id: ReturnType<typeof setTimeout> | undefined): void;

// Cancellation
interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
interface AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}
declare var AbortController: { prototype: AbortController; new (): AbortController };

// Channel messaging (in Node since v15 as globals)
// `any` as in lib.dom: a handler declares the message type it expects.
// biome-ignore lint/suspicious/noExplicitAny: the DOM's own default, kept so handlers typed for it fit
interface MessageEvent<T = any> {
  readonly data: T;
}
interface MessagePort {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown, transfer?: readonly ArrayBufferLike[]): void;
  close(): void;
}
declare var MessageChannel: { prototype: MessageChannel; new (): MessageChannel };
interface MessageChannel {
  readonly port1: MessagePort;
  readonly port2: MessagePort;
}

// WebAssembly JS API
declare namespace WebAssembly {
  type ImportExportKind = 'function' | 'table' | 'memory' | 'global' | 'tag';
  interface ModuleImportDescriptor {
    module: string;
    name: string;
    kind: ImportExportKind;
  }
  interface ModuleExportDescriptor {
    name: string;
    kind: ImportExportKind;
  }
  // biome-ignore lint/suspicious/noEmptyInterface: opaque, as in lib.dom
  interface Module {}
  var Module: {
    prototype: Module;
    new (bytes: BufferSource): Module;
    imports(module: Module): ModuleImportDescriptor[];
    exports(module: Module): ModuleExportDescriptor[];
  };
  interface Memory {
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  var Memory: { prototype: Memory; new (descriptor: { initial: number; maximum?: number; shared?: boolean }): Memory };
  interface Global {
    value: unknown;
  }
  var Global: { prototype: Global; new (descriptor: { value: string; mutable?: boolean }, value?: unknown): Global };
  type ExportValue = Function | Memory | object;
  type Exports = Record<string, ExportValue>;
  type ImportValue = Function | Memory | number | bigint | object;
  type ModuleImports = Record<string, ImportValue>;
  type Imports = Record<string, ModuleImports>;
  interface Instance {
    readonly exports: Exports;
  }
  var Instance: { prototype: Instance; new (module: Module, imports?: Imports): Instance };
  interface RuntimeError extends Error {}
  var RuntimeError: { prototype: RuntimeError; new (message?: string): RuntimeError };
  function compile(bytes: BufferSource): Promise<Module>;
  function validate(bytes: BufferSource): boolean;
  function instantiate(module: Module, imports?: Imports): Promise<Instance>;
}
