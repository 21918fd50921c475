/**
 * Corral's WASI 0.2 host, called the way jco's glue calls it — including
 * the way a component that lies about WASI's types makes the glue call it
 * (strings where numbers belong, huge lengths, names from Object.prototype).
 */
import { describe, expect, it } from 'vitest';
import { GuestTypeError } from '@corral/wasi';
import { DiskQuota, MemoryBackend, mountRoot, type Descriptor } from '@corral/wasi/fs';
import { CappedSink, preview2Imports, ProcExit } from '@corral/wasi/internal';

function host(options: { quotaBytes?: number; file?: Uint8Array } = {}) {
  const quota = new DiskQuota(options.quotaBytes ?? 1 << 20);
  const root = mountRoot(MemoryBackend.fromTree({ 'big.bin': options.file ?? new Uint8Array(8 << 20) }), { readOnly: false, quota });
  const stdout = new CappedSink(1 << 20, 'head');
  const imports = preview2Imports({
    args: ['tool'],
    env: { TZ: 'UTC' },
    stdin: new TextEncoder().encode('{"a":1}'),
    stdout,
    stderr: new CappedSink(1 << 20, 'tail'),
    preopens: [[root, '/data']],
    memoryLimitBytes: 16 << 20,
  });
  const fs = imports['wasi:filesystem/types']!;
  const open = (path: string, write = false) =>
    (root as unknown as { openAt: (...a: unknown[]) => Descriptor }).openAt(
      { symlinkFollow: false },
      path,
      { create: write, directory: false, exclusive: false, truncate: false },
      { read: true, write },
    );
  return { imports, quota, root, open, stdout, fs };
}

describe('the imports object', () => {
  it('has exactly the WASI interfaces, and nothing inherited anywhere', () => {
    const { imports } = host();
    expect(Object.getPrototypeOf(imports)).toBeNull();
    expect(imports['constructor']).toBeUndefined();
    // biome-ignore lint/suspicious/noProto: checking that the key is not there is the point
    expect(imports['__proto__']).toBeUndefined();
    for (const [name, iface] of Object.entries(imports)) {
      expect(name).toMatch(/^wasi:(cli|clocks|filesystem|io|random)\//);
      expect(Object.getPrototypeOf(iface), name).toBeNull();
      expect(iface['constructor'], name).toBeUndefined();
      expect(iface['toString'], name).toBeUndefined();
    }
    const { Descriptor } = imports['wasi:filesystem/types'] as { Descriptor: { bind?: unknown; prototype: object } };
    // `[static]descriptor.bind` or a `to-string` method would find nothing.
    expect(Descriptor.bind).toBeUndefined();
    expect((Descriptor.prototype as { toString?: unknown }).toString).toBeUndefined();
  });

  it("offers under a string name only WIT methods: a host-only method is a symbol, which no component's WIT can name", () => {
    const { imports } = host();
    const types = imports['wasi:filesystem/types'] as Record<string, { prototype: object }>;
    // wasi:filesystem/types@0.2 `descriptor` and `directory-entry-stream`, as jco names them, and what a drop calls.
    const wit = new Set([
      ...['readViaStream', 'writeViaStream', 'appendViaStream', 'advise', 'syncData', 'getFlags', 'getType', 'setSize', 'setTimes'],
      ...['read', 'write', 'readDirectory', 'sync', 'createDirectoryAt', 'stat', 'statAt', 'setTimesAt', 'linkAt', 'openAt'],
      ...['readlinkAt', 'removeDirectoryAt', 'renameAt', 'symlinkAt', 'unlinkFileAt', 'isSameObject', 'metadataHash'],
      ...['metadataHashAt', 'lockShared', 'lockExclusive', 'tryLockShared', 'tryLockExclusive', 'unlock'],
      'readDirectoryEntry',
      // Closing is what dropping the descriptor does anyway.
      'close',
      'constructor',
    ]);
    for (const type of ['Descriptor', 'DirectoryEntryStream']) {
      const names = Object.getOwnPropertyNames(types[type]!.prototype);
      expect(
        names.filter((n) => !wit.has(n)),
        type,
      ).toEqual([]);
    }
  });

  it('hands out resources only the host can make', () => {
    const { fs, imports } = host();
    const D = fs['Descriptor'] as new (...a: unknown[]) => unknown;
    expect(() => new D()).toThrow(GuestTypeError);
    const { Pollable } = imports['wasi:io/poll'] as { Pollable: new (...a: unknown[]) => unknown };
    expect(() => new Pollable()).toThrow(GuestTypeError);
  });
});

// wasi-testsuite rust/path_filestat through the preview1 adapter: it opens with SYNC and reads
// the flag back from get-flags. The sync flags are kept as asked and honoured.
describe('descriptor flags', () => {
  it('get-flags reports the sync flags a file was opened with, and each write through it is synced', () => {
    const backend = MemoryBackend.fromTree({ 'a.txt': new Uint8Array(3) });
    let syncs = 0;
    backend.sync = () => void syncs++;
    const root = mountRoot(backend, { readOnly: false, quota: new DiskQuota(1 << 20) });
    const openFile = (flags: Record<string, boolean>) =>
      (root as unknown as { openAt: (...a: unknown[]) => Descriptor }).openAt({}, 'a.txt', {}, { read: true, write: true, ...flags });
    const synced = openFile({ fileIntegritySync: true });
    expect(synced.getFlags()).toEqual({
      read: true,
      write: true,
      mutateDirectory: false,
      fileIntegritySync: true,
      dataIntegritySync: false,
      requestedWriteSync: false,
    });
    synced.write(new Uint8Array([1, 2]), 0n);
    expect(syncs).toBe(1);
    const stream = synced.appendViaStream();
    stream.blockingWriteAndFlush(new Uint8Array([3]));
    expect(syncs).toBe(2);
    const data = openFile({ dataIntegritySync: true, requestedWriteSync: true });
    expect(data.getFlags()).toMatchObject({ dataIntegritySync: true, requestedWriteSync: true, fileIntegritySync: false });
    data.writeViaStream(0n).blockingWriteAndFlush(new Uint8Array([4]));
    expect(syncs).toBe(3);
    const plain = openFile({});
    expect(plain.getFlags()).toMatchObject({ fileIntegritySync: false, dataIntegritySync: false, requestedWriteSync: false });
    plain.write(new Uint8Array([5]), 0n);
    expect(syncs).toBe(3);
  });
});

describe('values a lying component passes', () => {
  it('descriptor.write(buffer: string, offset: string) traps and the quota stays a number', () => {
    const { open, quota } = host({ quotaBytes: 1 << 20 });
    const file = open('new.txt', true) as unknown as { write: (...a: unknown[]) => unknown };
    const used = quota.usedBytes;
    expect(() => file.write('x'.repeat(100), '0')).toThrow(GuestTypeError);
    expect(() => file.write(new Uint8Array(4), 'NaN')).toThrow(GuestTypeError);
    expect(() => file.write(new Uint8Array(4), -1n)).toThrow(GuestTypeError);
    expect(() => file.write(new Uint8Array(4), 2n ** 64n)).toThrow(GuestTypeError);
    expect(() => file.write(new Uint8Array(4), Number.NaN)).toThrow(GuestTypeError);
    expect(quota.usedBytes).toBe(used);
    expect(Number.isFinite(quota.usedBytes)).toBe(true);
    // And the quota still holds: a write past it is refused.
    expect(() => file.write(new Uint8Array(2 << 20), 0n)).toThrow('insufficient-space');
    expect(quota.exceeded).toBe(true);
  });

  it('a read of 2^31-1 bytes returns one bounded chunk, not the whole length', () => {
    const { open } = host();
    const file = open('big.bin') as unknown as { read: (...a: unknown[]) => [Uint8Array, boolean] };
    const [chunk, end] = file.read(2n ** 31n - 1n, 0n);
    expect(chunk.length).toBe(1 << 20);
    expect(end).toBe(false);
    expect(() => file.read('2147483647', 0n)).toThrow(GuestTypeError);
  });

  it('path and flag arguments of the wrong type trap', () => {
    const { root } = host();
    const d = root as unknown as { openAt: (...a: unknown[]) => unknown; statAt: (...a: unknown[]) => unknown };
    expect(() => d.statAt({ symlinkFollow: false }, 42)).toThrow(GuestTypeError);
    expect(() => d.statAt({ symlinkFollow: 'yes' }, 'big.bin')).toThrow(GuestTypeError);
    expect(() => d.openAt(null, 'big.bin', {}, {})).toThrow(GuestTypeError);
    expect(() => (root as unknown as { renameAt: (...a: unknown[]) => unknown }).renameAt('big.bin', {}, 'x')).toThrow(GuestTypeError);
  });

  it('random bytes are bounded by the memory limit, stream reads by one chunk', () => {
    const { imports } = host();
    const random = imports['wasi:random/random'] as { getRandomBytes: (n: unknown) => Uint8Array };
    expect(random.getRandomBytes(16n)).toHaveLength(16);
    expect(() => random.getRandomBytes(2n ** 40n)).toThrow(GuestTypeError);
    expect(() => random.getRandomBytes(16)).toThrow(GuestTypeError);
    const stdin = (imports['wasi:cli/stdin'] as { getStdin: () => { blockingRead: (n: unknown) => Uint8Array } }).getStdin();
    expect(new TextDecoder().decode(stdin.blockingRead(2n ** 63n))).toBe('{"a":1}');
    expect(() => stdin.blockingRead(-1n)).toThrow(GuestTypeError);
  });

  it('exit codes are checked; exit unwinds with the code', () => {
    const exit = host().imports['wasi:cli/exit'] as { exit: (s: unknown) => never; exitWithCode: (c: unknown) => never };
    expect(() => exit.exit({ tag: 'err' })).toThrow(ProcExit);
    expect(() => exit.exit('ok')).toThrow(GuestTypeError);
    expect(() => exit.exitWithCode(3.5)).toThrow(GuestTypeError);
  });
});

describe('wasi:io/poll', () => {
  it('answers synchronously: ready pollables at once, a timer after its duration', () => {
    const { imports } = host();
    const { poll } = imports['wasi:io/poll'] as { poll: (l: unknown) => Uint32Array };
    const clock = imports['wasi:clocks/monotonic-clock'] as { subscribeDuration: (ns: bigint) => unknown };
    const stdin = (imports['wasi:cli/stdin'] as { getStdin: () => { subscribe: () => unknown } }).getStdin();
    const ready = poll([clock.subscribeDuration(10_000_000_000n), stdin.subscribe()]);
    expect(ready).toBeInstanceOf(Uint32Array);
    expect([...ready]).toEqual([1]);
    const started = performance.now();
    expect([...poll([clock.subscribeDuration(20_000_000n)])]).toEqual([0]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);
    expect(() => poll([])).toThrow(GuestTypeError);
    expect(() => poll([{}])).toThrow(GuestTypeError);
  });
});
