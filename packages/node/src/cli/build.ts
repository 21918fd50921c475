/** `corral build [DIR]`: compile a tool folder's sources into the component its tool-spec.json names. */
import { readFile, stat } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { folderAsGiven } from '../folders.js';
import { forTerminal } from '../terminal.js';
import { EXIT_OK, EXIT_TOOL_FAILED, UsageError, parse, type Cli } from './shared.js';

export const help = `corral build [DIR] [--lang c|rust|js]

Build the tool in DIR (default: the current folder): compile its sources
into the component tool-spec.json's "component" names, and check that
Corral can load it.
  --lang c|rust|js   the language (default: found from the sources)

Exit status: 0 built, 1 the build failed (or a toolchain is missing: the
message says what to install), 2 the command was misused.`;

export async function command(args: string[], { print, fail, io }: Cli): Promise<number> {
  const { values, positionals } = parse(args, { lang: { type: 'string' } }, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals.length > 1) throw new UsageError('build one tool folder at a time, e.g. corral build word-count');
  // `link/..` is the folder above the link's target, where `corral init --dir link/../x` made the tool.
  const dir = await folderAsGiven(positionals[0] ?? '.');
  const specPath = join(dir, 'tool-spec.json');
  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) throw new UsageError(`${dir}: no such folder.`);

  const { isLanguageName, language, detectLanguage, LANGUAGE_NAMES } = await import('../author/languages.js');
  if (values.lang !== undefined && !isLanguageName(values.lang))
    throw new UsageError(`unknown --lang ${JSON.stringify(values.lang)}: use ${LANGUAGE_NAMES.join(', ')}.`);

  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(specPath, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`${dir} has no tool-spec.json: is it a tool folder? (corral init NAME creates one)`);
    throw new CorralError(ErrorCodes.REGISTRATION, `Cannot read ${specPath} as JSON: ${code ?? (err as Error).message}`, {
      path: specPath,
    });
  }
  const { validateSpec } = await import('@corral/core');
  const verdict = validateSpec(raw);
  if (!verdict.ok) {
    fail(`${specPath}: ${verdict.problems.length} problem${verdict.problems.length === 1 ? '' : 's'}`);
    for (const p of verdict.problems) io.stderr.write(`  ${forTerminal(`${p.path}: ${p.message}`, { oneLine: true })}\n`);
    return EXIT_TOOL_FAILED;
  }
  const spec = verdict.spec;

  let lang;
  if (values.lang !== undefined && isLanguageName(values.lang)) {
    lang = await language(values.lang);
    // A --lang the folder has no sources of would fail inside the compiler ("couldn't read src/main.rs").
    if (!(await lang.detect(dir))) {
      const { matches } = await detectLanguage(dir);
      throw new UsageError(
        `${dir} has no ${lang.name} sources${matches.length > 0 ? `; it holds ${matches.join(' and ')} (drop --lang, or use --lang ${matches[0]})` : ''}.`,
        { option: '--lang' },
      );
    }
  } else {
    const { found, matches } = await detectLanguage(dir);
    if (!found)
      throw new UsageError(
        matches.length === 0
          ? `no sources found in ${dir} (src/main.rs, src/index.ts, src/index.js or src/*.c): give --lang.`
          : `${dir} holds sources of ${matches.join(' and ')}: give --lang.`,
      );
    lang = found;
  }

  const out = resolve(dir, spec.component);
  const log = (line: string) => void io.stderr.write(`${forTerminal(line)}\n`);
  const started = performance.now();
  log(`Building ${spec.name} (${lang.name}) in ${relative(process.cwd(), dir) || '.'}`);
  const { MissingToolchain } = await import('../author/language.js');
  try {
    await lang.build({ dir, name: spec.name, out, log });
  } catch (err) {
    // A compiler's output spans lines: the first goes on the `corral:` line, the rest as it was printed.
    const [first, ...rest] = (err as Error).message.split('\n');
    fail(err instanceof MissingToolchain ? first! : `build failed: ${first}`);
    if (rest.length > 0) io.stderr.write(`${forTerminal(rest.join('\n'))}\n`);
    return EXIT_TOOL_FAILED;
  }

  // The built file must be something Corral registers: the same checks as loading a tool folder.
  const [{ loadToolFiles }, { Registry }] = await Promise.all([import('../tool-folder.js'), import('@corral/core')]);
  try {
    await loadToolFiles(new Registry(), specPath);
  } catch (err) {
    fail(`built ${out}, but Corral refuses it: ${(err as Error).message}`);
    return EXIT_TOOL_FAILED;
  }
  const size = (await stat(out)).size;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  print(`Built ${relative(process.cwd(), out) || out} (${formatSize(size)}) in ${seconds} s`);
  return EXIT_OK;
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
