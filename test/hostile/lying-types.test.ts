/**
 * Components that lie about WASI's types, or ask the host for absurd
 * amounts with honest ones. jco's glue trusts a component's own WIT, so a
 * component that declares `descriptor.write(buffer: string, offset: string)`
 * hands the host two strings; only the host can refuse them. These tests
 * say what the host must do. They failed on the host that trusted the types
 * (preview2-shim's, before Corral's own: the quota was poisoned and 16 MiB
 * written under disk_mb 1; `read(2^64 - 1)` trapped allocating the length
 * it was asked for) and pass on Corral's validating host. Each runs in a
 * child process (child.ts), with small sizes so a failing run cannot
 * exhaust the machine.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runInChild, treeHash } from './child.js';

let base: string;
let workspace: string;
let outsideBefore: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'corral-lying-'));
  workspace = join(base, 'workspace');
  mkdirSync(workspace);
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(base, 'outside', 'keep.txt'), 'a sibling of the mount\n');
  outsideBefore = treeHash(join(base, 'outside'));
});
afterEach(() => {
  expect(treeHash(join(base, 'outside')), 'a folder beside the mount changed').toBe(outsideBefore);
  rmSync(base, { recursive: true, force: true });
});

const bytesIn = (dir: string) => readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);

describe('WIT that lies, and absurd lengths', () => {
  // lying-write calls the lie, then (if it was accepted) writes 16 MiB
  // through an honest stream. A wrong-typed argument is the guest breaking
  // the ABI, not a filesystem error, so the call must fail as the guest's
  // fault (a trap, or an error the tool answers by failing): E_UNEXPECTED_EXIT.
  // A host that coerced the strings instead would get E_RESOURCE_EXHAUSTED
  // (disk) from the stream writes: this test pins refusal.
  it('descriptor.write(buffer: string, offset: string) is refused, and nothing is written beyond disk_mb (1 MB)', async () => {
    const run = await runInChild([
      {
        tool: 'lying-write',
        options: { mounts: [{ guest: '/workspace', access: 'read-write', source: { kind: 'host', path: workspace } }] },
      },
    ]);
    expect(run.status).toBe(0);
    const [result] = run.results;
    expect(result?.error?.code).toBe('E_UNEXPECTED_EXIT');
    expect(result?.output).toBeNull();
    expect(bytesIn(workspace)).toBeLessThanOrEqual(2 ** 20);
  }, 60_000);

  // WASI's read returns *up to* length bytes: each read of the 16 MiB file
  // must return it, whatever length was asked, without the host allocating
  // the length first (2 GiB per call; 2^64 - 1 cannot be allocated at all).
  it('descriptor.read(2^31 - 1) ×32 and read(2^64 - 1) on a 16 MiB file each return the file; host memory stays bounded', async () => {
    writeFileSync(join(workspace, 'big.bin'), randomBytes(16 * 2 ** 20));
    const run = await runInChild([
      { tool: 'huge-read', options: { mounts: [{ guest: '/workspace', access: 'read', source: { kind: 'host', path: workspace } }] } },
    ]);
    expect(run.status).toBe(0);
    const [result] = run.results;
    expect(result?.error).toBeNull();
    expect(result?.output).toEqual({ ran: true });
    // A child with a worker and a 16 MiB read peaks near 300 MB.
    expect(run.maxRssMb).toBeLessThan(768);
  }, 60_000);
});
