// Install step of @corral/node: build native/file-times.c, which sets host
// file times to the nanosecond (see that file). It never fails the install:
// without the addon, host-fs.ts falls back to Node's utimes, exact to about
// a microsecond. Works offline: Node's own headers are used when present.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const fail = (why) => {
  console.warn(`@corral/node: exact file times not built (${why}); host folders will use Node's utimes (about 1 µs).`);
  process.exit(0);
};

if (process.platform === 'win32') fail('not available on Windows');
// npm tells lifecycle scripts where its bundled node-gyp is; `npm_execpath` is npm's own CLI.
const npmCli = process.env.npm_execpath;
const nodeGyp = [process.env.npm_config_node_gyp, npmCli && join(dirname(npmCli), '../node_modules/node-gyp/bin/node-gyp.js')].find(
  (p) => p && existsSync(p),
);
if (!nodeGyp) fail('node-gyp not found');
// node-gyp downloads headers unless told where they are: prefer a configured nodedir, else this Node's prefix.
const prefix = resolve(dirname(process.execPath), '..');
const nodedir = process.env.npm_config_nodedir || (existsSync(join(prefix, 'include/node/node_api.h')) ? prefix : undefined);
const args = [nodeGyp, 'rebuild', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
const run = spawnSync(process.execPath, args, { cwd: packageDir, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
if (run.status !== 0) fail(`node-gyp: ${(run.stderr || run.error?.message || '').trim().split('\n').slice(-3).join(' ')}`);
