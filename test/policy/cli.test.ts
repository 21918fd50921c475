/**
 * Policies and approvals as a user meets them: `corral policy`, `corral
 * approve`, `corral approvals` and `corral audit` as real subprocesses,
 * against a long-lived gate in this process and servers in child
 * processes that are killed and restarted, running the real file-stats tool.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { nowNs, workflowApproval, type ApprovalRecord, type AuditEvent } from '@corral/core';
import { Corral, SqliteStore } from '@corral/node';
import { openPolicyGate } from '@corral/node/policy';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');

interface Env {
  dir: string;
  src: string;
  policyPath: string;
  storePath: string;
  env: NodeJS.ProcessEnv;
}

/** A temp folder with a project to grant, and the policy and the store kept apart from it. */
function sandbox(): Env {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'corral-policy-cli-')));
  const src = join(dir, 'project');
  mkdirSync(join(src, 'docs'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'one two\nthree\n');
  writeFileSync(join(src, 'docs/b.md'), '# title\n');
  const policyPath = join(dir, 'config/corral/policy.yaml');
  const storePath = join(dir, 'data/corral/snapshots.db');
  // The transpile cache stays the test run's own (vite.config.ts), shared by every process here.
  return { dir, src, policyPath, storePath, env: { ...process.env, CORRAL_POLICY: policyPath, CORRAL_STORE: storePath } };
}

async function corral(e: Env, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: e.env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

async function audit(e: Env): Promise<AuditEvent[]> {
  const r = await corral(e, ['audit', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as AuditEvent[]).reverse(); // oldest first
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

/** A server in a child process: a Corral, a gate over the policy file, and `body` run with both. */
function server(
  e: Env,
  body: string,
): { child: ChildProcess; lines: string[]; line: (re: RegExp) => Promise<string>; exit: Promise<number | null> } {
  const script = `
    import { Corral } from '@corral/node';
import { openPolicyGate } from '@corral/node/policy';
    const corral = await Corral.create({ size: 1 });
    const gate = openPolicyGate({ store: corral.store });
    const say = (...parts) => process.stdout.write(parts.join(' ') + '\\n');
    try { ${body} } finally { await corral.close(); }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: e.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: string[] = [];
  let buffered = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const line = async (re: RegExp): Promise<string> => {
    for (;;) {
      const found = lines.find((l) => re.test(l));
      if (found) return found;
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before printing ${re}: ${stderr}`);
      await Promise.race([new Promise<void>((r) => waiters.push(r)), exit]);
    }
  };
  return { child, lines, line, exit };
}

describe('corral policy, against a running gate', () => {
  it('deny by default, grant, revoke mid-session: a long-lived gate sees each change, and the audit trail has each step', async () => {
    const e = sandbox();
    const host = await Corral.create({ size: 1, store: e.storePath });
    try {
      const gate = openPolicyGate({ store: host.store!, policyPath: e.policyPath });
      const call = () =>
        gate.invoke(
          host,
          'file-stats',
          { path: '/workspace' },
          { bindings: { '/workspace': e.src }, caller: { kind: 'mcp', id: 'test-client' } },
        );

      const before = await call();
      expect(before.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'not_granted', folder: e.src } });
      expect((await audit(e)).map((a) => [a.action, a.actor, a.detail.reason])).toEqual([['deny', 'mcp:test-client', 'not_granted']]);

      const granted = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace:ro`, '--by', 'ada']);
      expect(granted.code, granted.stderr).toBe(0);
      expect(granted.stdout).toContain(`mount /workspace → ${e.src} (read)`);
      const during = await call();
      expect(during).toMatchObject({ ok: true, output: { totals: { files: 2, lines: 3 } } });
      expect((await host.store!.getExecution(during.snapshot!.id))?.status).toBe('ok');

      const revoked = await corral(e, ['policy', 'revoke', 'file-stats', '--mount', e.src, '--by', 'ada']);
      expect(revoked.code, revoked.stderr).toBe(0);
      const after = await call();
      expect(after.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'not_granted' } });

      expect((await audit(e)).map((a) => [a.action, a.actor, a.tool])).toEqual([
        ['deny', 'mcp:test-client', 'file-stats'],
        ['grant', 'ada', 'file-stats'],
        ['revoke', 'ada', 'file-stats'],
        ['deny', 'mcp:test-client', 'file-stats'],
      ]);
      const [grant] = (await audit(e)).filter((a) => a.action === 'grant');
      expect(grant!.detail).toMatchObject({ policy: e.policyPath, folders: [{ guest: '/workspace', folder: e.src, access: 'read' }] });
    } finally {
      await host.close();
    }
  });

  it('refuses a tool name it cannot see as a likely typo (exit 2, with a guess) unless told --unknown-tool', async () => {
    const e = sandbox();
    const typo = await corral(e, ['policy', 'grant', 'file-stat', '--mount', `${e.src}:/workspace:ro`]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/no tool "file-stat" among the bundled tools \(did you mean file-stats\?\).*--unknown-tool/);
    expect(() => readFileSync(e.policyPath)).toThrow(/ENOENT/);
    const meant = await corral(e, ['policy', 'grant', 'file-stat', '--unknown-tool', '--mount', `${e.src}:/workspace:ro`]);
    expect(meant.code, meant.stderr).toBe(0);
    expect(meant.stdout).toMatch(/Granted file-stat \(a tool Corral cannot see now/);
  });

  it('refuses a grant covering the policy file’s or the store’s folder, leaving the file as it was', async () => {
    const e = sandbox();
    expect((await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`])).code).toBe(0);
    const before = readFileSync(e.policyPath);
    for (const folder of [e.dir, join(e.dir, 'config'), join(e.dir, 'data/corral')]) {
      const r = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${folder}:/workspace`]);
      expect(r.code, folder).toBe(1);
      expect(r.stderr).toMatch(/Refusing to grant .*: it holds the (policy file|snapshot store)/);
    }
    expect(readFileSync(e.policyPath)).toEqual(before);
    // Written by hand instead, such a grant still never binds.
    writeFileSync(e.policyPath, `version: 1\ntools:\n  file-stats:\n    mounts:\n      /workspace: [{ folder: ${e.dir}, access: read }]\n`);
    const host = await Corral.create({ size: 1, store: e.storePath });
    try {
      const gate = openPolicyGate({ store: host.store!, policyPath: e.policyPath });
      const r = await gate.invoke(host, 'file-stats', {}, { bindings: { '/workspace': join(e.dir, 'data') } });
      expect(r.error).toMatchObject({ code: 'E_POLICY_DENIED', details: { reason: 'protected_folder' } });
      expect((await gate.invoke(host, 'file-stats', {}, { bindings: { '/workspace': e.src } })).ok).toBe(true);
    } finally {
      await host.close();
    }
  });

  it('keeps the user’s comments, refuses to rewrite a broken file, and a broken file fails closed', async () => {
    const e = sandbox();
    mkdirSync(join(e.dir, 'config/corral'), { recursive: true });
    writeFileSync(e.policyPath, '# my policy, hands off\nversion: 1\ntools:\n  # the one I trust\n  diff-summary:\n    approval: never\n');
    expect((await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`, '--timeout', '5000'])).code).toBe(0);
    const text = readFileSync(e.policyPath, 'utf8');
    expect(text).toMatch(/^# my policy, hands off\n/);
    expect(text).toContain('# the one I trust\n  diff-summary:');
    expect(text).toContain(`{ folder: ${e.src}, access: read }`);
    expect((await corral(e, ['policy', 'revoke', 'file-stats'])).code).toBe(0);
    expect(readFileSync(e.policyPath, 'utf8')).toBe(
      '# my policy, hands off\nversion: 1\ntools:\n  # the one I trust\n  diff-summary:\n    approval: never\n',
    );

    writeFileSync(e.policyPath, 'version: 1\ntools:\n  file-stats:\n    mounts: oops\n');
    const show = await corral(e, ['policy', 'show']);
    expect(show.code).toBe(1);
    expect(show.stdout).toMatch(/INVALID, so every call .* is refused[\s\S]*\/tools\/file-stats\/mounts: must be object/);
    const grant = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`]);
    expect(grant.code).toBe(1);
    expect(readFileSync(e.policyPath, 'utf8')).toBe('version: 1\ntools:\n  file-stats:\n    mounts: oops\n');
    const json = JSON.parse((await corral(e, ['policy', 'show', '--json'])).stdout);
    expect(json).toMatchObject({ ok: false, policy: e.policyPath, status: 'invalid', error: { code: 'E_INPUT_VALIDATION' } });
  });
});

describe('corral policy on a policy file that is a symlink', () => {
  it('edits the file the link points to and keeps the link; a grant of the link’s target folder is refused', async () => {
    const e = sandbox();
    const real = join(e.dir, 'dotfiles/corral-policy.yaml');
    mkdirSync(join(e.dir, 'dotfiles'));
    mkdirSync(join(e.dir, 'config/corral'), { recursive: true });
    writeFileSync(real, '# from my dotfiles\nversion: 1\n');
    symlinkSync(real, e.policyPath);
    const r = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace:ro`]);
    expect(r.code, r.stderr).toBe(0);
    expect(lstatSync(e.policyPath).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toMatch(/^# from my dotfiles\nversion: 1\ntools:\n {2}file-stats:/);
    const refused = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${join(e.dir, 'dotfiles')}:/workspace`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds the policy file/);
    // The folder holding the link too: a tool that may write there could point the link at its own policy.
    const holding = await corral(e, ['policy', 'grant', 'edit', '--mount', `${join(e.dir, 'config')}:/workspace:rw`]);
    expect(holding.code).toBe(1);
    expect(holding.stderr).toMatch(/holds a link on the way to the policy file/);
    expect((await corral(e, ['policy', 'revoke', 'file-stats', '--mount', `${e.src}:/workspace:ro`])).code).toBe(0);
    expect(readFileSync(real, 'utf8')).not.toContain(e.src);
  });
});

describe('approvals across processes', () => {
  it('a call waits in one server, survives its death, is approved with the CLI and runs in a new server', async () => {
    const e = sandbox();
    const g = await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`, '--approval', 'required', '--by', 'ada']);
    expect(g.code, g.stderr).toBe(0);

    const first = server(
      e,
      `const r = await gate.invoke(corral, 'file-stats', { path: '/workspace/docs' }, {
         bindings: { '/workspace': ${JSON.stringify(e.src)} }, caller: { kind: 'mcp', id: 'editor' },
         onApprovalRequired: (a) => say('PENDING', a.id), approvalTimeoutMs: 60000 });
       say('RESULT', JSON.stringify(r));`,
    );
    const id = (await first.line(/^PENDING /)).split(' ')[1]!;
    first.child.kill('SIGKILL');
    await first.exit;

    const listed = await corral(e, ['approvals', '--json']);
    const pending = JSON.parse(listed.stdout) as ApprovalRecord[];
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({
      id,
      tool: 'file-stats',
      status: 'pending',
      requested_by: 'mcp:editor',
      input_json: '{"path":"/workspace/docs"}',
      folders: [{ guest: '/workspace', folder: e.src, access: 'read' }],
    });
    expect((await corral(e, ['approvals'])).stdout).toContain(id);

    const approved = await corral(e, ['approve', id, '--by', 'ada', '--comment', 'go ahead']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`Approved ${id} (scope once)`);
    expect(JSON.parse((await corral(e, ['approvals', '--json'])).stdout)).toEqual([]);

    const second = server(
      e,
      `for (const a of await gate.resume()) say('RAN', a.id, JSON.stringify(await gate.invokeApproved(corral, a.id)));
       say('AGAIN', (await gate.resume()).length);`,
    );
    const ran = await second.line(/^RAN /);
    expect(ran.split(' ')[1]).toBe(id);
    const result = JSON.parse(ran.split(' ').slice(2).join(' '));
    expect(result).toMatchObject({ ok: true, output: { root: '/workspace/docs', totals: { files: 1, lines: 1 } } });
    expect(await second.line(/^AGAIN /)).toBe('AGAIN 0');
    expect(await second.exit).toBe(0);

    const all = JSON.parse((await corral(e, ['approvals', '--all', '--json'])).stdout) as ApprovalRecord[];
    expect(all[0]).toMatchObject({ id, status: 'done', decided_by: 'ada', comment: 'go ahead', execution_id: result.snapshot.id });
    const shown = await corral(e, ['snapshots', 'show', result.snapshot.id, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ tool: 'file-stats', status: 'ok', input_json: '{"path":"/workspace/docs"}' });
    expect((await audit(e)).map((a) => [a.action, a.actor, a.approval_id])).toEqual([
      ['grant', 'ada', null],
      ['approval_requested', 'mcp:editor', id],
      ['approve', 'ada', id],
    ]);
  });

  it('a rejection from the CLI reaches the waiting server, which refuses the call', async () => {
    const e = sandbox();
    expect((await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`, '--approval', 'required'])).code).toBe(0);
    const s = server(
      e,
      `const r = await gate.invoke(corral, 'file-stats', {}, { bindings: { '/workspace': ${JSON.stringify(e.src)} },
         onApprovalRequired: (a) => say('PENDING', a.id), approvalTimeoutMs: 60000 });
       say('RESULT', JSON.stringify(r));`,
    );
    const id = (await s.line(/^PENDING /)).split(' ')[1]!;
    const rejected = await corral(e, ['approve', id, '--reject', '--comment', 'not this folder', '--by', 'bob']);
    expect(rejected.code, rejected.stderr).toBe(0);
    const result = JSON.parse((await s.line(/^RESULT /)).slice('RESULT '.length));
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'E_POLICY_DENIED',
        message: /rejected by bob: not this folder/,
        details: { reason: 'approval_rejected', approval_id: id },
      },
    });
    expect(await s.exit).toBe(0);
    expect((await audit(e)).map((a) => a.action)).toEqual(['grant', 'approval_requested', 'reject']);
    const again = await corral(e, ['approve', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is rejected, not pending/);
  });

  it('a remembered approval shows in policy show and is revoked with the CLI', async () => {
    const e = sandbox();
    expect((await corral(e, ['policy', 'grant', 'file-stats', '--mount', `${e.src}:/workspace`, '--approval', 'required'])).code).toBe(0);
    const host = await Corral.create({ size: 1, store: e.storePath });
    try {
      const gate = openPolicyGate({ store: host.store!, policyPath: e.policyPath });
      const ids: string[] = [];
      const first = gate.invoke(
        host,
        'file-stats',
        {},
        { bindings: { '/workspace': e.src }, onApprovalRequired: (a) => void ids.push(a.id) },
      );
      await expect.poll(() => ids.length).toBe(1);
      const tooWide = await corral(e, ['approve', ids[0]!, '--scope', 'everything']);
      expect(tooWide.code).toBe(2);
      expect((await corral(e, ['approve', ids[0]!, '--scope', 'tool', '--by', 'ada'])).code).toBe(0);
      expect((await first).ok).toBe(true);
      const covered = await gate.invoke(
        host,
        'file-stats',
        { path: '/workspace/docs' },
        { bindings: { '/workspace': e.src }, approvalTimeoutMs: 0 },
      );
      expect(covered.ok).toBe(true);
      const show = await corral(e, ['policy', 'show']);
      expect(show.stdout).toMatch(new RegExp(`Remembered approvals[\\s\\S]*${ids[0]}  file-stats@1.0.0  scope tool  by ada`));
      const revoked = await corral(e, ['policy', 'revoke', '--approval-id', ids[0]!, '--by', 'ada']);
      expect(revoked.code, revoked.stderr).toBe(0);
      const waits = await gate.invoke(host, 'file-stats', {}, { bindings: { '/workspace': e.src }, approvalTimeoutMs: 0 });
      expect(waits.error).toMatchObject({ details: { reason: 'approval_timeout' } });
      expect((await audit(e)).map((a) => a.action)).toEqual([
        'grant',
        'approval_requested',
        'approve',
        'approval_revoked',
        'approval_requested',
      ]);
      const filtered = JSON.parse(
        (await corral(e, ['audit', '--json', '--action', 'approve', '--tool', 'file-stats', '--since', '1h'])).stdout,
      );
      expect(filtered).toHaveLength(1);
    } finally {
      await host.close();
    }
  });

  it('corral approvals shows a workflow step with its run, step and prompt; corral approve decides it and nothing runs', async () => {
    const e = sandbox();
    mkdirSync(join(e.dir, 'data/corral'), { recursive: true });
    const store = await SqliteStore.open(e.storePath);
    const step = await workflowApproval({
      id: 'appr-step-1',
      workflow: 'review-patch',
      run_id: 'run-7',
      step: 'sign-off',
      prompt: 'Merge this patch?\nIt adds 81 lines.',
      requested_by: 'workflow:review-patch',
      requested_ns: nowNs(),
      expires_ns: (BigInt(nowNs()) + 3_600_000_000_000n).toString(),
    });
    await store.createApproval(step);
    await store.close();

    const table = await corral(e, ['approvals']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/TOOL OR WORKFLOW STEP/);
    expect(table.stdout).toMatch(
      /appr-step-1 .* step sign-off of review-patch \(run run-7\) +workflow:review-patch .* Merge this patch\? It adds 81 lines\./,
    );
    const listed = JSON.parse((await corral(e, ['approvals', '--json'])).stdout) as ApprovalRecord[];
    expect(listed).toEqual([step]);
    expect((await corral(e, ['approvals', '--tool', 'review-patch'])).stdout).toContain('appr-step-1');

    const tooWide = await corral(e, ['approve', 'appr-step-1', '--scope', 'tool']);
    expect(tooWide.code).toBe(1);
    expect(tooWide.stderr).toMatch(/covers that step only/);
    const approved = await corral(e, ['approve', 'appr-step-1', '--by', 'ada']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toBe(
      'Approved appr-step-1: step sign-off of review-patch (run run-7), asked by workflow:review-patch. ' +
        'The run goes on when its workflow resumes it (corral workflow resume run-7).\n',
    );
    const all = JSON.parse((await corral(e, ['approvals', '--all', '--json'])).stdout) as ApprovalRecord[];
    expect(all).toEqual([{ ...step, status: 'approved', scope: 'once', decided_by: 'ada', decided_ns: all[0]!.decided_ns }]);
    // A server that resumes approved calls does not take it for one.
    const s = server(e, `say('RESUME', JSON.stringify((await gate.resume()).map((a) => a.id)));`);
    expect(await s.line(/^RESUME /)).toBe('RESUME []');
    expect(await s.exit).toBe(0);
    expect((await audit(e)).map((a) => [a.action, a.actor, a.approval_id, a.detail.workflow_run_id])).toEqual([
      ['approve', 'ada', 'appr-step-1', 'run-7'],
    ]);
  });
});
