// Runs the real `corral` CLI for the authoring tests, each in its own
// temporary folder and snapshot store.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CLI = resolve(import.meta.dirname, '../../packages/node/bin/corral.js');

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A fresh folder to create tools in. */
export function workdir(): string {
  return mkdtempSync(join(tmpdir(), 'corral-author-'));
}

export function corral(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Run {
  const started = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, CORRAL_STORE: join(cwd, 'snapshots.db'), ...env },
    timeout: 240_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Math.round(performance.now() - started) };
}
