/**
 * Red team, second round: the newest rules (links a tool makes only
 * descend; moves may not change whether a link leads inside; kernel
 * filesystems are never opened), pinned on the descriptors a component's
 * glue calls, over real host folders. Tests marked `it.fails` are open holes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callFilesystem, type CallFilesystem, type Descriptor } from '@corral/wasi';
import { openHostDirectory } from '@corral/node';

const SECRET = 'SECRET-OUTSIDE-5e3a';

let base: string;
let mount: string;
let outside: string;
let call: CallFilesystem | undefined;

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** What the host reads when it follows `path` (an agent's `cat`), or undefined. */
function hostReads(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-redteam2-')));
  mount = join(base, 'mount');
  outside = join(base, 'outside');
  mkdirSync(join(mount, 'dir', 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
});

afterEach(() => {
  call?.close();
  call = undefined;
  execFileSync('rm', ['-rf', base]);
});

function mountRw(...hostPaths: string[]): Descriptor[] {
  call = callFilesystem(
    hostPaths.map((hostPath, i) => ({ guest: `/m${i}`, access: 'read-write' as const, hostPath })),
    1 << 20,
    openHostDirectory,
  );
  return call.preopens.slice(0, hostPaths.length).map(([d]) => d);
}

describe('a host link that leads out is not re-aimed by moving it down', () => {
  // `l -> ../../outside/secret.txt` at the mount root leads to base/../outside:
  // nowhere (dangling). One folder down it is base/outside/secret.txt. Moving a
  // link down was refused only when it would then read as inside; one that
  // still leads out, elsewhere, moved, and the host following it read the secret.
  it('renaming it one folder down is refused', () => {
    symlinkSync('../../outside/secret.txt', join(mount, 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.renameAt('l', root!, 'dir/l'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'l'))).toBeUndefined();
  });

  it('hard-linking it one folder down is refused', () => {
    symlinkSync('../../outside/secret.txt', join(mount, 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.linkAt({}, 'l', root!, 'dir/l'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'l'))).toBeUndefined();
  });

  it('moving the folder holding it down is refused', () => {
    mkdirSync(join(mount, 'pkgs'));
    symlinkSync('../../../outside/secret.txt', join(mount, 'pkgs', 'l'));
    const [root] = mountRw(mount);
    expect(thrown(() => root!.renameAt('pkgs', root!, 'dir/pkgs'))).toBe('not-permitted');
    expect(hostReads(join(mount, 'dir', 'pkgs', 'l'))).toBeUndefined();
    // Sideways (same depth) it means the same: it moves.
    expect(thrown(() => root!.renameAt('pkgs', root!, 'pkgs2'))).toBeUndefined();
  });
});
