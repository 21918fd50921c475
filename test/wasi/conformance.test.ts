/**
 * Corral's WASI conformance: every program in test/wasi/programs, run by
 * node:wasi (the reference) and by Corral's preview1 host and component
 * host, each over a host folder and over an in-memory tree (matrix.mjs).
 * Each Corral run must print what the reference prints, and exit as the
 * specification says; where node:wasi itself breaks the specification the
 * run is held to the specification (expected/) instead, and the reference's
 * own test is marked as failing with the reason.
 *
 * `it.fails` marks what Corral gets wrong today, with the cause: when a fix
 * lands the mark fails, and comes off. CONFORMANCE.md has the same matrix as
 * a table (node test/wasi/table.mjs).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CASES, expectedExit, expectedStdout, run } from './matrix.mjs';

type Host = 'p1/host' | 'p1/memory' | 'comp/host' | 'comp/memory';
const CORRAL_HOSTS: Host[] = ['p1/host', 'p1/memory', 'comp/host', 'comp/memory'];

/** Where node:wasi (Node 20, uvwasi) breaks the specification. */
const NODE_WRONG: Record<string, string> = {
  readdir_dots: 'fd_readdir lists neither "." nor ".."; its d_ino is not the ino filestat reports',
  trailing_slash: 'opens "file.txt/." (a file is not a directory: ENOTDIR)',
  open_flags: 'fd_fdstat_get reports APPEND on every file and never SYNC or DSYNC',
  nanotimes: 'stores whole seconds only, and path_filestat_set_times with MTIM_NOW never returns (the run is killed)',
  symlinks:
    'follows the last link without lookupflags::symlink_follow (O_NOFOLLOW), and path_readlink fails instead of truncating into a short buffer',
  poll: 'poll_oneoff on an absolute monotonic clock never returns (the run is killed)',
  sockets: 'sock_shutdown is ENOTSUP whatever the descriptor',
  nul_path: 'takes a lone NUL byte for the empty path, and stats the preopen',
  dirs_seek: 'fd_readdir lists no "." and "..": 20 entries instead of 22',
};

/** Where Corral breaks the specification today: the cause, per host. */
const CORRAL_WRONG: Record<string, Partial<Record<Host, string>>> = {
  sockets: {
    // The preview1 adapter (jco's wasi_snapshot_preview1.command.wasm) has
    // sock_recv/sock_send/sock_shutdown as `unreachable`: the guest traps
    // before Corral's host sees a call (jco run traps the same way).
    'comp/host': 'the preview1 adapter traps in sock_*',
    'comp/memory': 'the preview1 adapter traps in sock_*',
  },
};

interface Outcome {
  exit: number | string;
  stdout: string;
  stderr: string;
  note?: string;
}

describe.each(CASES)('$id: $title', (testCase) => {
  let reference: Outcome;
  const spec = () => expectedStdout(testCase);
  beforeAll(async () => {
    reference = (await run(testCase, 'node:wasi')) as Outcome;
  });

  const nodeWrong = NODE_WRONG[testCase.id];
  (nodeWrong ? it.fails : it)(`node:wasi (reference)${nodeWrong ? ` breaks the spec: ${nodeWrong}` : ''}`, () => {
    expect({ exit: reference.exit, stdout: reference.stdout }).toEqual({
      exit: expectedExit(testCase, 'node:wasi'),
      stdout: spec(),
    });
  });

  for (const host of CORRAL_HOSTS) {
    const wrong = CORRAL_WRONG[testCase.id]?.[host];
    (wrong ? it.fails : it)(`${host}${wrong ? ` (known: ${wrong})` : ''}`, async () => {
      const got = (await run(testCase, host)) as Outcome;
      // Compared with the reference's output where the reference is right,
      // with the specification's where it is not.
      const want = nodeWrong ? spec() : reference.stdout;
      expect({ exit: got.exit, stdout: got.stdout }, `stderr:\n${got.stderr}\n${got.note ?? ''}`).toEqual({
        exit: expectedExit(testCase, host),
        stdout: want,
      });
    });
  }
});
