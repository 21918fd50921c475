import { describe, expect, it } from 'vitest';
import { CorralError, detectWasmKind, sha256Hex } from '@corral/core';
import { COMPONENT_BYTES, MODULE_BYTES } from './helpers.js';

function registrationError(fn: () => unknown): CorralError {
  try {
    fn();
  } catch (err) {
    if (CorralError.is(err, 'E_REGISTRATION')) return err;
    throw err;
  }
  throw new Error('expected E_REGISTRATION');
}

describe('detectWasmKind', () => {
  it('recognises a core module', () => {
    expect(detectWasmKind(MODULE_BYTES)).toBe('module');
  });

  it('recognises a component', () => {
    expect(detectWasmKind(COMPONENT_BYTES)).toBe('component');
  });

  it('refuses a text file, naming the source and what it starts with', () => {
    const e = registrationError(() => detectWasmKind(new TextEncoder().encode('(module)\n'), 'tool.wasm'));
    expect(e.message).toMatch(/^tool\.wasm is not a WebAssembly file \(it starts with 28 6d 6f 64 75 6c 65 29 "\(module\)"/);
    expect(e.message).toMatch(/WebAssembly text/);
  });

  it('refuses an empty file', () => {
    const e = registrationError(() => detectWasmKind(new Uint8Array(), 'empty.wasm'));
    expect(e.message).toBe('empty.wasm is not a WebAssembly file (it is empty)');
  });

  it('refuses a truncated header', () => {
    const e = registrationError(() => detectWasmKind(MODULE_BYTES.subarray(0, 6), 'short.wasm'));
    expect(e.message).toMatch(/^short\.wasm is not a WebAssembly file \(it starts with 00 61 73 6d 01 00/);
  });

  it('refuses an old component binary version', () => {
    const e = registrationError(() => detectWasmKind(new Uint8Array([0, 0x61, 0x73, 0x6d, 0x0a, 0, 1, 0]), 'old.wasm'));
    expect(e.message).toMatch(/old\.wasm is a WebAssembly component of binary version 10/);
  });
});

describe('sha256Hex', () => {
  it('hashes with WebCrypto', async () => {
    expect(await sha256Hex(new TextEncoder().encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
