#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

// A reader that went away (`corral … | head`) ends the command as SIGPIPE
// would, with status 141 and no stack trace; `corral exec` stops its program
// first (its own listeners), then ends the same way.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(141);
  });
}

process.exitCode = await main(process.argv.slice(2));
