/**
 * `corral workflow` through the real binary, as a user runs it: the
 * patch-review example on a real git checkout pauses for a person, is listed
 * and approved from another process (through the same approval records as
 * tool calls), goes on, and applies the patch; a rejection fails the run;
 * bad files and flags are refused with the exit status and message a script
 * can act on.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const EXAMPLE = join(ROOT, 'examples/workflows/patch-review.yaml');

let dir: string;
let env: NodeJS.ProcessEnv;

function corral(args: string[], cwd = dir) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A checkout with one file and a diff that changes it, as `git diff` writes it. */
function checkout(name: string): { repo: string; diff: string } {
  const repo = mkdtempSync(join(tmpdir(), `corral-wf-${name}-`));
  const git = (...a: string[]) => execFileSync('git', a, { cwd: repo, encoding: 'utf8' });
  git('init', '-q');
  writeFileSync(join(repo, 'greet.js'), 'function greet() {\n  return "hello";\n}\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'one');
  writeFileSync(join(repo, 'greet.js'), 'function greet() {\n  // TODO: localize\n  return "hello, world";\n}\n');
  const diff = git('diff');
  git('checkout', '-q', '--', '.');
  const file = join(repo, '..', `${name}.diff`);
  writeFileSync(file, diff);
  return { repo, diff: file };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'corral-wf-cli-'));
  env = { ...process.env, CORRAL_STORE: join(dir, 'store.db'), CORRAL_POLICY: join(dir, 'policy.yaml') };
});

describe('corral workflow, patch review across processes', () => {
  it('pauses for approval, is listed with the other approvals, and applies the patch once approved from another process', () => {
    const { repo, diff } = checkout('approve');
    const run = corral(['workflow', 'run', EXAMPLE, '--input', `diff=@${diff}`, '--json'], repo);
    expect(run.code, run.stderr).toBe(3);
    const waiting = JSON.parse(run.stdout) as { runId: string; status: string; pending: { step: string; prompt: string }[] };
    expect(waiting.status).toBe('waiting');
    expect(waiting.pending.map((p) => p.step)).toEqual(['sign-off']);
    expect(waiting.pending[0]!.prompt).toMatch(/^Apply this patch\? 1 file changed/);
    expect(readFileSync(join(repo, 'greet.js'), 'utf8')).not.toContain('world');

    const pending = JSON.parse(corral(['workflow', 'list', '--pending', '--json']).stdout) as {
      id: string;
      pending: { workflow_step: string }[];
    }[];
    expect(pending.map((r) => r.id)).toContain(waiting.runId);
    // One approval queue for tool calls and workflow steps.
    const approvals = JSON.parse(corral(['approvals', '--json']).stdout) as {
      workflow_run_id: string | null;
      workflow_step: string | null;
    }[];
    expect(approvals).toContainEqual(expect.objectContaining({ workflow_run_id: waiting.runId, workflow_step: 'sign-off' }));

    const approved = corral(
      ['workflow', 'approve', waiting.runId, 'sign-off', '--by', 'alice', '--comment', 'looks right', '--json'],
      // From another folder: the run still acts on the checkout it started in (its '.' was made absolute).
      dir,
    );
    expect(approved.code, approved.stderr).toBe(0);
    const done = JSON.parse(approved.stdout) as {
      status: string;
      outputs: Record<string, unknown>;
      steps: { id: string; status: string }[];
    };
    expect(done.status).toBe('succeeded');
    expect(done.outputs).toMatchObject({ applies: true, applied: true, files: 1, markers: 0 });
    expect(readFileSync(join(repo, 'greet.js'), 'utf8')).toContain('hello, world');

    const status = JSON.parse(corral(['workflow', 'status', waiting.runId, '--json']).stdout) as {
      run: { status: string };
      events: { step: string | null; kind: string; note: string | null }[];
    };
    expect(status.run.status).toBe('succeeded');
    expect(status.events.filter((e) => e.kind === 'step_succeeded').map((e) => e.step)).toContain('apply');
    // Who decided, in the audit trail every approval shares.
    const audit = JSON.parse(corral(['audit', '--json']).stdout) as { action: string; actor: string; detail: Record<string, unknown> }[];
    expect(audit).toContainEqual(
      expect.objectContaining({ action: 'approve', actor: 'alice', detail: expect.objectContaining({ workflow_run_id: waiting.runId }) }),
    );
    expect(corral(['audit']).stdout).toContain(`step sign-off of run ${waiting.runId}: looks right`);
    // Nothing is left waiting, and deciding again says what happened.
    expect(corral(['workflow', 'list', '--pending']).stdout).toMatch(/No workflow run waits/);
    const again = corral(['workflow', 'approve', waiting.runId, 'sign-off']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/Step 'sign-off' of workflow run \S+ was already decided: approved by alice/);
    expect(corral(['workflow', 'approve', waiting.runId, 'signoff']).stderr).toMatch(/has no step 'signoff' \(its steps: summary, check/);
  }, 180_000);

  it('a rejection through the generic `corral approve` fails the run on resume, and nothing is applied', () => {
    const { repo, diff } = checkout('reject');
    const run = corral(['workflow', 'run', EXAMPLE, '--input', `diff=@${diff}`, '--json'], repo);
    expect(run.code, run.stderr).toBe(3);
    const { runId } = JSON.parse(run.stdout) as { runId: string };
    const approvals = JSON.parse(corral(['approvals', '--json']).stdout) as { id: string; workflow_run_id: string | null }[];
    const id = approvals.find((a) => a.workflow_run_id === runId)!.id;
    expect(corral(['approve', id, '--reject', '--comment', 'not now']).code).toBe(0);
    const resumed = corral(['workflow', 'resume', runId], repo);
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stdout).toMatch(/run .*: failed/);
    expect(resumed.stdout).toMatch(/sign-off/);
    expect(readFileSync(join(repo, 'greet.js'), 'utf8')).not.toContain('world');
  }, 180_000);
});

describe('corral workflow, a run needs its tools', () => {
  it('resume and approve without the --tools the run started with are refused, and nothing is recorded', () => {
    const file = join(dir, 'needs-echo.yaml');
    writeFileSync(
      file,
      'name: needs-echo\nsteps:\n  - { id: ask, approval: { prompt: ok? } }\n  - { id: say, tool: echo, depends_on: [ask], input: { hi: 1 } }\n',
    );
    const tools = join(ROOT, 'test/fixtures/tools');
    const run = corral(['workflow', 'run', file, '--tools', tools, '--json']);
    expect(run.code, run.stderr).toBe(3);
    const { runId } = JSON.parse(run.stdout) as { runId: string };
    const bare = corral(['workflow', 'approve', runId, 'ask']);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(
      /needs a tool not loaded here: echo\. Load them as when the run started \(corral: --tools DIR\); nothing was recorded/,
    );
    expect(corral(['workflow', 'resume', runId]).stderr).toMatch(/needs a tool not loaded here: echo/);
    // Still pending: the refused approve decided nothing.
    expect(corral(['workflow', 'list', '--pending']).stdout).toContain(runId);
    const ok = corral(['workflow', 'approve', runId, 'ask', '--tools', tools, '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      status: 'succeeded',
      steps: [
        { id: 'ask', status: 'succeeded' },
        { id: 'say', status: 'succeeded', output: { hi: 1 } },
      ],
    });
  }, 120_000);
});

describe('corral tools stats', () => {
  it('shows each tool version the runs above used, with its belief of success and credible interval', () => {
    const r = corral(['tools', 'stats', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as {
      key: string;
      successes: number;
      failures: number;
      mean: number;
      interval: [number, number];
      retire: boolean;
    }[];
    const summary = rows.find((row) => row.key.startsWith('diff-summary@'))!;
    expect(summary.successes).toBeGreaterThanOrEqual(2);
    expect(summary.failures).toBe(0);
    // Beta(1 + s, 1): the mean is (1 + s) / (2 + s), inside its own interval.
    expect(summary.mean).toBeCloseTo((1 + summary.successes) / (2 + summary.successes), 10);
    expect(summary.interval[0]).toBeLessThan(summary.mean);
    expect(summary.interval[1]).toBeGreaterThan(summary.mean);
    expect(summary.retire).toBe(false);
    expect(corral(['tools', 'stats']).stdout).toMatch(/diff-summary@\S+\s+\d+\s+\d+\s+0\s+\d+\.\d%/);
    expect(corral(['tools', 'stats', '--prior', '0,1'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/bad --prior/) });
  });
});

describe('corral workflow, refusals', () => {
  it('validate says a good file is valid and names the cycle, the line and the unknown tool of bad ones', () => {
    expect(corral(['workflow', 'validate', EXAMPLE])).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/patch-review, 8 steps: valid/),
    });
    const cyc = join(dir, 'cycle.yaml');
    writeFileSync(cyc, 'name: c\nsteps:\n  - { id: a, tool: echo, depends_on: [b] }\n  - { id: b, tool: echo, depends_on: [a] }\n');
    const cycle = corral(['workflow', 'validate', cyc]);
    expect(cycle.code).toBe(1);
    expect(cycle.stderr).toMatch(/a -> b -> a|b -> a -> b/);
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, 'name: u\nsteps:\n  - id: a\n    tool: no-such-tool\n');
    const u = corral(['workflow', 'validate', unknown]);
    expect(u.code).toBe(1);
    expect(u.stderr).toMatch(/no-such-tool/);
    expect(u.stderr).toMatch(/line 4/);
    const badExpr = join(dir, 'expr.yaml');
    writeFileSync(badExpr, 'name: e\nsteps:\n  - id: a\n    tool: diff-summary\n    condition: "inputs.x >"\n');
    const e = corral(['workflow', 'validate', badExpr, '--json']);
    expect(e.code).toBe(1);
    expect(JSON.parse(e.stdout)).toMatchObject({ ok: false, error: { code: 'E_INPUT_VALIDATION' } });
  });

  it('misuse is exit 2 with a message, before anything runs', () => {
    const cases: [string[], RegExp][] = [
      [['workflow'], /name what to do/],
      [['workflow', 'frobnicate'], /no workflow command 'frobnicate'/],
      [['workflow', 'run'], /takes FILE/],
      [['workflow', 'run', join(dir, 'missing.yaml')], /no such file/],
      [['workflow', 'run', EXAMPLE, '--input', 'big=lots'], /--input big: the input is of type integer/],
      [['workflow', 'run', EXAMPLE, '--input', 'nameonly'], /expected NAME=VALUE/],
      [['workflow', 'status', 'a', 'b'], /takes RUN_ID/],
      [['workflow', 'list', '--status', 'sleeping'], /bad --status sleeping/],
      [['workflow', 'resume', 'x', '--reject'], /--reject, --comment, --by and --no-resume are for corral workflow approve/],
      [['workflow', 'run', EXAMPLE, '--concurrency', '0'], /bad --concurrency/],
      [['workflow', 'run', EXAMPLE, '--prior', '1'], /bad --prior 1: A,B with both above 0/],
    ];
    for (const [args, message] of cases) {
      const r = corral(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('an unknown run id is a clear error', () => {
    const r = corral(['workflow', 'status', 'no-such-run']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/There is no workflow run 'no-such-run'/);
  });
});
