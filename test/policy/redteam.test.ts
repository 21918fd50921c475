/**
 * Red-team regressions for the policy layer (issue 11): each test is an attack
 * that worked before its fix, named after what it could do.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry, type InvokeOptions, type InvokeResult, type Tool } from '@corral/core';
import { BUNDLED_TOOLS_DIR, SqliteStore, loadToolFolder } from '@corral/node';
import { openPolicyGate } from '@corral/node/policy';

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

async function setup(policy: (dirs: { grant: string }) => string) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-redteam-policy-')));
  const grant = join(dir, 'work');
  mkdirSync(join(grant, 'project'), { recursive: true });
  mkdirSync(join(grant, 'secrets'), { recursive: true });
  mkdirSync(join(dir, 'config'));
  const policyPath = join(dir, 'config/policy.yaml');
  writeFileSync(policyPath, policy({ grant }));
  const store = await SqliteStore.open(join(dir, 'data/snapshots.db'));
  stores.push(store);
  const gate = openPolicyGate({ store, policyPath, env: {} });
  const registry = new Registry();
  await loadToolFolder(registry, BUNDLED_TOOLS_DIR);
  const calls: { tool: string; options: InvokeOptions }[] = [];
  const host = {
    registry,
    async invokeTool(tool: Tool, _input: unknown, options: InvokeOptions = {}): Promise<InvokeResult> {
      calls.push({ tool: tool.spec.name, options });
      return {
        ok: true,
        tool: tool.spec.name,
        version: tool.spec.version,
        output: { ran: true },
        error: null,
        exit_code: 0,
        duration_ms: 1,
        stdout_head: '',
        stderr_tail: '',
        stdout_truncated: false,
        stderr_truncated: false,
        snapshot: { id: crypto.randomUUID() },
      };
    },
  };
  return { dir, grant, policyPath, store, gate, host, calls };
}

describe('approvals are bound to the folders the approver saw', () => {
  it('a folder swapped for a symlink after approval (still inside the grant) does not run on the new target', async () => {
    // Before: the approved call was re-evaluated at claim time on the stored *request* (the path asked for),
    // so whoever could write inside the granted folder (a tool with a read-write grant there, another process)
    // could swap work/project for a link to work/secrets between the approval and the run: the person approved
    // "/workspace → …/work/project" and the tool got …/work/secrets.
    const s = await setup(
      ({ grant }) => `
version: 1
tools:
  file-stats:
    mounts:
      /workspace:
        - { folder: ${grant}, access: read }
    approval: required
`,
    );
    const project = join(s.grant, 'project');
    const ids: string[] = [];
    const running = s.gate.invoke(
      s.host,
      'file-stats',
      {},
      { bindings: { '/workspace': project }, caller: { kind: 'mcp', id: 'editor' }, onApprovalRequired: (a) => void ids.push(a.id) },
    );
    await expect.poll(() => ids.length).toBe(1);
    const approval = await s.store.getApproval(ids[0]!);
    expect(approval?.folders).toEqual([{ guest: '/workspace', folder: project, access: 'read' }]);
    renameSync(project, join(s.grant, 'project.old'));
    symlinkSync('secrets', project);
    await s.gate.decide(ids[0]!, 'approve', { by: 'ada' });
    const result = await running;
    expect(s.calls.map((c) => c.options.mounts)).toEqual([]);
    expect(result).toMatchObject({ ok: false, error: { code: 'E_POLICY_DENIED', details: { reason: 'approval_unavailable' } } });
  });
});

describe('folders holding code Corral runs, or tools it loads, are never mountable', () => {
  const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

  it('refuses Corral’s own packages, their node_modules and the bundled tools, whatever the policy grants', async () => {
    // Before: only the policy, the store and the cache were protected. A read-write grant on a project that
    // holds a clone of Corral (the README's MCP set-up runs the CLI of a clone) let a tool rewrite
    // packages/node/dist/*.js or node_modules — code the next `corral mcp` runs outside any sandbox — or
    // replace a bundled tool's wasm, which then runs with that tool's grants.
    const s = await setup(
      () => `
version: 1
tools:
  file-stats:
    mounts:
      /workspace:
        - { folder: /, access: read }
`,
    );
    for (const folder of [ROOT, join(ROOT, 'packages/node/dist'), join(ROOT, 'node_modules/yaml'), join(BUNDLED_TOOLS_DIR, 'file-stats')]) {
      const tool = s.host.registry.resolve('file-stats');
      const d = await s.gate.check({ tool, input: {}, bindings: { '/workspace': folder } });
      expect(d.decision === 'deny' && d.error.details.reason, folder).toBe('protected_folder');
    }
  });
});

describe('a --tools folder is not mountable by the tools it serves', () => {
  it('corral serve --tools DIR refuses a read-write grant on DIR (a tool could plant a tool with another tool’s grants)', async () => {
    // Before: the watched --tools folder was mountable. With `lint` granted GITHUB_TOKEN and fs-writer granted
    // read-write on a folder holding the tools, fs-writer could drop a tool-spec.json named `lint` (a higher
    // version) beside its own wasm: the watcher loads it and every later call of `lint` runs that code with
    // lint's env and folders.
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { cpSync } = await import('node:fs');
    const { serve, execute, FIXTURES, CLI } = await import('../http/helpers.js');
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-redteam-tools-')));
    const tools = join(dir, 'tools');
    cpSync(join(FIXTURES, 'fs-writer'), join(tools, 'fs-writer'), { recursive: true });
    const policyPath = join(dir, 'config/policy.yaml');
    mkdirSync(join(dir, 'config'));
    writeFileSync(
      policyPath,
      `version: 1\ntools:\n  fs-writer:\n    mounts:\n      /workspace:\n        - { folder: ${dir}, access: read-write }\n`,
    );
    const env = { CORRAL_POLICY: policyPath, CORRAL_STORE: join(dir, 'data/snapshots.db') };
    // `corral policy grant` refuses it too.
    const granted = await promisify(execFile)(
      process.execPath,
      [CLI, 'policy', 'grant', 'fs-writer', '--tools', tools, '--mount', `${tools}:/workspace:rw`],
      {
        env: { ...process.env, ...env },
      },
    ).then(
      () => 0,
      (err: { code: number; stderr: string }) => (expect(err.stderr).toMatch(/--tools folder/), err.code),
    );
    expect(granted).not.toBe(0);
    const served = await serve(['--tools', tools, '--no-bundled', '--quiet'], env);
    try {
      for (const folder of [dir, tools, join(tools, 'fs-writer')]) {
        const r = await execute(served.url, { tool: 'fs-writer', input: {}, mounts: { '/workspace': folder } });
        expect(r.status, `${folder}: ${r.text}`).toBe(403);
        expect(r.json.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'protected_folder' } });
      }
    } finally {
      served.child.kill('SIGTERM');
      await served.exited;
    }
  }, 30_000);
});

describe('a relative cache folder is protected where it is', () => {
  it('CORRAL_CACHE_DIR=.cache protects ./.cache under the working folder, not /.cache', async () => {
    // Before: the gate compared the relative path as if it were absolute ('/.cache'), so a server started in a
    // project folder (MCP clients start servers there) with a relative cache let a tool with a read-write grant
    // on the project write into the transpile cache — JavaScript Corral runs outside the sandbox.
    const s = await setup(
      ({ grant }) => `
version: 1
tools:
  file-stats:
    mounts:
      /workspace:
        - { folder: ${grant}, access: read }
`,
    );
    const cwd = process.cwd();
    process.chdir(s.grant);
    try {
      mkdirSync(join(s.grant, '.cache'));
      const gate = openPolicyGate({ store: s.store, policyPath: s.policyPath, env: {}, cacheDir: '.cache' });
      const tool = s.host.registry.resolve('file-stats');
      for (const folder of [s.grant, join(s.grant, '.cache')]) {
        const d = await gate.check({ tool, input: {}, bindings: { '/workspace': folder } });
        expect(d.decision === 'deny' && d.error.details.reason, folder).toBe('protected_folder');
      }
    } finally {
      process.chdir(cwd);
    }
  });
});
