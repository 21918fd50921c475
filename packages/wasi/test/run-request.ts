import type { RunRequest } from '@corral/wasi';

/** A small in-process run's request (tool `t`, a JSON stdin, 32 MiB of memory), with `over` on top. */
export const runRequest = (over: Partial<RunRequest> = {}): RunRequest => ({
  toolName: 't',
  stdin: new TextEncoder().encode('{"a":[1,2,3]}'),
  args: ['t'],
  env: { TZ: 'UTC' },
  mounts: [],
  outputLimitBytes: 1 << 20,
  memoryLimitBytes: 32 * 2 ** 20,
  diskLimitBytes: 1 << 20,
  ...over,
});
