/** @corral/core — host-agnostic: errors, tool contract, registry, invoke pipeline. */
export * from './errors.js';
export type * from './types.js';
export { toolSpecSchema, validateSpec, parseSpec, specDefaults, type SpecValidation } from './spec.js';
export { isSafeGuestPath, type Problem } from './schema.js';
export { detectWasmKind, sha256Hex, type WasmKind } from './wasm.js';
export { Registry, parseToolRef } from './registry.js';
export { MAX_JSON_DEPTH, jsonTextTooDeep } from './json-depth.js';
export { Runtime, type InvokeOptions, type RuntimeOptions } from './invoke.js';
export { type DecisionInput } from './invoke.js';
export * from './snapshot.js';
export { MemoryStore } from './memory-store.js';
