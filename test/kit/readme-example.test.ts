// The example in the C kit's README is a real tool: it is built from the
// README's text and run, so the documentation cannot drift from the kit.
import { afterAll, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Corral } from '@corral/node';
import { buildC } from '../../packages/node/src/author/c.js';

const work = mkdtempSync(join(tmpdir(), 'corral-kit-readme-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

it('builds the README example, which answers as the README says', async () => {
  const readme = readFileSync(new URL('../../packages/node/kit/c/README.md', import.meta.url), 'utf8');
  const source = /## Example[\s\S]*?```c\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(source).toContain('int main(void)');
  const dir = join(work, 'greet');
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'main.c'), source ?? '');
  const spec = { name: 'greet', version: '1.0.0', component: 'greet.wasm', input_schema: { type: 'object' } };
  writeFileSync(join(dir, 'tool-spec.json'), JSON.stringify(spec));
  await buildC({ dir, out: join(dir, 'greet.wasm') });

  const corral = await Corral.create({ bundled: false, toolDirs: [dir], store: false, cache: false });
  try {
    const r = await corral.invoke('greet', { names: ['Ada', 'Grace'], shout: true });
    expect(r.output).toEqual({ greetings: ['HELLO, ADA!', 'HELLO, GRACE!'], count: 2 });
    const quiet = await corral.invoke('greet', { names: ['Ada'] });
    expect(quiet.output).toEqual({ greetings: ['Hello, Ada!'], count: 1 });
    const bad = await corral.invoke('greet', { names: ['Ada', 3] });
    expect(bad.error).toMatchObject({ details: { tool_error: { message: 'names[1] must be a string, got a number' } } });
    const unknown = await corral.invoke('greet', { names: [], loud: true });
    expect(unknown.error).toMatchObject({
      details: { tool_error: { message: 'unknown input field "loud" (expected one of "names", "shout")' } },
    });
  } finally {
    await corral.close();
  }
});
