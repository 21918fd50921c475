/** `corral init NAME --lang c|rust|js`: a new tool folder that builds and passes `corral test` at once. */
import { readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, relative } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { EXIT_OK, UsageError, fileProblem, parse, type Cli } from './shared.js';
import { FolderError, absoluteAsGiven, makeFolders } from '../folders.js';

export const help = `corral init NAME --lang c|rust|js [--dir PATH]

Create a new tool: tool-spec.json, the source, a README and an example
input with its expected output, in ./NAME (or PATH).
  --lang c|rust|js   the language (js covers TypeScript: src/index.ts)
  --dir PATH         the folder to create (default: ./NAME); refused if it holds files

Then: corral build NAME && corral test NAME`;

/** The tool-spec.json name rule. */
const NAME = /^[a-z0-9][a-z0-9._-]*$/;

export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values, positionals } = parse(args, { lang: { type: 'string' }, dir: { type: 'string' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length !== 1) throw new UsageError('name the new tool, e.g. corral init word-count --lang rust');
  const name = positionals[0]!;
  if (!NAME.test(name))
    throw new UsageError(
      `bad tool name ${JSON.stringify(name)}: use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit.`,
    );
  const { LANGUAGE_NAMES, isLanguageName, language } = await import('../author/languages.js');
  if (values.lang === undefined) throw new UsageError(`choose a language: --lang ${LANGUAGE_NAMES.join('|')}`);
  if (!isLanguageName(values.lang))
    throw new UsageError(`unknown --lang ${JSON.stringify(values.lang)}: use ${LANGUAGE_NAMES.join(', ')}.`);

  // As given, like every path Corral creates: `link/../x` is made beside the link's target (resolve() and join() would not).
  const dir = absoluteAsGiven(values.dir ?? name);
  const existing = await readdir(dir).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    // ENOTDIR: dir itself is a file, or a file is on the way to it.
    const isFile =
      err.code === 'ENOTDIR' &&
      (await stat(dir).then(
        (st) => !st.isDirectory(),
        () => false,
      ));
    const message = `cannot use ${dir}: ${isFile ? 'it is a file' : err.code === 'ENOTDIR' ? 'a file that is not a folder is on the way' : `${fileProblem(err)} (${err.code})`}`;
    // A file where the folder should be is the user's choice of name; any other refusal (EACCES…) is the system's.
    if (err.code === 'ENOTDIR') throw new UsageError(message);
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, message, { path: dir, cause: err.code ?? '' });
  });
  if (existing.length > 0) throw new UsageError(`${dir} already exists and is not empty: choose another name or --dir.`);

  const files = (await language(values.lang)).scaffold(name);
  try {
    for (const [path, text] of Object.entries(files)) {
      await makeFolders(dirname(`${dir}/${path}`));
      await writeFile(`${dir}/${path}`, text);
    }
  } catch (err) {
    // A place the system refuses (a folder under /proc, no permission, a read-only file system): not a misuse
    // of the command, so exit 1 as every other refused write does, not 2.
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (typeof code !== 'string') throw err;
    // makeFolders says which folder and why; a file's own refusal gets the same words (not "EACCES: …, open '…'").
    const file = (err as NodeJS.ErrnoException).path;
    const why = err instanceof FolderError || !file ? (err as Error).message : `cannot write ${file}: ${fileProblem(err)} (${code})`;
    throw new CorralError(ErrorCodes.INPUT_VALIDATION, `cannot create the tool in ${dir}: ${why}`, {
      path: dir,
      cause: code,
    });
  }
  // relative() would drop `link/..` by name: such a --dir is shown as typed.
  const shown = dir.split('/').includes('..') ? values.dir! : relative(process.cwd(), dir) || '.';
  io.stderr.write(`Created ${values.lang} tool ${name} in ${shown}/: ${Object.keys(files).sort().join(', ')}\n`);
  print(`Next: corral build ${shown} && corral test ${shown}`);
  return EXIT_OK;
}
