/**
 * The WASI conformance programs (see conformance.test.ts and
 * CONFORMANCE.md) in real Chromium: both of Corral's WASI paths — the
 * preview1 module and its component build — over an in-memory tree and
 * over a folder of the origin private file system (OPFS), through
 * `corral.exec`. Each run starts from a fresh copy of the same tree and
 * must print what the specification calls for (expected/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserCorral, writeOpfsTree, type MountBinding } from '@corral/browser';
import { CASES, GUEST, START_TREE, expectedExit } from './cases.mjs';

type Case = (typeof CASES)[number] & { program?: string; args?: string[]; env?: Record<string, string>; stdin?: string; stdout?: string };
type Host = 'p1/memory' | 'p1/opfs' | 'comp/memory' | 'comp/opfs';
const HOSTS: Host[] = ['p1/memory', 'p1/opfs', 'comp/memory', 'comp/opfs'];

/** Where Corral in a browser breaks the specification today: the cause, per host. */
const BROWSER_WRONG: Record<string, Partial<Record<Host, string>>> = {
  sockets: {
    // As in Node: jco's preview1 adapter traps in sock_* before Corral's host is called.
    'comp/memory': 'the preview1 adapter traps in sock_*',
    'comp/opfs': 'the preview1 adapter traps in sock_*',
  },
};

async function fetchBytes(path: string): Promise<Uint8Array> {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

let corral: BrowserCorral;
const opfsFolders: string[] = [];
beforeAll(async () => {
  corral = await BrowserCorral.create({ size: 1, store: false });
});
afterAll(async () => {
  await corral?.close();
  const root = await navigator.storage.getDirectory();
  for (const name of opfsFolders) await root.removeEntry(name, { recursive: true }).catch(() => {});
});

describe.each(CASES as Case[])('$id in Chromium', (testCase) => {
  for (const host of HOSTS) {
    const wrong = BROWSER_WRONG[testCase.id]?.[host];
    (wrong ? it.fails : it)(`${host}${wrong ? ` (known: ${wrong})` : ''}`, async () => {
      const program = testCase.program ?? testCase.id;
      const kind = host.startsWith('p1/') ? 'wasm' : 'component.wasm';
      const wasm = await fetchBytes(`/test/wasi/programs/${program}.${kind}`);
      let mount: MountBinding;
      if (host.endsWith('/opfs')) {
        const folder = `conformance-${testCase.id}-${host.replace('/', '-')}-${Date.now()}`;
        opfsFolders.push(folder);
        await writeOpfsTree(folder, structuredClone(START_TREE));
        mount = { guest: GUEST, access: 'read-write', source: { kind: 'opfs', path: folder } };
      } else {
        mount = { guest: GUEST, access: 'read-write', source: { kind: 'memory', tree: structuredClone(START_TREE) } };
      }
      const result = await corral.exec(wasm, {
        argv0: program,
        args: testCase.args ?? [],
        env: testCase.env ?? {},
        stdin: new TextEncoder().encode(testCase.stdin ?? ''),
        mounts: [mount],
        memoryMb: 64,
        diskMb: 16,
        timeoutMs: 30_000,
      });
      const want = testCase.stdout ?? new TextDecoder().decode(await fetchBytes(`/test/wasi/expected/${testCase.id}.txt`));
      const decode = (b: Uint8Array) => new TextDecoder().decode(b);
      expect(
        { exit: result.exitCode, stdout: decode(result.stdout) },
        `stderr:\n${decode(result.stderr)}\n${result.error ? `${result.error.code}: ${result.error.message}` : ''}`,
      ).toEqual({ exit: expectedExit(testCase, host.replace('opfs', 'memory')), stdout: want });
    });
  }
});
