// `corral build` finds the C kit next to its own code (kit/c beside dist/),
// so an installed @corral/node must carry it.
import { expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

it('@corral/node publishes the C kit beside the compiled build code', () => {
  const cwd = fileURLToPath(new URL('../../packages/node/', import.meta.url));
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd, encoding: 'utf8' });
  const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
  expect(files).toEqual(expect.arrayContaining(['kit/c/corral.h', 'kit/c/corral.c', 'kit/c/README.md', 'dist/author/c.js']));
});
