/**
 * What `corral init`, `corral build` and `corral test` need from a source
 * language: the files of a new tool, and how to turn its sources into the
 * component its tool-spec.json names. One module per language (c.ts,
 * rust.ts, js.ts); the commands know only this interface.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { makeFolders } from '../folders.js';

/** The languages a tool can be written in. `js` covers TypeScript too. */
export type LanguageName = 'c' | 'rust' | 'js';

/** A new tool's files, by path relative to its folder. */
export type Scaffold = Record<string, string>;

export interface BuildContext {
  /** The tool folder (absolute): tool-spec.json and the sources. */
  dir: string;
  /** The tool's name, as tool-spec.json gives it. */
  name: string;
  /** The component file to write (absolute): the spec's `component`. */
  out: string;
  /** A progress line for the user (stderr); one per step that takes time. */
  log: (line: string) => void;
}

/**
 * A toolchain the build needs is not on this machine: the message names
 * what to install (`corral build` prints it and exits 1).
 */
export class MissingToolchain extends Error {}

export interface Language {
  name: LanguageName;
  /** The files of a new tool NAME: spec, source, README, an example input and its expected output. */
  scaffold(name: string): Scaffold;
  /** Whether DIR holds this language's sources (used when `corral build` is not told the language). */
  detect(dir: string): Promise<boolean>;
  /** Build the component; throws MissingToolchain when a compiler is absent, Error with the compiler's output otherwise. */
  build(ctx: BuildContext): Promise<void>;
}

/**
 * Write a built file to `out`, which must lie inside the tool folder `dir`.
 * A hostile tool folder may hold `tool.wasm -> ~/.bashrc`, or a folder on
 * the way to it that is a symlink out: writing through either overwrote a
 * file outside the folder with the build's bytes (which the tool's source
 * chooses in part). So the folders on the way are made and opened one by
 * one from `dir`, none of them a link (on Linux, through /proc/self/fd, so a
 * build step swapping one for a link meanwhile changes nothing), the bytes go
 * to a new file (O_EXCL, never through a link) in the last one, and a rename
 * puts that file in `out`'s place, replacing a symlink there instead of
 * following it.
 */
export async function writeBuilt(dir: string, out: string, bytes: Uint8Array): Promise<void> {
  const rel = relative(dir, dirname(out));
  if (leadsOut(rel)) throw new Error(`${out} is not inside the tool folder ${dir}; refusing to write there`);
  const root = await open(await realpath(dir), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    // Linux: each folder is made and opened through the one above it, held open, so a build step
    // that swaps a folder for a link meanwhile cannot send a mkdir or the file anywhere else.
    if (await exists(`/proc/self/fd/${root.fd}`)) return await writeBuiltAt(root, rel, dir, out, bytes);
  } finally {
    await root.close();
  }
  // Elsewhere: checked before and after; a swap between the two can make empty folders outside.
  await writeBuiltChecked(dir, out, bytes);
}

/** writeBuilt through /proc/self/fd: no path is walked twice, and no link on the way is followed. */
async function writeBuiltAt(root: FileHandle, rel: string, dir: string, out: string, bytes: Uint8Array): Promise<void> {
  const opened: FileHandle[] = [];
  let folder = root;
  try {
    let walked = dir;
    for (const name of rel.split(sep).filter((part) => part !== '' && part !== '.')) {
      walked = join(walked, name);
      const at = `/proc/self/fd/${folder.fd}/${name}`;
      try {
        await mkdir(at).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
        folder = await open(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const link = await lstat(at).then(
          (st) => st.isSymbolicLink(),
          () => false,
        );
        const what = link
          ? 'a symbolic link, which the build does not follow'
          : code === 'ENOTDIR' || code === 'EEXIST'
            ? 'not a folder'
            : `not a folder it can make or open (${code}; did something change it meanwhile?)`;
        throw new Error(`${out} is not inside the tool folder ${dir}: ${walked} is ${what}; refusing to write there`);
      }
      opened.push(folder);
    }
    await placeFile(`/proc/self/fd/${folder.fd}`, basename(out), bytes);
  } finally {
    for (const handle of opened) await handle.close();
  }
}

async function writeBuiltChecked(dir: string, out: string, bytes: Uint8Array): Promise<void> {
  // A component path in a folder not made yet ("out/x.wasm") gets it, once the part that exists is found inside.
  let existing = dirname(out);
  while (!(await exists(existing)) && dirname(existing) !== existing) existing = dirname(existing);
  const root = await realpath(dir);
  const within = relative(root, await realpath(existing));
  if (leadsOut(within)) {
    throw new Error(`${out} is not inside the tool folder ${dir}: ${existing} leads out of it; refusing to write there`);
  }
  await makeFolders(dirname(out));
  const folder = await realpath(dirname(out));
  const inside = relative(root, folder);
  if (leadsOut(inside)) {
    throw new Error(`${out} is not inside the tool folder ${dir}: ${dirname(out)} leads to ${folder}; refusing to write there`);
  }
  await placeFile(folder, basename(out), bytes);
}

/** `bytes` as `folder/name`: a new file (O_EXCL, never through a link) renamed into place, so a link there is replaced, not followed. */
async function placeFile(folder: string, name: string, bytes: Uint8Array): Promise<void> {
  // Not named after `name`: a name near NAME_MAX (255 bytes) plus a suffix failed with ENAMETOOLONG.
  const tmp = `${folder}/.corral-build-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, bytes, { mode: 0o644, flag: 'wx' });
  try {
    await rename(tmp, `${folder}/${name}`);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** A path relative to the tool folder that climbs out of it (a folder named `..x` stays inside). */
function leadsOut(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
