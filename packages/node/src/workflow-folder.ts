/**
 * Workflow folders for servers (`corral serve --workflows DIR`, `corral mcp
 * --workflows DIR`): each *.yaml, *.yml or *.json file directly in DIR is one
 * workflow, loaded and validated against the registry when the server
 * starts. A file that cannot be read or is not a valid workflow is reported
 * (as a bad tool folder is: a CorralError, which the server logs) and
 * skipped; so is a second workflow of a name already taken.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { CorralError, ErrorCodes, type Registry } from '@corral/core';
import type { Workflow } from '@corral/workflow';

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** Names the HTTP API's paths take for themselves (/workflows/runs/ID). */
const RESERVED = new Set(['runs']);
/** Files read from one folder at most. */
const MAX_FILES = 1000;

export interface LoadedWorkflow {
  workflow: Workflow;
  /** The file it came from (absolute). */
  file: string;
}

/** Load every workflow file in `dirs`, in order (files by name); problems are returned, not thrown. */
export async function loadWorkflowFolders(
  registry: Registry,
  dirs: readonly string[],
): Promise<{ loaded: LoadedWorkflow[]; errors: CorralError[] }> {
  // Loaded here, not with @corral/node: a host that runs no workflows does not pay for the engine and its YAML parser.
  const { MAX_WORKFLOW_BYTES, loadWorkflow } = await import('@corral/workflow');
  const loaded: LoadedWorkflow[] = [];
  const errors: CorralError[] = [];
  const byName = new Map<string, string>();
  for (const dir of dirs) {
    const folder = resolve(dir);
    let names: string[];
    try {
      names = (await readdir(folder)).filter((n) => EXTENSIONS.has(extname(n).toLowerCase())).sort();
    } catch (err) {
      errors.push(
        new CorralError(ErrorCodes.INPUT_VALIDATION, `Workflow folder ${folder} cannot be read: ${(err as Error).message}`, {
          path: folder,
        }),
      );
      continue;
    }
    if (names.length > MAX_FILES) {
      errors.push(
        new CorralError(
          ErrorCodes.INPUT_VALIDATION,
          `Workflow folder ${folder} holds ${names.length} files; only the first ${MAX_FILES} are read`,
          {
            path: folder,
          },
        ),
      );
      names = names.slice(0, MAX_FILES);
    }
    for (const name of names) {
      const file = join(folder, name);
      try {
        const info = await stat(file);
        if (!info.isFile()) continue;
        if (info.size > MAX_WORKFLOW_BYTES)
          throw new CorralError(ErrorCodes.INPUT_VALIDATION, `Invalid workflow ${file}: larger than ${MAX_WORKFLOW_BYTES} bytes`, {
            path: file,
          });
        const text = await readFile(file, 'utf8');
        const workflow = loadWorkflow(text, { source: file, knownTool: (ref) => registry.has(ref) });
        if (RESERVED.has(workflow.name))
          throw new CorralError(
            ErrorCodes.INPUT_VALIDATION,
            `Invalid workflow ${file}: the name '${workflow.name}' is taken by the HTTP API's paths (/workflows/runs/ID); rename it`,
            { path: file },
          );
        const earlier = byName.get(workflow.name);
        if (earlier !== undefined)
          throw new CorralError(
            ErrorCodes.INPUT_VALIDATION,
            `Workflow ${file} is named '${workflow.name}', as ${earlier} is already: names must be unique; this file is skipped`,
            { path: file },
          );
        byName.set(workflow.name, file);
        loaded.push({ workflow, file });
      } catch (err) {
        errors.push(
          CorralError.is(err)
            ? err
            : new CorralError(ErrorCodes.INPUT_VALIDATION, `Workflow ${file} cannot be read: ${(err as Error).message}`, { path: file }),
        );
      }
    }
  }
  return { loaded, errors };
}
