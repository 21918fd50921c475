/**
 * Both ways a host folder can be held (@corral/node's host-fs.ts): 'fd'
 * (Linux: O_PATH descriptors, race-free) and 'path' (the fallback on systems
 * without /proc: checked real paths). Without a racing host, both must
 * refuse every escape a tool can attempt; only 'fd' also holds against a
 * host swapping folders meanwhile (the fuzz checks that).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi';
import { hostConfinement, openHostDirectory, type Confinement } from '@corral/node';
import { thrown } from '../helpers/thrown.js';

const SECRET = 'SECRET-CONFINEMENT-77';
let base: string;
let mount: string;
let outside: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-confinement-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(mount, 'dir', 'inside.txt'), 'inside');
  symlinkSync(outside, join(mount, 'abs-out'));
  symlinkSync('../outside', join(mount, 'rel-out'));
  symlinkSync('dir', join(mount, 'in'));
  execFileSync('mkfifo', [join(mount, 'fifo')]);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

it('this Linux machine holds host folders by fd', () => {
  expect(process.platform === 'linux' ? hostConfinement() : 'fd').toBe('fd');
});

describe.each(['fd', 'path'] as Confinement[])('held by %s', (confinement) => {
  let call: CallFilesystem;
  let root: Descriptor;
  beforeEach(() => {
    call = callFilesystem([{ guest: '/data', access: 'read-write', hostPath: mount }], 1 << 20, (p) => openHostDirectory(p, confinement));
    root = call.preopens[0]![0];
  });
  afterEach(() => call.close());

  const read = (d: Descriptor, path: string) => {
    const f = d.openAt({ symlinkFollow: true }, path, {}, { read: true });
    return new TextDecoder().decode(f.read(1024n, 0n)[0]);
  };

  it('follows links inside, refuses every way out, never blocks on a FIFO', () => {
    expect(read(root, 'in/inside.txt')).toBe('inside');
    for (const path of ['../outside/secret.txt', 'abs-out/secret.txt', 'rel-out/secret.txt', 'dir/../../outside/secret.txt']) {
      expect(thrown(() => read(root, path)), path).toBe('not-permitted');
    }
    expect(thrown(() => read(root, 'fifo'))).toBe('not-permitted');
    expect(thrown(() => root.readlinkAt('abs-out'))).toBe('not-permitted');
    expect(root.readlinkAt('in')).toBe('dir');
  });

  it('a held directory swapped (by the tool) for an outward link leads nowhere', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true, mutateDirectory: true });
    root.renameAt('dir', root, 'dir-old');
    root.renameAt('abs-out', root, 'dir');
    expect(thrown(() => read(dir, 'secret.txt'))).toBe('not-permitted');
    expect(thrown(() => dir.openAt({}, 'new.txt', { create: true }, { write: true }))).toBe('not-permitted');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  });

  it('a held directory renamed by the host is looked up by its path again', () => {
    const dir = root.openAt({}, 'dir', { directory: true }, { read: true });
    renameSync(join(mount, 'dir'), join(mount, 'moved'));
    expect(thrown(() => read(dir, 'inside.txt'))).toBe('no-entry');
  });
});
