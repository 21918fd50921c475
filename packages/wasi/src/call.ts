/**
 * What every run starts with, whichever WASI host runs it: the call's
 * stdio (captured, or streamed for `corral exec`) and its filesystem, and
 * the guest's view of them (args, environment, stdio, preopens).
 */
import { callFilesystem, type CallFilesystem } from './vfs.js';
import { callStdio } from './stdio-channel.js';
import type { GuestIo, RunRequest, RunnerOptions } from './request.js';

export function openCall(request: RunRequest, options: RunnerOptions) {
  const stdio = callStdio(request);
  const fs: CallFilesystem = callFilesystem(request.mounts, request.diskLimitBytes, options.mountOpeners, request.scratchTmp ?? true);
  const guest: GuestIo = {
    args: request.args,
    env: request.env,
    stdin: stdio.stdin,
    stdout: stdio.stdout,
    stderr: stdio.stderr,
    ...(stdio.terminals ? { terminals: stdio.terminals } : {}),
    preopens: fs.preopens,
  };
  return {
    guest,
    /** What the result reports (empty when streamed). */
    captured: stdio.captured,
    quota: fs.quota,
    /** Close the call's files and mounts, and tell a streaming host the run is over. */
    close(): void {
      try {
        fs.close();
      } finally {
        stdio.end();
      }
    },
  };
}

/** One call's stdio and filesystem, open until `close`. */
export type OpenedCall = ReturnType<typeof openCall>;
