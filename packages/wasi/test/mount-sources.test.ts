/**
 * Mount sources are data with a kind: `memory` is built in, every other
 * kind is opened by an opener the host registers, and anything else the
 * caller sends is E_INPUT_VALIDATION naming the kinds there are — in the
 * worker (callFilesystem) and before the call (checkMountSources).
 */
import { describe, expect, it } from 'vitest';
import type { MountBinding, MountSource } from '@corral/core';
import { MemoryBackend, callFilesystem, checkMountSources, sourceString, type MountOpeners } from '@corral/wasi/fs';

const bind = (source: unknown): MountBinding[] => [{ guest: '/w', access: 'read', source } as MountBinding];

/** What each kind's opener was given, and a memory backend holding one file for it. */
function recording(kind: string) {
  const seen: Array<[MountSource, string]> = [];
  const openers: MountOpeners = {
    [kind]: (source, guest) => {
      seen.push([source, guest]);
      return MemoryBackend.fromTree({ 'from.txt': sourceString(source, 'path', guest) });
    },
  };
  return { seen, openers };
}

const names = (call: ReturnType<typeof callFilesystem>, at = 0): string[] => {
  const stream = call.preopens[at]![0].readDirectory();
  const out: string[] = [];
  for (let entry = stream.readDirectoryEntry(); entry; entry = stream.readDirectoryEntry()) out.push(entry.name);
  return out.sort();
};

describe('callFilesystem: mount sources by kind', () => {
  it('no source is an empty folder; a memory source is its tree, whatever the host registered', () => {
    const call = callFilesystem(
      [
        { guest: '/empty', access: 'read' },
        { guest: '/tree', access: 'read', source: { kind: 'memory', tree: { 'a.txt': 'a', sub: {} } } },
      ],
      1 << 20,
      // A host cannot replace the built-in kind.
      { memory: () => MemoryBackend.fromTree({ 'replaced.txt': 'x' }) },
    );
    try {
      expect(names(call, 0)).toEqual([]);
      expect(names(call, 1)).toEqual(['a.txt', 'sub']);
      expect(call.preopens.map(([, guest]) => guest)).toEqual(['/empty', '/tree', '/tmp']);
    } finally {
      call.close();
    }
  });

  it("a registered kind goes to its opener with the caller's fields and the guest path", () => {
    const { seen, openers } = recording('elsewhere');
    const call = callFilesystem(bind({ kind: 'elsewhere', path: 'p/q' }), 1 << 20, openers);
    try {
      expect(seen).toEqual([[{ kind: 'elsewhere', path: 'p/q' }, '/w']]);
      expect(names(call)).toEqual(['from.txt']);
    } finally {
      call.close();
    }
  });

  it('an unknown kind is E_INPUT_VALIDATION naming it and the kinds this host opens', () => {
    const { openers } = recording('elsewhere');
    expect(() => callFilesystem(bind({ kind: 'nowhere', path: '/' }), 1 << 20, openers)).toThrow(
      expect.objectContaining({
        code: 'E_INPUT_VALIDATION',
        message: 'Mount /w: this host cannot open a source of kind "nowhere"; it opens "memory", "elsewhere".',
        details: { guest: '/w', kind: 'nowhere', supported_kinds: ['memory', 'elsewhere'] },
      }),
    );
    // With no opener registered, only memory is there; an inherited name is no kind.
    for (const kind of ['elsewhere', 'constructor', '__proto__', 'toString']) {
      expect(() => callFilesystem(bind({ kind, path: '/' }), 1 << 20)).toThrow(/it opens "memory"\.$/);
    }
  });

  it("a source of a bad shape is E_INPUT_VALIDATION: the generic shape before any opener runs, a kind's fields in its opener", () => {
    const { seen, openers } = recording('elsewhere');
    const bad: Array<[unknown, RegExp]> = [
      [null, /its source must be an object with a kind/],
      ['memory', /its source must be an object with a kind/],
      [[], /its source must be an object with a kind/],
      [{}, /its source has no kind \(a string\); this host opens "memory", "elsewhere"/],
      [{ kind: 1 }, /its source has no kind/],
      [{ kind: 'memory' }, /the "memory" source needs tree as an object of files and folders \(got undefined\)/],
      [{ kind: 'memory', tree: 'a' }, /needs tree as an object/],
      [{ kind: 'memory', tree: [] }, /needs tree as an object/],
      [{ kind: 'memory', tree: new Uint8Array(1) }, /needs tree as an object/],
      [{ kind: 'memory', tree: { a: 5 } }, /Mount \/w: the "memory" source has "a" as a number/],
      [{ kind: 'memory', tree: { d: { b: null } } }, /the "memory" source has "b" as null/],
      [{ kind: 'memory', tree: { '..': 'x' } }, /invalid file name/],
      [{ kind: 'elsewhere' }, /the "elsewhere" source needs path as a string \(got undefined\)/],
      [{ kind: 'elsewhere', path: 3 }, /needs path as a string \(got number\)/],
      [{ kind: 'elsewhere', path: 'a\0b' }, /has a NUL character in path/],
    ];
    for (const [source, message] of bad) {
      expect(() => callFilesystem(bind(source), 1 << 20, openers), JSON.stringify(source)).toThrow(
        expect.objectContaining({ code: 'E_INPUT_VALIDATION', message: expect.stringMatching(message) }),
      );
    }
    // Only the sources of its kind reached the opener, which refused their fields itself (sourceString).
    expect(seen.map(([source]) => source)).toEqual([
      { kind: 'elsewhere' },
      { kind: 'elsewhere', path: 3 },
      { kind: 'elsewhere', path: 'a\0b' },
    ]);
  });

  it('closes what it opened when a later mount is refused', () => {
    let closed = 0;
    const openers: MountOpeners = {
      counted: () => Object.assign(new MemoryBackend(), { close: () => void closed++ }),
    };
    const mounts = [
      { guest: '/a', access: 'read', source: { kind: 'counted' } },
      { guest: '/b', access: 'read', source: { kind: 'nowhere' } },
    ] as MountBinding[];
    expect(() => callFilesystem(mounts, 1 << 20, openers)).toThrow(/kind "nowhere"/);
    expect(closed).toBe(1);
  });
});

describe('checkMountSources: the host side, before a call', () => {
  it("runs each kind's check and sends on fresh bindings, kinds read once", async () => {
    const checked: string[] = [];
    let reads = 0;
    const tricky = {
      get kind() {
        return reads++ === 0 ? 'elsewhere' : 'memory';
      },
      path: 'p',
    };
    const mounts = await checkMountSources(
      [
        { guest: '/a', access: 'read' },
        { guest: '/b', access: 'read-write', source: { kind: 'memory', tree: { f: 'x' }, extra: () => {} } },
        { guest: '/c', access: 'read', source: tricky },
      ],
      {
        elsewhere: (source, guest) => {
          checked.push(`${guest}:${source.kind}:${sourceString(source, 'path', guest)}`);
          return { kind: 'elsewhere', path: `/resolved/${String(source.path)}` };
        },
      },
    );
    expect(checked).toEqual(['/c:elsewhere:p']);
    // Plain data only: no functions, nothing that would not cross to a worker.
    expect(mounts).toEqual([
      { guest: '/a', access: 'read' },
      { guest: '/b', access: 'read-write', source: { kind: 'memory', tree: { f: 'x' } } },
      { guest: '/c', access: 'read', source: { kind: 'elsewhere', path: '/resolved/p' } },
    ]);
  });

  it('refuses a kind no check is registered for, naming the kinds there are', async () => {
    await expect(checkMountSources(bind({ kind: 'remote', path: '/' }), { bucket: (s) => s })).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: 'Mount /w: this host cannot open a source of kind "remote"; it opens "memory", "bucket".',
    });
    await expect(checkMountSources(bind({ kind: 'memory', tree: null }), {})).rejects.toMatchObject({
      code: 'E_INPUT_VALIDATION',
      message: expect.stringMatching(/needs tree as an object/),
    });
  });
});
