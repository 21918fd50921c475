/** `corral run` recording, `corral snapshots …` and `corral replay`, through the real CLI. */
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { Corral, SqliteStore } from '@corral/node';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-snapcli-'));
const STORE = join(dir, 'snapshots.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function corral(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 64 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** `corral run … --json --store STORE` and the envelope it printed. */
async function run(args: string[], store = STORE) {
  const r = await corral(['run', ...args, '--json', '--store', store]);
  return { ...r, envelope: JSON.parse(r.stdout) as { ok: boolean; snapshot?: { id: string; error?: string } } };
}

describe('corral run records snapshots', () => {
  it('records each run in --store, or $CORRAL_STORE, and nothing with --no-store', async () => {
    const a = await run(['echo', '--tools', FIXTURES, '--input', '{"n":1}']);
    expect(a.envelope).toMatchObject({ ok: true, snapshot: { id: expect.any(String) } });
    expect(a.envelope.snapshot?.error).toBeUndefined();

    const viaEnv = join(dir, 'env.db');
    const b = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{"n":2}', '--json'], { CORRAL_STORE: viaEnv });
    const id = JSON.parse(b.stdout).snapshot.id;
    const store = await SqliteStore.open(viaEnv);
    expect(await store.getExecution(id)).toMatchObject({ status: 'ok', tool: 'echo', input_json: '{"n":2}' });
    await store.close();

    const none = await corral(['run', 'echo', '--tools', FIXTURES, '--input', '{}', '--json', '--no-store'], {
      CORRAL_STORE: join(dir, 'never.db'),
    });
    expect(JSON.parse(none.stdout).snapshot).toBeUndefined();
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
    expect((await corral(['run', 'echo', '--store', STORE, '--no-store'])).code).toBe(2);
  });

  it('lists, filters, shows and exports', async () => {
    const store = join(dir, 'list.db');
    const ok = (await run(['echo', '--tools', FIXTURES, '--input', '{"x":"listed"}'], store)).envelope.snapshot!.id;
    const failed = (await run(['exit-fail', '--tools', FIXTURES, '--input', '{}'], store)).envelope.snapshot!.id;
    const missing = (await run(['nope', '--input', '{}'], store)).envelope.snapshot!.id;

    const list = await corral(['snapshots', 'list', '--store', store]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TIME \(UTC\)\s+TOOL\s+STATUS\s+ERROR\s+DURATION$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([missing, failed, ok]);

    const json = async (...args: string[]) =>
      JSON.parse((await corral(['snapshots', 'list', '--json', '--store', store, ...args])).stdout).map((e: { id: string }) => e.id);
    expect(await json('--tool', 'echo')).toEqual([ok]);
    expect(await json('--error', 'E_UNEXPECTED_EXIT')).toEqual([failed]);
    expect(await json('--status', 'failed')).toEqual([missing, failed]);
    expect(await json('--since', '1h')).toHaveLength(3);
    expect(await json('--since', '2999-01-01')).toEqual([]);
    expect(await json('--limit', '1')).toEqual([missing]);

    const show = await corral(['snapshots', 'show', failed, '--store', store]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`^execution ${failed}\\n  status +failed\\n  tool +exit-fail@1\\.0\\.0`));
    expect(show.stdout).toMatch(/error +E_UNEXPECTED_EXIT: exit-fail exited with code 1/);
    expect(JSON.parse((await corral(['snapshots', 'show', ok, '--json', '--store', store])).stdout)).toMatchObject({
      kind: 'execution',
      id: ok,
      input_json: '{"x":"listed"}',
    });
    const unknown = await corral(['snapshots', 'show', 'no-such-id', '--store', store]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No snapshot with id no-such-id/);

    const exported = await corral(['snapshots', 'export', '--store', store]);
    const records = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.map((r) => [r.kind, r.id])).toEqual([
      ['execution', ok],
      ['execution', failed],
      ['execution', missing],
    ]);
  });

  it('lists where routed calls ran, and shows why', async () => {
    const path = join(dir, 'routed.db');
    const store = await SqliteStore.open(path);
    const when = (n: number) => (1_764_409_626_000_000_000n + BigInt(n) * 1_000_000n).toString();
    const calls = [
      { id: 'call-here', ran_on: 'local: the fleet is unreachable' },
      { id: 'call-away', ran_on: 'fleet w1, call 24fc49b3-0000-4000-8000-000000000000: the input is 3.0 MiB' },
    ];
    for (const [n, c] of calls.entries()) {
      const base = { decision_id: null, tool: 'echo', version: '1.0.0', wasm_sha256: null, input_sha256: null, input_json: null };
      await store.beginExecution({ ...base, id: c.id, intent_ns: when(n) });
      await store.finishExecution(c.id, {
        result_ns: when(n + 1),
        exit_code: 0,
        error_code: null,
        error_message: null,
        stdout_sha256: null,
        stdout_head: '',
        stdout_tail: '',
        stderr_head: '',
        stderr_tail: '',
        duration_ms: 1,
        peak_memory_bytes: null,
        ran_on: c.ran_on,
      });
    }
    await store.close();
    const lines = (await corral(['snapshots', 'list', '--store', path])).stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TIME \(UTC\)\s+TOOL\s+STATUS\s+ERROR\s+DURATION\s+RAN ON$/);
    expect(lines.slice(1).map((l) => [l.split(/\s+/)[0], l.match(/(local|fleet w1)$/)?.[0]])).toEqual([
      ['call-away', 'fleet w1'],
      ['call-here', 'local'],
    ]);
    expect((await corral(['snapshots', 'show', 'call-away', '--store', path])).stdout).toContain(
      'ran on         fleet w1, call 24fc49b3-0000-4000-8000-000000000000: the input is 3.0 MiB',
    );
  });

  it('links calls to a decision recorded through the API', async () => {
    const store = join(dir, 'decisions.db');
    const c = await Corral.create({ bundled: false, toolDirs: [FIXTURES], store, size: 1 });
    const decision = await c.recordDecision({ prompt: 'echo this', output: '{"tool":"echo","input":{"said":"hi"}}', model: 'test-model' });
    const call = await c.invoke('echo', { said: 'hi' }, { decisionId: decision.id });
    await c.invoke('echo', { said: 'unlinked' });
    await c.close();
    const list = JSON.parse((await corral(['snapshots', 'list', '--decision', decision.id, '--json', '--store', store])).stdout);
    expect(list.map((e: { id: string }) => e.id)).toEqual([call.snapshot!.id]);
    const show = await corral(['snapshots', 'show', decision.id, '--store', store]);
    expect(show.stdout).toMatch(new RegExp(`^decision ${decision.id}\\n`));
    expect(show.stdout).toContain(`${call.snapshot!.id} (echo, ok)`);
    expect(show.stdout).toContain('test-model');
  });

  it('prunes after writing an archive, and says where', async () => {
    const store = join(dir, 'prune.db');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await run(['echo', '--tools', FIXTURES, '--input', `{"i":${i}}`], store)).envelope.snapshot!.id);
    const r = await corral(['snapshots', 'prune', '--keep', '1', '--store', store]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Removed 2 executions and 0 decisions\.\nArchive: (.*\.jsonl)\nStore: [\d.]+ MB → [\d.]+ MB\n$/);
    const archive = /Archive: (.*)\n/.exec(r.stdout)![1]!;
    expect(archive.startsWith(join(dir, 'archive'))).toBe(true);
    const archived = readFileSync(archive, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(archived.map((a) => a.id)).toEqual(ids.slice(0, 2));
    expect(archived[0]).toMatchObject({ kind: 'execution', status: 'ok', input_json: '{"i":0}' });
    const left = JSON.parse((await corral(['snapshots', 'list', '--json', '--store', store])).stdout);
    expect(left.map((e: { id: string }) => e.id)).toEqual([ids[2]]);

    expect((await corral(['snapshots', 'prune', '--older-than', '1h', '--store', store])).stdout).toBe('Nothing to prune.\n');
    await run(['echo', '--tools', FIXTURES, '--input', '{"i":3}'], store);
    // An archive path that exists: refused as the user's to change, naming the flag, and nothing is removed.
    // (It was a bare "EEXIST: file already exists, open …" before, the one CLI failure with no code.)
    const taken = await corral(['snapshots', 'prune', '--older-than', '0s', '--archive', archive, '--store', store]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe(
      `corral: Cannot write ${archive} (--archive): it exists, and Corral never overwrites an export or an archive (E_INPUT_VALIDATION)\n`,
    );
    expect(JSON.parse((await corral(['snapshots', 'list', '--json', '--store', store])).stdout)).toHaveLength(2);
    const aged = await corral(['snapshots', 'prune', '--older-than', '0s', '--archive', join(dir, 'all.jsonl'), '--store', store]);
    expect(aged.stdout).toContain(`Archive: ${join(dir, 'all.jsonl')}`);
  });

  it('exits 2 on misuse', async () => {
    for (const args of [
      ['snapshots', 'frob'],
      ['snapshots', 'prune'],
      ['snapshots', 'prune', '--keep', '1', '--older-than', '1d'],
      ['snapshots', 'prune', '--older-than', '5x'],
      ['snapshots', 'list', '--status', 'weird'],
      ['snapshots', 'export', '--format', 'csv'],
      ['replay'],
    ]) {
      const r = await corral([...args, '--store', STORE]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^corral: /);
    }
    for (const cmd of [
      ['snapshots', '--help'],
      ['replay', '--help'],
      ['snapshots', 'list', '--help'],
    ]) {
      expect((await corral(cmd)).code).toBe(0);
    }
  });
});

describe('corral replay', () => {
  it('reports identical output for the bundled tools', async () => {
    const diff = await run(['diff-summary', '--input-file', 'wasm-tools/diff-summary/examples/example.diff.json']);
    const stats = await run(['file-stats', '--mount', `${join(ROOT, 'test/fixtures/tools/echo')}:/workspace:ro`, '--input', '{}']);
    expect(diff.envelope.ok && stats.envelope.ok).toBe(true);

    const r = await corral(['replay', diff.envelope.snapshot!.id, '--store', STORE]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^replay of \S+ \(diff-summary@1\.1\.0\): identical\n/);
    expect(r.stdout).toMatch(/stdout sha256 +[0-9a-f]{16} \(same\)/);

    const s = await corral([
      'replay',
      stats.envelope.snapshot!.id,
      '--mount',
      `${join(ROOT, 'test/fixtures/tools/echo')}:/workspace:ro`,
      '--json',
      '--store',
      STORE,
    ]);
    expect(s.code, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ tool: 'file-stats', identical: true, artifact_changed: false, differences: [] });
  });

  it('reports a difference when the artifact changed under the same name and version', async () => {
    const tools = join(dir, 'tools');
    cpSync(join(FIXTURES, 'echo'), join(tools, 'echo'), { recursive: true });
    const recorded = await run(['echo', '--tools', tools, '--input', '{"same":"input"}']);
    expect((await corral(['replay', recorded.envelope.snapshot!.id, '--tools', tools, '--store', STORE])).code).toBe(0);

    // Another tool's wasm under echo's spec: same name@version, different artifact and output.
    copyFileSync(join(FIXTURES, 'exit-fail/exit-fail.wasm'), join(tools, 'echo/echo.wasm'));
    const r = await corral(['replay', recorded.envelope.snapshot!.id, '--tools', tools, '--store', STORE]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^replay of \S+ \(echo@1\.0\.0\): DIFFERENT\n/);
    expect(r.stdout).toMatch(/wasm sha256 +recorded [0-9a-f]{16}, now [0-9a-f]{16}/);
    expect(r.stdout).toContain('The tool artifact changed since the recording');
    const json = JSON.parse(
      (await corral(['replay', recorded.envelope.snapshot!.id, '--tools', tools, '--json', '--store', STORE])).stdout,
    );
    expect(json).toMatchObject({
      ok: false,
      identical: false,
      artifact_changed: true,
      recorded: { exit_code: 0 },
      replayed: { exit_code: 1, error_code: 'E_UNEXPECTED_EXIT' },
    });
    expect(json.differences).toEqual(expect.arrayContaining(['wasm_sha256', 'stdout_sha256', 'exit_code', 'error_code']));
  });

  it('says why a call cannot be replayed', async () => {
    const missing = await run(['nope', '--input', '{}']);
    const r = await corral(['replay', missing.envelope.snapshot!.id, '--store', STORE]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/never resolved a tool/);
    const unknown = await corral(['replay', 'no-such-id', '--store', STORE]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No execution snapshot with id no-such-id/);
  });
});
