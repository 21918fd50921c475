// deploy/fleet cannot be run here (no Docker engine, no systemd): what can be
// checked is. The compose file is YAML compose would read, every flag it and
// the systemd unit pass to `corral worker` is one the worker has, the image
// installs every @corral package @corral/node needs, and its entry point is
// the CLI's real path.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { runCli } from '../helpers/worker-cli.js';

const dir = new URL('../../deploy/fleet/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, dir), 'utf8');

interface Compose {
  services: Record<
    string,
    {
      image?: string;
      command?: string[];
      stop_signal?: string;
      stop_grace_period?: string;
      expose?: string[];
      init?: boolean;
      deploy?: { replicas?: number };
      depends_on?: Record<string, { condition: string }>;
    }
  >;
}

function compose(): Compose {
  const doc = parseDocument(read('docker-compose.yml'), { uniqueKeys: true, prettyErrors: true });
  expect(doc.errors.map(String)).toEqual([]);
  expect(doc.warnings.map(String)).toEqual([]);
  return doc.toJS() as Compose;
}

/** The --flags of `corral worker --help`. */
async function workerFlags(): Promise<Set<string>> {
  const help = await runCli('worker', '--help');
  expect(help.status).toBe(0);
  return new Set([...help.stdout.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]!));
}

describe('deploy/fleet', () => {
  it('docker-compose.yml: NATS with JetStream, PostgreSQL, and workers told flags the worker has, stopped by SIGTERM with a grace period', async () => {
    const { services } = compose();
    expect(Object.keys(services).sort()).toEqual(['nats', 'postgres', 'worker']);
    expect(services.nats!.command).toContain('-js');
    const worker = services.worker!;
    expect(worker.command![0]).toBe('worker');
    const flags = await workerFlags();
    const passed = worker.command!.filter((a) => a.startsWith('--'));
    expect(passed).toEqual(expect.arrayContaining(['--nats', '--postgres', '--metrics']));
    for (const flag of passed) expect(flags, `corral worker ${flag}`).toContain(flag);
    expect(worker.stop_signal).toBe('SIGTERM');
    expect(worker.stop_grace_period).toMatch(/^\d+s$/);
    expect(worker.init).toBe(true);
    expect(worker.deploy?.replicas).toBeGreaterThan(1);
    // The metrics address binds the port it exposes.
    const metrics = worker.command![worker.command!.indexOf('--metrics') + 1]!;
    expect(worker.expose).toContain(metrics.split(':').at(-1));
    expect(worker.depends_on).toEqual({ nats: { condition: 'service_healthy' }, postgres: { condition: 'service_healthy' } });
  });

  it('corral-worker@.service passes flags the worker has and stops it with SIGTERM', async () => {
    const unit = read('corral-worker@.service');
    const exec = /^ExecStart=((?:.*\\\n)*.*)$/m.exec(unit)![1]!.replace(/\\\n/g, ' ');
    expect(exec).toMatch(/^\/opt\/corral\/node_modules\/\.bin\/corral worker\s/);
    const flags = await workerFlags();
    const passed = [...exec.matchAll(/ (--[a-z-]+)/g)].map((m) => m[1]!);
    expect(passed).toEqual(expect.arrayContaining(['--nats', '--postgres', '--metrics', '--name']));
    for (const flag of passed) expect(flags, `corral worker ${flag}`).toContain(flag);
    expect(unit).toMatch(/^KillSignal=SIGTERM$/m);
    expect(unit).toMatch(/^TimeoutStopSec=\d+$/m);
  });

  it('the image installs every @corral package @corral/node depends on, and runs the CLI at its real path', () => {
    const compose = read('docker-compose.yml');
    const packed = [...compose.matchAll(/-w (\S+)/g)].map((m) => m[1]!);
    const names = new Set(
      packed.map((p) => (JSON.parse(readFileSync(new URL(`../../${p}/package.json`, import.meta.url), 'utf8')) as { name: string }).name),
    );
    // @corral/node and everything @corral it needs, transitively.
    const need = new Set<string>();
    const visit = (name: string) => {
      if (need.has(name)) return;
      need.add(name);
      const folder = name === '@corral/tools' ? 'wasm-tools' : `packages/${name.slice('@corral/'.length)}`;
      const pkg = JSON.parse(readFileSync(new URL(`../../${folder}/package.json`, import.meta.url), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      for (const dep of Object.keys(pkg.dependencies ?? {})) if (dep.startsWith('@corral/')) visit(dep);
    };
    visit('@corral/node');
    visit('@corral/tools');
    expect([...names].sort()).toEqual([...need].sort());
    const nodePkg = JSON.parse(readFileSync(new URL('../../packages/node/package.json', import.meta.url), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(read('Dockerfile')).toContain(`"/opt/corral/node_modules/@corral/node/${nodePkg.bin.corral}"`);
  });
});
