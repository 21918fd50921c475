/**
 * What @corral/mcp leaves to the host: turning a client's file:// URI into a
 * folder, containment between folders, and the policy gate's place in the
 * server. Node's version resolves symlinks and `..` with realpath, so a root
 * and a requested folder are compared as the folders a tool would really see.
 */
import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FolderSource, IsInside, McpGate, McpServerOptions, ResolveFolder } from '@corral/mcp';
import type { HostMountSource } from './mounts.js';
import { approveCommandFor, approvalsReachable } from './server-gate.js';

/**
 * file:// URI → canonical path of an existing folder. fileURLToPath refuses
 * other schemes, hosts other than localhost and encoded `/`; realpath refuses
 * what does not exist and resolves every symlink on the way.
 */
export const resolveFolderUri: ResolveFolder = async (uri) => {
  if (!uri.startsWith('file://')) throw new Error('not a file:// URI');
  let path: string;
  try {
    path = fileURLToPath(uri);
  } catch (err) {
    throw new Error(`not a local file URI (${(err as Error).message})`);
  }
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    throw new Error((err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such folder' : `cannot be resolved (${(err as Error).message})`);
  }
  if (!(await stat(real)).isDirectory()) throw new Error('not a folder');
  return real;
};

/** `path` is `root` or below it, with this platform's separator. */
export const isInsideFolder: IsInside = (root, path) => {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
};

/** A resolved folder as what Node mounts: a live host folder. */
export const hostFolderSource: FolderSource = (path): HostMountSource => ({ kind: 'host', path });

/**
 * The MCP server options that put `gate` in front of every call: the gate,
 * whether `corral approve` can reach its approvals (not when its store is in
 * memory), and the command that approves one from a terminal.
 */
export function mcpGateOptions(gate: McpGate): Pick<McpServerOptions, 'gate' | 'approvalsOutOfBand' | 'approveCommand'> {
  return { gate, approvalsOutOfBand: approvalsReachable(gate), approveCommand: approveCommandFor(gate) };
}
