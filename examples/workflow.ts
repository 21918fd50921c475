import { readFile } from 'node:fs/promises';
import { Corral } from '@corral/node';
import { Workflows } from '@corral/workflow';

const corral = await Corral.create();
const workflows = new Workflows(corral, { by: 'review-bot' });
const wf = workflows.load(await readFile('examples/workflows/patch-review.yaml', 'utf8'));
const diff = await readFile('change.diff', 'utf8');
const result = await workflows.run(wf, { diff }, { onEvent: (e) => console.log(e.step, e.kind) });
console.log(result.runId, result.status, result.error?.message ?? '');
if (result.status === 'waiting') {
  // Later, from any process sharing the store: decide, and the run goes on.
  const { result: after } = await workflows.approve(result.runId, 'sign-off', { by: 'alice' });
  console.log(after?.status, after?.outputs);
}
await corral.close();
