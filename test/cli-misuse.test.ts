/**
 * Every way of misusing `corral` a user has hit, one row each, through the
 * real binary: the exit status (0 ok, 1 the call or a file it named was
 * refused, 2 the command line itself is wrong), a fragment of what the user
 * reads on stderr, and, with --json, the envelope on stdout.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Socket } from 'node:net';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures/tools');

let home = '';
/** A folder with one tool whose spec is missing `component` and `input_schema`. */
let broken = '';

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'corral-misuse-'));
  broken = join(home, 'tools');
  await mkdir(join(broken, 'mytool'), { recursive: true });
  await writeFile(join(broken, 'mytool/tool-spec.json'), JSON.stringify({ name: 'mytool', version: '1.0.0' }));
  // A good spec whose wasm is a text file: the failure names the wasm, not the spec.
  await mkdir(join(broken, 'textwasm'));
  await writeFile(
    join(broken, 'textwasm/tool-spec.json'),
    JSON.stringify({ name: 'appc', version: '1.0.0', component: 'appc.wasm', input_schema: { type: 'object' } }),
  );
  await writeFile(join(broken, 'textwasm/appc.wasm'), 'hello\n');
  // A C tool folder (as corral init writes it) with a stray expected answer that has no input.
  execFileSync(process.execPath, [CLI, 'init', 'ctool', '--lang', 'c', '--dir', join(home, 'ctool')], { env: env() });
  await writeFile(join(home, 'ctool/examples/orphan.expected.json'), '{}');
});

const env = () => ({ ...process.env, CORRAL_STORE: join(home, 'snapshots.db'), CORRAL_POLICY: join(home, 'policy.yaml') });

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real CLI in a child process, stdin a pipe given `stdin` (empty by default: never a terminal). */
function corral(args: string[], stdin = '', extraEnv: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...env(), ...extraEnv } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

/** The CLI on a terminal (util-linux `script` gives it a pty for stdin, stdout and stderr; their output arrives merged). */
function onTerminal(args: string[], extraEnv: Record<string, string> = {}): Promise<Ran> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return new Promise((resolve) => {
    execFile(
      'script',
      ['-qec', [process.execPath, CLI, ...args].map(quote).join(' '), '/dev/null'],
      { cwd: ROOT, env: { ...env(), ...extraEnv } },
      (err, stdout) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout: '', stderr: stdout.replace(/\r\n/g, '\n') }),
    );
  });
}

interface Row {
  /** What the user did, as the row's name. */
  case: string;
  args: () => string[];
  code: 0 | 1 | 2;
  /** What the user reads on stderr. */
  says: RegExp;
  /** With --json: the envelope's error code (stdout must parse as `{ ok: false, error: { code, message, … } }`). */
  envelope?: string;
  /** Run on a terminal instead of with a pipe for stdin. */
  terminal?: boolean;
  stdin?: string;
}

const ROWS: Row[] = [
  // Paths that name nothing to write: a store path ending in a slash became a file named like the folder.
  {
    case: 'run with a --store path that ends in a slash',
    args: () => ['run', 'diff-summary', '--input', '{"diff": ""}', '--store', join(home, 'store-folder/')],
    code: 1,
    says: /store-folder\/: ends in a slash, so it names a folder; the store is a file/,
  },
  {
    case: 'snapshots prune --archive with an empty path',
    args: () => ['snapshots', 'prune', '--keep', '0', '--archive', ''],
    code: 2,
    says: /--archive needs a path, not an empty string/,
  },
  // --tools
  {
    case: 'run with a --tools folder that does not exist',
    args: () => ['run', 'diff-summary', '--tools', '/nonexistent', '--input', '{}'],
    code: 2,
    says: /--tools "\/nonexistent": no such folder/,
  },
  {
    case: 'tools with a --tools folder that does not exist',
    args: () => ['tools', '--tools', '/nonexistent'],
    code: 2,
    says: /--tools "\/nonexistent": no such folder/,
  },
  {
    case: 'tools --json with a --tools folder that does not exist',
    args: () => ['tools', '--json', '--tools', '/nonexistent'],
    code: 2,
    says: /no such folder/,
    envelope: 'E_USAGE',
  },
  // a broken tool folder
  {
    case: 'run a tool whose folder is broken: the reason, the file and the fix, not E_TOOL_NOT_FOUND',
    args: () => ['run', 'mytool', '--tools', broken, '--input', '{}'],
    code: 1,
    says: /Invalid tool spec .*mytool\/tool-spec\.json: 2 problems: .*'component'.*\(E_REGISTRATION\); corral validate .*mytool\/tool-spec\.json lists every problem/,
  },
  {
    case: 'run --json a tool whose folder is broken',
    args: () => ['run', 'mytool', '--tools', broken, '--input', '{}', '--json'],
    code: 1,
    says: /Invalid tool spec .*\(E_REGISTRATION\)/,
    envelope: 'E_REGISTRATION',
  },
  {
    case: 'run a tool that does not exist, beside a broken one: both said',
    args: () => ['run', 'nosuch', '--tools', broken, '--input', '{}'],
    code: 1,
    says: /skipped, could not load: Invalid tool spec .*mytool[\s\S]*No tool named 'nosuch'.*\(E_TOOL_NOT_FOUND\)/,
  },
  {
    case: 'tools with a broken tool in --tools: listed as skipped, the others listed',
    args: () => ['tools', '--tools', broken],
    code: 0,
    says: /skipped: Invalid tool spec .*mytool\/tool-spec\.json.*corral validate/,
  },
  // bad flag values: all exit 2
  {
    case: 'a malformed --mount',
    args: () => ['run', 'file-stats', '--mount', 'just-a-folder', '--input', '{}'],
    code: 2,
    says: /Bad --mount "just-a-folder": expected HOSTDIR:GUESTDIR\[:ro\|rw\]/,
  },
  {
    case: 'a malformed --mount, with --json',
    args: () => ['run', 'file-stats', '--mount', 'just-a-folder', '--input', '{}', '--json'],
    code: 2,
    says: /Bad --mount/,
    envelope: 'E_USAGE',
  },
  {
    case: 'a malformed --env',
    args: () => ['run', 'diff-summary', '--env', 'LANG', '--input', '{}'],
    code: 2,
    says: /bad --env "LANG": expected NAME=VALUE/,
  },
  {
    case: 'a malformed --env, with --json',
    args: () => ['run', 'diff-summary', '--env', 'LANG', '--input', '{}', '--json'],
    code: 2,
    says: /bad --env/,
    envelope: 'E_USAGE',
  },
  {
    case: 'a malformed --timeout',
    args: () => ['run', 'diff-summary', '--timeout', 'soon', '--input', '{}'],
    code: 2,
    says: /bad --timeout soon: expected milliseconds, e\.g\. 5000/,
  },
  {
    case: '--store and --no-store together',
    args: () => ['run', 'diff-summary', '--store', 'x.db', '--no-store', '--input', '{}'],
    code: 2,
    says: /give --store PATH or --no-store, not both/,
  },
  {
    case: 'a flag without its value',
    args: () => ['run', 'diff-summary', '--input'],
    code: 2,
    says: /--input needs a value\./,
  },
  {
    case: 'an empty --output (an unset shell variable): a usage error naming the flag',
    args: () => ['snapshots', 'export', '--output', ''],
    code: 2,
    says: /^corral: --output needs a path, not an empty string\.\n/,
  },
  {
    case: 'an empty --policy, with --json',
    args: () => ['policy', 'show', '--policy', '', '--json'],
    code: 2,
    says: /--policy needs a path, not an empty string/,
    envelope: 'E_USAGE',
  },
  // input
  {
    case: 'malformed --input JSON: the call is refused (exit 1), as HTTP refuses a body that is not JSON',
    args: () => ['run', 'diff-summary', '--input', '{not json'],
    code: 1,
    says: /The input from --input is not valid JSON: .*\(E_INPUT_VALIDATION\)/,
  },
  {
    // Corral starts while the input is read; a bad input still reports first, and nothing it started is left running.
    case: 'malformed --input JSON and a --store that is a folder: the input is what is reported',
    args: () => ['run', 'diff-summary', '--store', home, '--input', '{not json'],
    code: 1,
    says: /^corral: The input from --input is not valid JSON: [^\n]*\(E_INPUT_VALIDATION\)\n$/,
  },
  {
    case: 'a --store that is a folder: the store is refused (E_STORE)',
    args: () => ['run', 'diff-summary', '--store', home, '--input', '{}'],
    code: 1,
    says: /is a directory, not a file.*\(E_STORE\)/,
  },
  {
    case: 'malformed --input JSON, with --json',
    args: () => ['run', 'diff-summary', '--input', '{not json', '--json'],
    code: 1,
    says: /not valid JSON/,
    envelope: 'E_INPUT_VALIDATION',
  },
  {
    case: 'an --input-file that does not exist: its path and what is wrong, not a bare ENOENT',
    args: () => ['run', 'diff-summary', '--input-file', 'no/such/input.json'],
    code: 2,
    says: /--input-file no\/such\/input\.json: no such file \(looked for \/.*\/no\/such\/input\.json\)/,
  },
  {
    case: 'an --input-file that does not exist, with --json',
    args: () => ['run', 'diff-summary', '--input-file', 'no/such/input.json', '--json'],
    code: 2,
    says: /no such file/,
    envelope: 'E_USAGE',
  },
  {
    case: 'no input on a terminal: says what to give instead of running on {}',
    args: () => ['run', 'diff-summary'],
    terminal: true,
    code: 2,
    says: /no input for diff-summary, and stdin is a terminal: give --input JSON \(--input '\{\}' for none\) or --input-file FILE, or pipe it in/,
  },
  {
    case: '--wasm FILE that does not exist',
    args: () => ['run', '--wasm', '/no/such.wasm', '--spec', join(FIXTURES, 'echo/tool-spec.json'), '--input', '{}'],
    code: 2,
    says: /--wasm \/no\/such\.wasm: no such file/,
  },
  {
    case: 'run a tool whose wasm is a text file, with --json: its own E_REGISTRATION, not "no tool named"',
    args: () => ['run', 'appc', '--tools', broken, '--input', '{}', '--json'],
    code: 1,
    says: /textwasm\/appc\.wasm is not a WebAssembly file .*\(E_REGISTRATION\)/,
    envelope: 'E_REGISTRATION',
  },
  {
    case: 'run a tool that declares a mount without --mount: refused before running, with the flag to add',
    args: () => ['run', 'file-stats', '--input', '{}'],
    code: 1,
    says: /declares mount \/workspace but the call binds nothing to it.*\n.*give the tool a folder: --mount HOSTDIR:\/workspace/,
  },
  {
    case: 'validate given the tool folder: its tool-spec.json, as build and test take a folder',
    args: () => ['validate', join(ROOT, 'wasm-tools/diff-summary')],
    code: 0,
    says: /^$/,
  },
  {
    case: 'validate given the .wasm: says to give the spec',
    args: () => ['validate', join(ROOT, 'wasm-tools/diff-summary/diff-summary.wasm')],
    code: 2,
    says: /diff-summary\.wasm is the tool's wasm; validate takes its tool-spec\.json \(or the tool's folder\)/,
  },
  {
    case: 'a mistyped --version: did you mean',
    args: () => ['--versoin'],
    code: 2,
    says: /unknown command '--versoin'\. Did you mean --version\?/,
  },
  {
    case: 'a mistyped command: did you mean',
    args: () => ['valdate', 'x'],
    code: 2,
    says: /unknown command 'valdate'\. Did you mean validate\?/,
  },
  {
    case: 'build --lang rust on a C tool folder: says what the folder holds, before any compiler runs',
    args: () => ['build', join(home, 'ctool'), '--lang', 'rust'],
    code: 2,
    says: /ctool has no rust sources; it holds c \(drop --lang, or use --lang c\)/,
  },
  {
    case: 'test with an expected answer that has no input: warned, not silently skipped',
    args: () => ['test', join(home, 'ctool')],
    code: 1,
    says: /warning: .*orphan\.expected\.json has no \.input\.json beside it; it is not run/,
  },
  {
    case: 'validate a spec file that does not exist: the path, not a bare ENOENT',
    args: () => ['validate', 'no/such/tool-spec.json', '--json'],
    code: 2,
    says: /SPEC no\/such\/tool-spec\.json: no such file \(looked for \/.*\/no\/such\/tool-spec\.json\)/,
    envelope: 'E_USAGE',
  },
  {
    case: '--spec FILE that is refused at registration, with --json',
    args: () => [
      'run',
      '--wasm',
      join(FIXTURES, 'echo/echo.wasm'),
      '--spec',
      join(broken, 'mytool/tool-spec.json'),
      '--input',
      '{}',
      '--json',
    ],
    code: 1,
    says: /Invalid tool spec .*\(E_REGISTRATION\); corral validate/,
    envelope: 'E_REGISTRATION',
  },
  // unknown things
  {
    case: 'an unknown flag: one sentence, no parseArgs text with an unclosed quote',
    args: () => ['run', 'diff-summary', '--bogus'],
    code: 2,
    says: /^corral: unknown option --bogus\.\nRun 'corral run --help' for usage\.\n$/,
  },
  {
    case: 'a mistyped flag: the flag meant',
    args: () => ['run', 'diff-summary', '--inptu', '{}'],
    code: 2,
    says: /unknown option --inptu\. Did you mean --input\?/,
  },
  {
    case: 'an unknown flag, with --json',
    args: () => ['tools', '--jsn', '--json'],
    code: 2,
    says: /unknown option --jsn\. Did you mean --json\?/,
    envelope: 'E_USAGE',
  },
  {
    case: 'an argument a command does not take',
    args: () => ['mcp', 'diff-summary'],
    code: 2,
    says: /unexpected argument 'diff-summary': this command takes only options/,
  },
  {
    case: 'a tools subcommand that does not exist',
    args: () => ['tools', 'diff-summary'],
    code: 2,
    says: /no tools command 'diff-summary': 'corral tools' lists, 'corral tools stats' shows reliability/,
  },
  {
    case: 'an unknown command',
    args: () => ['frobnicate'],
    code: 2,
    says: /unknown command 'frobnicate'\. Commands: tools, run, .*completion/,
  },
  {
    case: 'an unknown command, with --json',
    args: () => ['frobnicate', '--json'],
    code: 2,
    says: /unknown command 'frobnicate'/,
    envelope: 'E_USAGE',
  },
  { case: 'help for an unknown command', args: () => ['help', 'frobnicate'], code: 2, says: /no command 'frobnicate'/ },
  { case: 'no command at all: the usage on stdout, exit 2', args: () => [], code: 2, says: /^$/ },
  { case: 'run with no tool named', args: () => ['run'], code: 2, says: /name one tool to run, e\.g\. corral run diff-summary/ },
  {
    case: 'exec with an unknown flag: the program\u2019s arguments go after --',
    args: () => ['exec', 'x.wasm', '--frobnicate'],
    code: 2,
    says: /unknown option --frobnicate\. Put the program's own arguments after --\./,
  },
  // completion
  { case: 'completion without a shell', args: () => ['completion'], code: 2, says: /name a shell: corral completion bash\|zsh\|fish/ },
  { case: 'completion for a shell it does not know', args: () => ['completion', 'tcsh'], code: 2, says: /got 'tcsh'/ },
];

describe('corral misused: exit status and message, row by row', () => {
  for (const row of ROWS) {
    it(`${row.case} → exit ${row.code}`, async () => {
      const r = row.terminal ? await onTerminal(row.args()) : await corral(row.args(), row.stdin);
      expect(r.code, r.stderr).toBe(row.code);
      expect(r.stderr).toMatch(row.says);
      if (row.code === 2 && !row.terminal && row.args().length > 0) expect(r.stderr).toMatch(/Run 'corral (\w+ )?--help' for usage\.\n$/);
      if (row.envelope) {
        const envelope = JSON.parse(r.stdout);
        expect(envelope).toMatchObject({ ok: false, error: { code: row.envelope, message: expect.any(String), retryable: false } });
        // The envelope says what stderr says.
        expect(r.stderr).toContain(envelope.error.message.slice(0, 40));
      } else if (!row.terminal && row.args().length > 0 && row.code !== 0) {
        expect(r.stdout).toBe('');
      }
    });
  }

  it('run --json of a missing tool beside broken ones says why each was skipped, in details.load_errors', async () => {
    const r = await corral(['run', 'nosuch', '--tools', broken, '--input', '{}', '--json']);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe('E_TOOL_NOT_FOUND');
    expect(error.details.load_errors).toEqual(
      expect.arrayContaining([
        { code: 'E_REGISTRATION', message: expect.stringMatching(/mytool\/tool-spec\.json.*corral validate/) },
        { code: 'E_REGISTRATION', message: expect.stringMatching(/appc\.wasm is not a WebAssembly file/) },
      ]),
    );
  });

  it("run's --json envelope has one shape, whether the call ran or was refused before it", async () => {
    const ran = JSON.parse((await corral(['run', 'nosuch', '--input', '{}', '--json'])).stdout);
    const refused = JSON.parse((await corral(['run', 'diff-summary', '--timeout', 'soon', '--input', '{}', '--json'])).stdout);
    expect(ran.error.code).toBe('E_TOOL_NOT_FOUND');
    expect(refused).toMatchObject({
      ok: false,
      tool: 'diff-summary',
      version: null,
      output: null,
      exit_code: null,
      error: { code: 'E_USAGE' },
    });
    const { snapshot: _, ...ranKeys } = ran;
    expect(Object.keys(refused).sort()).toEqual(Object.keys(ranKeys).sort());
    expect(refused.error.details).toEqual({ help: 'corral run --help' });
  });

  it('every command, misused with --json, prints the E_USAGE envelope naming the flag and its --help, and exits 2', async () => {
    const help = (await corral(['--help'])).stdout;
    const commands = [...new Set([...help.matchAll(/^ {2}corral ([a-z]+)/gm)].map((m) => m[1]!))];
    expect(commands).toEqual(expect.arrayContaining(['tools', 'run', 'exec', 'validate', 'snapshots', 'policy', 'audit', 'completion']));
    for (const command of commands) {
      const r = await corral([command, '--bogus', '--json']);
      expect(r.code, command).toBe(2);
      // Commands with subcommands (snapshots, policy) say "unknown snapshots command '--bogus'".
      expect(r.stderr, command).toMatch(/^corral: unknown (option |\w+ command ')--bogus/);
      expect(JSON.parse(r.stdout), command).toMatchObject({
        ok: false,
        error: { code: 'E_USAGE', message: expect.stringContaining('--bogus'), details: { help: `corral ${command} --help` } },
      });
    }
  });

  it('an empty pipe on stdin is the input {} (a script with nothing to say); only a terminal is refused', async () => {
    const r = await corral(['run', 'echo', '--tools', FIXTURES, '--no-store'], '');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({});
    const piped = await corral(['run', 'echo', '--tools', FIXTURES, '--no-store'], '{"a": 1}');
    expect(JSON.parse(piped.stdout)).toEqual({ a: 1 });
  });
});

describe.runIf(process.platform === 'linux')('corral writing where the system refuses', () => {
  // Each was "an internal error; please report it", or said the export "exists" when a file was in its folder's way.
  it('a folder under /proc, a FIFO or a dangling link in the way: the path and the reason, a user error, never an internal one', async () => {
    const place = join(home, 'refused');
    await mkdir(place);
    execFileSync('mkfifo', [join(place, 'fifo')]);
    await symlink(join(place, 'nowhere'), join(place, 'dangling'));
    const cases: [args: string[], extraEnv: Record<string, string>, code: number, says: RegExp][] = [
      [
        ['policy', 'unlisted', 'deny'],
        { CORRAL_POLICY: '/proc/corral-nowhere/policy.yaml' },
        1,
        /^corral: Cannot write the policy file \/proc\/corral-nowhere\/policy\.yaml: cannot create the folder \/proc\/corral-nowhere: the system refuses to create it there \(ENOENT\) \(E_INPUT_VALIDATION\)\n$/,
      ],
      [
        ['policy', 'unlisted', 'deny'],
        { CORRAL_POLICY: join(place, 'fifo/policy.yaml') },
        1,
        /cannot create the folder \S*\/fifo: a file that is not a folder is in the way/,
      ],
      [
        ['init', 'tt', '--lang', 'c', '--dir', '/proc/corral-nowhere/tt'],
        {},
        1,
        /cannot create the folder \/proc\/corral-nowhere: the system refuses/,
      ],
      [
        ['snapshots', 'export', '--output', join(place, 'fifo/x.jsonl')],
        {},
        1,
        /\(--output\): cannot create the folder \S*\/fifo: a file that is not a folder is in the way/,
      ],
      [
        ['snapshots', 'export', '--output', join(place, 'dangling/x.jsonl')],
        {},
        1,
        /cannot create the folder \S*\/dangling: a symbolic link that leads nowhere is in the way/,
      ],
      [
        ['snapshots', 'export', '--output', join(place, 'dangling')],
        {},
        1,
        /Cannot write \S*\/dangling \(--output\): a symbolic link that leads nowhere is there, and Corral never writes an export or an archive through a link/,
      ],
    ];
    for (const [args, extraEnv, code, says] of cases) {
      const r = await corral(args, '', extraEnv);
      expect(r.stderr, args.join(' ')).toMatch(says);
      expect(r.stderr).not.toMatch(/internal error|exists, and Corral never overwrites/);
      expect(r.code, args.join(' ')).toBe(code);
    }
  });

  // Root searches and writes any folder: the user who meets these is anyone else, so the CLI runs as nobody when the tests run as root.
  const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  /** The CLI as that user, in `place` (which it can write), with its store and home there. */
  const runIn = (place: string, args: string[], extraEnv: Record<string, string> = {}) =>
    new Promise<Ran>((done) =>
      execFile(
        process.execPath,
        [CLI, ...args],
        { cwd: place, ...asUser, env: { ...env(), HOME: place, CORRAL_STORE: join(place, 'snapshots.db'), ...extraEnv } },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
      ),
    );

  it('a folder above that cannot be searched: "cannot reach", naming it, never "cannot create" or "does not exist"', async () => {
    const place = await mkdtemp(join(tmpdir(), 'corral-unsearchable-'));
    try {
      await mkdir(join(place, 'locked/sub'), { recursive: true });
      await chmod(place, 0o777);
      await chmod(join(place, 'locked'), 0o000);
      const unreachable = `cannot reach the folder ${place}/locked/sub: the folder ${place}/locked cannot be searched (permission denied, EACCES)`;
      const policy = await runIn(place, ['policy', 'unlisted', 'deny'], { CORRAL_POLICY: join(place, 'locked/sub/policy.yaml') });
      expect(policy.stderr).toContain(unreachable);
      expect(policy.code).toBe(1);
      const list = await runIn(place, ['snapshots', 'list'], { CORRAL_STORE: join(place, 'locked/sub/snapshots.db') });
      expect(list.stderr).toContain(unreachable);
      expect(list.stdout).not.toMatch(/does not exist/);
      expect(list.code).toBe(1);
    } finally {
      await chmod(join(place, 'locked'), 0o755);
      await rm(place, { recursive: true, force: true });
    }
  });

  it('init where the system refuses to write: exit 1, as every refused write, not 2 (the command line was right)', async () => {
    const place = await mkdtemp(join(tmpdir(), 'corral-init-refused-'));
    try {
      await mkdir(join(place, 'locked'));
      await mkdir(join(place, 'read-only'));
      await chmod(place, 0o777);
      await chmod(join(place, 'locked'), 0o000);
      await chmod(join(place, 'read-only'), 0o555);
      const locked = await runIn(place, ['init', 'tt', '--lang', 'c', '--dir', join(place, 'locked/tt')]);
      expect(locked.stderr).toBe(`corral: cannot use ${place}/locked/tt: permission denied (EACCES) (E_INPUT_VALIDATION)\n`);
      expect(locked.code).toBe(1);
      const readOnly = await runIn(place, ['init', 'tt', '--lang', 'c', '--dir', join(place, 'read-only')]);
      expect(readOnly.stderr).toBe(
        `corral: cannot create the tool in ${place}/read-only: cannot write ${place}/read-only/tool-spec.json: permission denied (EACCES) (E_INPUT_VALIDATION)\n`,
      );
      expect(readOnly.code).toBe(1);
    } finally {
      await chmod(join(place, 'locked'), 0o755);
      await rm(place, { recursive: true, force: true });
    }
  });

  it('an export to link/../made/x.jsonl is made where the kernel opens it, beside the link target, as mkdir -p would', async () => {
    await corral(['run', 'diff-summary', '--input', '{"diff": ""}']);
    const place = join(home, 'dotdot');
    await mkdir(join(place, 'target/sub'), { recursive: true });
    await symlink(join(place, 'target/sub'), join(place, 'link'));
    // Not path.join, which would drop `link/..` as resolve() did.
    const r = await corral(['snapshots', 'export', '--output', `${place}/link/../made/x.jsonl`]);
    expect(r.code, r.stderr).toBe(0);
    expect((await readFile(join(place, 'target/made/x.jsonl'), 'utf8')).length).toBeGreaterThan(0);
    // No stray folder where `..` would have led without following the link.
    expect((await readdir(place)).sort()).toEqual(['link', 'target']);
  });

  // path.resolve folded `link/..` away by text: the archive and the policy went beside the link, not its target.
  it('a prune --archive and a --policy through link/.. land where the kernel opens them, beside the link target', async () => {
    const place = join(home, 'dotdot-more');
    await mkdir(join(place, 'target/sub'), { recursive: true });
    await symlink(join(place, 'target/sub'), join(place, 'link'));
    const store = join(place, 'target/snapshots.db');
    expect((await corral(['run', 'diff-summary', '--input', '{"diff": ""}', '--store', store])).code).toBe(0);
    const pruned = await corral(['snapshots', 'prune', '--keep', '0', '--store', store, '--archive', `${place}/link/../made/a.jsonl`]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain(`Archive: ${place}/link/../made/a.jsonl`);
    expect((await readFile(join(place, 'target/made/a.jsonl'), 'utf8')).length).toBeGreaterThan(0);
    const policy = `${place}/link/../policy.yaml`;
    const granted = await corral(['policy', 'unlisted', 'deny', '--policy', policy]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(await readFile(join(place, 'target/policy.yaml'), 'utf8')).toMatch(/^unlisted_tools: deny$/m);
    expect((await corral(['policy', 'path', '--policy', policy])).stdout.trim()).toBe(policy);
    expect((await readdir(place)).sort()).toEqual(['link', 'target']);
  });

  // A policy file that is a link to a file not made yet (a dotfiles repository, say) was replaced by a regular file.
  it('a policy file that is a link leading nowhere yet is made where it points, and stays a link', async () => {
    const place = join(home, 'policy-link');
    await mkdir(join(place, 'dotfiles'), { recursive: true });
    await symlink(join(place, 'dotfiles/policy.yaml'), join(place, 'policy.yaml'));
    const r = await corral(['policy', 'unlisted', 'deny'], '', { CORRAL_POLICY: join(place, 'policy.yaml') });
    expect(r.code, r.stderr).toBe(0);
    expect((await lstat(join(place, 'policy.yaml'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(place, 'dotfiles/policy.yaml'), 'utf8')).toMatch(/^unlisted_tools: deny$/m);
  });

  it('init --dir link/../x makes the tool beside the link target, and build and test look for it there', async () => {
    const place = join(home, 'dotdot-init');
    await mkdir(join(place, 'target/sub'), { recursive: true });
    await symlink(join(place, 'target/sub'), join(place, 'link'));
    const made = await corral(['init', 'tt', '--lang', 'c', '--dir', `${place}/link/../tt`]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toBe(`Next: corral build ${place}/link/../tt && corral test ${place}/link/../tt\n`);
    expect((await readdir(join(place, 'target/tt'))).sort()).toEqual(['README.md', 'examples', 'src', 'tool-spec.json']);
    // Not built yet: test says so about the folder init made (by name, link/.. would be a folder that does not exist).
    const tested = await corral(['test', `${place}/link/../tt`]);
    expect(tested.stderr).toContain(`${place}/target/tt/tt.wasm does not exist`);
    expect((await readdir(place)).sort()).toEqual(['link', 'target']);
  });
});

describe('corral run with a store that does not answer', () => {
  // A PostgreSQL "server" that accepts connections and never replies: opening the store waits out its connect timeouts (~30 s).
  it('reports a bad --input or --input-file at once, without waiting for the store to open', async () => {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const store = `postgres://corral@127.0.0.1:${(server.address() as AddressInfo).port}/corral`;
    const badFile = join(home, 'bad-input.json');
    await writeFile(badFile, '{not json');
    try {
      for (const flags of [
        ['--input', '{not json'],
        ['--input-file', badFile],
      ]) {
        const started = Date.now();
        const r = await corral(['run', 'diff-summary', '--store', store, ...flags]);
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr).toMatch(/^corral: The input from [^\n]* is not valid JSON: [^\n]*\(E_INPUT_VALIDATION\)\n$/);
        // Before, the process first waited for the store (~30 s), then reported the input.
        expect(Date.now() - started, flags[0]).toBeLessThan(8_000);
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 90_000);
});

// Node starts no worker thread in a folder that was removed (uv_cwd): `corral run` there said "The sandbox
// worker stopped unexpectedly", and a relative path anywhere else said "internal error, please report it".
describe('corral run from a folder that was deleted', () => {
  /** `node ARGS` started from inside a folder removed just before. */
  const fromDeletedFolder = (args: string[]): Promise<Ran> =>
    new Promise((resolve) => {
      const place = join(home, `gone-${Math.random().toString(36).slice(2)}`);
      const script = `mkdir "$1" && cd "$1" && rmdir "$1" && shift && exec "$@"`;
      execFile('sh', ['-c', script, 'sh', place, process.execPath, ...args], { env: env() }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
      );
    });

  it('the CLI says the folder is gone, as a usage error', async () => {
    const r = await fromDeletedFolder([CLI, 'run', 'diff-summary', '--input', '{"diff": ""}']);
    expect(r.stderr).toMatch(/^corral: the current folder no longer exists \(it was deleted or moved\): cd to a folder that exists/);
    expect(r.stderr).not.toMatch(/internal error|stopped unexpectedly/);
    expect(r.code).toBe(2);
  });

  it("the library's call says why its worker could not start", async () => {
    const script = join(home, 'cwd-gone.mjs');
    await writeFile(
      script,
      `import { Corral } from ${JSON.stringify(join(ROOT, 'packages/node/dist/index.js'))};
const corral = await Corral.create({ store: false, size: 1 });
const r = await corral.invoke('diff-summary', { diff: '' });
await corral.close();
process.stdout.write(JSON.stringify(r.error));`,
    );
    const r = await fromDeletedFolder([script]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      code: 'E_UNEXPECTED_EXIT',
      message: expect.stringMatching(/current folder no longer exists/),
      details: { reason: 'worker_crashed', cause: 'cwd_missing' },
    });
  });
});
