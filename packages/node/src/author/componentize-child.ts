/**
 * `corral build` for JavaScript, the componentize-js step in a process of
 * its own (see js.ts). Argument: a JSON job { componentize, jco, sourcePath,
 * witPath, out }.
 */
import { writeFile } from 'node:fs/promises';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

interface Job {
  componentize: string;
  jco: string;
  sourcePath: string;
  witPath: string;
  out: string;
}

const job = JSON.parse(process.argv[2] ?? '{}') as Job;

// componentize-js 0.19.3 imports @bytecodealliance/preview2-shim, which only
// its jco depends on: when Node cannot find it from componentize-js, look
// from jco's folder instead.
const shimBase = pathToFileURL(`${job.jco}/package.json`).href;
const hook = `export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (specifier === '@bytecodealliance/preview2-shim' || specifier.startsWith('@bytecodealliance/preview2-shim/'))
      return next(specifier, { ...context, parentURL: ${JSON.stringify(shimBase)} });
    throw err;
  }
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const { componentize } = (await import(pathToFileURL(job.componentize).href)) as {
  componentize(options: Record<string, unknown>): Promise<{ component: Uint8Array }>;
};
const { component } = await componentize({
  sourcePath: job.sourcePath,
  witPath: job.witPath,
  worldName: 'tool',
  // No fetch and no HTTP handler: a component importing wasi:http is refused by Corral.
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile(job.out, component);
