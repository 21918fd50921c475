/**
 * `corral.exec` in real Chromium: the same program the Node `corral exec`
 * tests run (test/fixtures/exec/shell.c), as a preview1 module and as a
 * component, with an in-memory tree and an OPFS folder for directories.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserCorral, readOpfsTree, writeOpfsTree } from '@corral/browser';
import { fetchBytes } from './fixtures.js';

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
let corral: BrowserCorral;
const folder = `exec-${Date.now()}`;

beforeAll(async () => {
  corral = await BrowserCorral.create({ size: 1, store: false });
  await writeOpfsTree(folder, { 'notes.txt': 'from OPFS\n' });
});
afterAll(async () => {
  await corral?.close();
  await (await navigator.storage.getDirectory()).removeEntry(folder, { recursive: true });
});

describe.each(['shell.wasm', 'shell.component.wasm'])('corral.exec on %s in a browser', (file) => {
  it('runs with argv, environment and stdin exactly as given', async () => {
    const wasm = await fetchBytes(`/test/fixtures/exec/${file}`);
    const args = await corral.exec(wasm, { argv0: file, args: ['args', 'two words', ''] });
    expect(args.exitCode).toBe(0);
    expect(text(args.stdout)).toBe(`argv[0]=${file}\nargv[1]=args\nargv[2]=two words\nargv[3]=\n`);
    const env = await corral.exec(wasm, { args: ['env'], env: { A: '1', EMPTY: '' } });
    expect(text(env.stdout)).toBe('A=1\nEMPTY=\ncount=2\n');
    const cat = await corral.exec(wasm, { args: ['cat'], stdin: new TextEncoder().encode('in, out') });
    expect(text(cat.stdout)).toBe('in, out');
  });

  it('streams output to callbacks as the program writes it', async () => {
    const wasm = await fetchBytes(`/test/fixtures/exec/${file}`);
    const chunks: string[] = [];
    const result = await corral.exec(wasm, {
      args: ['lines'],
      stdin: new TextEncoder().encode('a\nb\n'),
      onStdout: (chunk) => void chunks.push(text(chunk)),
    });
    expect(result.exitCode).toBe(0);
    expect(chunks.join('')).toBe('got: a\ngot: b\nend\n');
    expect(result.stdout.length).toBe(0);
  });

  it('reads a tree and writes an OPFS folder it was given, and nothing else', async () => {
    const wasm = await fetchBytes(`/test/fixtures/exec/${file}`);
    const tree = await corral.exec(wasm, {
      args: ['read', 'in/a.txt'],
      mounts: [{ guest: 'in', access: 'read', source: { kind: 'memory', tree: { 'a.txt': 'from a tree' } } }],
    });
    expect(text(tree.stdout)).toBe('from a tree');
    const wrote = await corral.exec(wasm, {
      args: ['write', `/data/${file}.txt`, 'hello'],
      mounts: [{ guest: '/data', access: 'read-write', source: { kind: 'opfs', path: folder } }],
    });
    expect(wrote.exitCode).toBe(0);
    const after = await readOpfsTree(folder);
    expect(text(after[`${file}.txt`] as Uint8Array)).toBe('hello');
    const outside = await corral.exec(wasm, { args: ['read', '/data/notes.txt'] });
    expect(outside.exitCode).toBe(1);
  });

  it('stops at its limits', async () => {
    const wasm = await fetchBytes(`/test/fixtures/exec/${file}`);
    const spin = await corral.exec(wasm, { args: ['spin'], timeoutMs: 300 }).catch((err: { code?: string }) => err);
    expect((spin as { code?: string }).code).toBe('E_RESOURCE_EXHAUSTED');
    const trap = await corral.exec(wasm, { args: ['trap'] });
    expect(trap.exited).toBe(false);
    expect(trap.error?.details?.trap).toBe(true);
  });
});
