/**
 * Text that comes from a tool (its stderr, its error message, its output,
 * what a snapshot recorded, its spec) must not drive the terminal the CLI
 * prints on: no raw ESC, BEL, CR, C1 controls, U+2028/2029 or bidi
 * overrides reach stdout or stderr, through the real CLI. JSON output stays
 * JSON with the same values.
 */
import { execFile } from 'node:child_process';
import { cpSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');
const dir = mkdtempSync(join(tmpdir(), 'corral-escapes-'));
const STORE = join(dir, 'snapshots.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function corral(args: string[]) {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, maxBuffer: 64 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** Every character that can act on a terminal, except \n and \t. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Fails with the offending character and where it is, not just "true". */
function expectNoControls(text: string, what: string): void {
  const m = CONTROL.exec(text);
  expect(
    m &&
      `U+${m[0].codePointAt(0)!.toString(16).padStart(4, '0')} at ${m.index} in ${what}: ${JSON.stringify(text.slice(Math.max(0, m.index - 40), m.index + 40))}`,
  ).toBeNull();
}

/** What the fixture puts in its error message, as JSON would spell it. */
const MESSAGE = 'bad \u001b]0;owned-message\u0007\u001b[2J \u009b2J \u202e!';

async function recordedId(args: string[], store = STORE): Promise<string> {
  const r = await corral(['run', ...args, '--json', '--store', store]);
  return JSON.parse(r.stdout).snapshot.id;
}

describe('terminal escapes from tools are shown escaped', () => {
  it('corral run: the error line quotes the tool escaped, on one line', async () => {
    const r = await corral(['run', 'terminal-escapes', '--tools', FIXTURES, '--input', '{}', '--store', STORE]);
    expect(r.code).toBe(1);
    expectNoControls(r.stderr, 'stderr');
    expect(r.stderr).toBe(
      'corral: terminal-escapes exited with code 1: bad \\u001b]0;owned-message\\u0007\\u001b[2J \\u009b2J \\u202e! (E_UNEXPECTED_EXIT)\n',
    );

    // Output that is not JSON is quoted in the message: escaped too, newline included.
    const raw = await corral(['run', 'terminal-escapes', '--tools', FIXTURES, '--input', '{"mode":"raw-stdout"}', '--no-store']);
    expect(raw.code).toBe(1);
    expectNoControls(raw.stderr, 'stderr');
    expect(raw.stderr).toMatch(
      /^corral: terminal-escapes printed output that is not JSON: \\u001b\]0;owned-title\\u0007.*\\u000d.*\\u000a \(E_UNEXPECTED_EXIT\)\n$/,
    );
  });

  it('corral run --json: JSON with every control escaped and the values unchanged', async () => {
    const r = await corral(['run', 'terminal-escapes', '--tools', FIXTURES, '--input', '{}', '--json', '--no-store']);
    expectNoControls(r.stdout, 'stdout');
    const envelope = JSON.parse(r.stdout);
    expect(envelope.error.message).toBe(`terminal-escapes exited with code 1: ${MESSAGE}`);
    expect(envelope.stderr_tail).toContain('\u001b]0;owned-title\u0007');
  });

  it("plain corral run prints the tool's JSON output escaped, and it parses back to the same value", async () => {
    const input = { s: 'C1 CSI \u009b2J, RLO \u202eabc, LS \u2028, DEL \u007f, ESC \u001b[2J' };
    const r = await corral(['run', 'echo', '--tools', FIXTURES, '--input', JSON.stringify(input), '--no-store']);
    expect(r.code).toBe(0);
    expectNoControls(r.stdout, 'stdout');
    expect(JSON.parse(r.stdout)).toEqual(input);
  });

  it('corral snapshots show, list and export', async () => {
    const store = join(dir, 'show.db');
    const failed = await recordedId(['terminal-escapes', '--tools', FIXTURES, '--input', '{}'], store);
    const rawOut = await recordedId(['terminal-escapes', '--tools', FIXTURES, '--input', '{"mode":"raw-stdout"}'], store);
    const echoed = await recordedId(['echo', '--tools', FIXTURES, '--input', '{"s":"\\u009b2J \\u202e"}'], store);
    // A caller may ask for any name; an unresolved one is recorded as asked.
    const named = await recordedId(['no\u001b]0;such\u0007\u001b[2Jtool\u202e', '--input', '{}'], store);

    for (const id of [failed, rawOut, echoed, named]) {
      const show = await corral(['snapshots', 'show', id, '--store', store]);
      expect(show.code, show.stderr).toBe(0);
      expectNoControls(show.stdout, `snapshots show ${id}`);
    }
    const show = await corral(['snapshots', 'show', failed, '--store', store]);
    expect(show.stdout).toContain('\\u001b]0;owned-title\\u0007\\u001b[2J\\u001b[31mred\\u000dover \\u009b2J \\u202edesrever \\u2028end');
    expect(show.stdout).toMatch(/^ {2}error +E_UNEXPECTED_EXIT: terminal-escapes exited with code 1: bad \\u001b\]0;owned-message/m);

    const list = await corral(['snapshots', 'list', '--store', store]);
    expectNoControls(list.stdout, 'snapshots list');
    expect(list.stdout).toContain('no\\u001b]0;such\\u0007\\u001b[2Jtool\\u202e@?');
    // One line per call: nothing a tool printed can start a new row.
    expect(list.stdout.trim().split('\n')).toHaveLength(1 + 4);

    const json = await corral(['snapshots', 'show', failed, '--json', '--store', store]);
    expectNoControls(json.stdout, 'snapshots show --json');
    expect(JSON.parse(json.stdout).stderr_tail).toContain('\u001b]0;owned-title\u0007');
    const listed = await corral(['snapshots', 'list', '--json', '--store', store]);
    expectNoControls(listed.stdout, 'snapshots list --json');
    const exported = await corral(['snapshots', 'export', '--store', store]);
    expectNoControls(exported.stdout, 'snapshots export');
    expect(
      exported.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toHaveLength(4);
  });

  it('corral replay shows differing stdout escaped', async () => {
    const tools = join(dir, 'tools');
    cpSync(join(FIXTURES, 'terminal-escapes'), join(tools, 'terminal-escapes'), { recursive: true });
    const id = await recordedId(['terminal-escapes', '--tools', tools, '--input', '{"mode":"raw-stdout"}']);
    // Another artifact under the same name and version: stdout differs, so both heads are printed.
    copyFileSync(join(FIXTURES, 'echo/echo.wasm'), join(tools, 'terminal-escapes/terminal-escapes.wasm'));
    const r = await corral(['replay', id, '--tools', tools, '--store', STORE]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('recorded stdout (first 1 KiB):\n  \\u001b]0;owned-title\\u0007');
    expectNoControls(r.stdout, 'replay');
    expectNoControls((await corral(['replay', id, '--tools', tools, '--json', '--store', STORE])).stdout, 'replay --json');
  });

  it('corral tools and corral validate show spec text escaped', async () => {
    const folder = join(dir, 'spec-tools', 'shady');
    mkdirSync(folder, { recursive: true });
    copyFileSync(join(FIXTURES, 'echo/echo.wasm'), join(folder, 'shady.wasm'));
    const spec = {
      name: 'shady',
      version: '1.0.0',
      description: 'Harmless\u001b]0;owned\u0007\u001b[2J\u202e',
      component: 'shady.wasm',
      input_schema: { type: 'object' },
    };
    writeFileSync(join(folder, 'tool-spec.json'), JSON.stringify(spec));
    const tools = await corral(['tools', '--tools', join(dir, 'spec-tools')]);
    expect(tools.code, tools.stderr).toBe(0);
    expectNoControls(tools.stdout, 'tools');
    expect(tools.stdout).toMatch(/^shady@1\.0\.0 +Harmless\\u001b\]0;owned\\u0007\\u001b\[2J\\u202e$/m);
    expectNoControls((await corral(['tools', '--json', '--tools', join(dir, 'spec-tools')])).stdout, 'tools --json');

    const bad = join(dir, 'bad-spec.json');
    writeFileSync(bad, JSON.stringify({ ...spec, 'x\u001b[2J\u202e': 1 }));
    const v = await corral(['validate', bad]);
    expect(v.code).toBe(1);
    expectNoControls(v.stdout, 'validate');
    expect(v.stdout).toContain("must NOT have additional property 'x\\u001b[2J\\u202e'");
  });
});
