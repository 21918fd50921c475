/**
 * `corral`: the command line. Each command is its own module, loaded only
 * when it runs, with what it needs (the pipeline, SQLite, ajv): `--help`
 * loads none of them and `corral exec` none of the tool machinery.
 */
import { CorralError } from '@corral/core/errors';
import {
  E_USAGE,
  EXIT_OK,
  EXIT_TOOL_FAILED,
  EXIT_USAGE,
  UsageError,
  cliFor,
  closest,
  registrationHint,
  type CliIo,
  type Command,
  type ErrorJson,
} from './shared.js';
import { packagePath } from '../package-files.js';

export { EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, UsageError } from './shared.js';

/** Every command, loaded when it runs (`corral completion` reads their names and --help from here). */
export const COMMANDS: Record<string, () => Promise<Command>> = {
  tools: () => import('./tools.js'),
  run: () => import('./run.js'),
  exec: () => import('./exec.js'),
  validate: () => import('./validate.js'),
  cache: () => import('./cache.js'),
  snapshots: () => import('./snapshots.js'),
  replay: () => import('./replay.js'),
  mcp: () => import('./mcp.js'),
  serve: () => import('./serve.js'),
  worker: () => import('./worker.js'),
  fleet: () => import('./fleet.js'),
  policy: () => import('./policy.js'),
  approve: () => import('./approve.js'),
  approvals: () => import('./approvals.js'),
  audit: () => import('./audit.js'),
  init: () => import('./init.js'),
  build: () => import('./build.js'),
  test: () => import('./test-tool.js'),
  workflow: () => import('./workflow.js'),
  completion: () => import('./completion.js'),
};

export const HELP = `corral — run sandboxed WASI tools for AI agents

Usage:
  corral tools [--json] [--tools DIR]          list the tools Corral can run
  corral tools stats [--json]                  how reliable each tool version has been
  corral run NAME[@RANGE] [options]            run a tool on a JSON input
  corral run --wasm FILE --spec FILE [options] run a tool file that is not registered
  corral exec FILE.wasm [options] [-- ARGS]    run any WASI program in the sandbox
  corral validate SPEC [--json]                check a tool-spec.json and its wasm
  corral cache clear                           drop transpiled components
  corral snapshots list|show|export|prune      read back or trim recorded calls
  corral replay ID                             re-run a recorded call and compare
  corral mcp [--tools DIR]...                  serve the tools to an MCP client over stdio
  corral serve [--port N] [--host H] [options] serve the tools over HTTP (POST /execute, /openapi.json)
  corral worker --nats URL [options]           run calls for a fleet from NATS JetStream
  corral fleet status --nats URL [--json]      the fleet's workers and work queue
  corral policy grant|deny|revoke|unlisted|show|path
                                               what tools called through MCP or HTTP may touch
  corral approvals [--all] [--json]            calls waiting for approval
  corral approve ID [--reject] [--scope S]     decide one (--revoke ID withdraws one)
  corral audit [--json] [--since] [--tool]     grants, revocations, denials and approvals
  corral init NAME --lang c|rust|js            start a new tool in ./NAME
  corral build [DIR]                           compile a tool folder into its component
  corral test [DIR] [--update]                 run a tool's examples and compare the outputs
  corral workflow run|resume|status|approve|list|validate
                                               run declarative, durable workflows of tools
  corral completion bash|zsh|fish              print a shell completion script

Run 'corral COMMAND --help' for a command's options; 'corral --version' prints the version.`;

export async function main(
  argv: string[],
  io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
): Promise<number> {
  const [command, ...rest] = argv;
  const cli = cliFor(io);
  // Asked for JSON: every failure is then also an envelope on stdout (ERRORS.md), whatever failed.
  const json = wantsJson(rest);
  let loaded: Command | undefined;
  const known = command !== undefined && Object.hasOwn(COMMANDS, command);
  try {
    switch (command) {
      case '-V':
      case '--version': {
        // Read when asked: --help and every command stay free of it.
        const { readFile } = await import('node:fs/promises');
        const pkg = JSON.parse(await readFile(packagePath('package.json'), 'utf8')) as { version: string };
        cli.print(`corral ${pkg.version} (node ${process.versions.node})`);
        return EXIT_OK;
      }
      case undefined:
      case '-h':
      case '--help':
      case 'help': {
        const topic = rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0]) ? COMMANDS[rest[0]] : undefined;
        if (rest[0] !== undefined && !topic)
          throw new UsageError(`no command '${rest[0]}'. Commands: ${Object.keys(COMMANDS).join(', ')}.`);
        cli.print(topic ? (await topic()).help : HELP);
        return command === undefined ? EXIT_USAGE : EXIT_OK;
      }
      default: {
        if (!known) {
          const near = closest(command, [...Object.keys(COMMANDS), '--version', '--help']);
          throw new UsageError(
            `unknown command '${command}'.${near ? ` Did you mean ${near}?` : ''} Commands: ${Object.keys(COMMANDS).join(', ')}.`,
          );
        }
        // Node starts no worker thread there, and every relative path fails: say so, not "internal error".
        if (!currentFolderExists())
          throw new UsageError(
            'the current folder no longer exists (it was deleted or moved): cd to a folder that exists and run corral again.',
          );
        loaded = await COMMANDS[command]!();
        return await loaded.command(rest, cli);
      }
    }
  } catch (err) {
    let error: ErrorJson;
    if (err instanceof UsageError) {
      const help = `corral ${known ? `${command} ` : ''}--help`;
      cli.fail(err.message);
      io.stderr.write(`Run '${help}' for usage.\n`);
      error = { code: E_USAGE, message: err.message, details: { ...err.details, help }, retryable: false };
    } else if (err instanceof CorralError) {
      cli.fail(`${err.message} (${err.code})${registrationHint(err)}`);
      error = err.toJSON();
    } else {
      // Every failure a user can cause is a UsageError or a CorralError by now.
      const message = `${err instanceof Error ? err.message : String(err)} (an internal error; please report it)`;
      cli.fail(message);
      error = { code: 'E_UNEXPECTED_EXIT', message, details: { reason: 'internal' }, retryable: false };
    }
    if (json) cli.print(JSON.stringify(loaded?.failure?.(error, rest) ?? { ok: false, error }, null, 2));
    return err instanceof UsageError ? EXIT_USAGE : EXIT_TOOL_FAILED;
  }
}

function currentFolderExists(): boolean {
  try {
    process.cwd();
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** `--json` among a command's own arguments (not a program's, after `--`). */
function wantsJson(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}
