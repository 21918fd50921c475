/**
 * `corral completion bash|zsh|fish`: a shell completion script. What it
 * completes is read from the commands themselves when the script is made
 * (main's command list, each command's --help), so a new command or flag
 * is completed without a change here; tool names for `corral run` come
 * from `corral tools --json` at completion time.
 */
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';

export const help = `corral completion bash|zsh|fish

Print a completion script for your shell: commands, each command's options,
files for options that take one, and tool names after 'corral run' (asked
of 'corral tools' when you press TAB).

Install it once:
  bash  corral completion bash > ~/.local/share/bash-completion/completions/corral
  zsh   corral completion zsh > "\${fpath[1]}/_corral"   (or in ~/.zshrc: source <(corral completion zsh))
  fish  corral completion fish > ~/.config/fish/completions/corral.fish`;

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

/** What a script completes: per command, its subcommands, its options, and which options take a path. */
export interface Completions {
  commands: string[];
  subcommands: Record<string, string[]>;
  options: Record<string, string[]>;
  pathOptions: string[];
  /** Options whose help lists their values (`--lang c|rust|js`), with those values. */
  optionValues: Record<string, string[]>;
}

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(args, {}, true);
  if (values.help) return (print(help), EXIT_OK);
  const shell = positionals[0];
  if (positionals.length !== 1 || !SHELLS.includes(shell as Shell))
    throw new UsageError(
      `name a shell: corral completion ${SHELLS.join('|')} (got ${positionals.length ? `'${positionals.join(' ')}'` : 'none'}).`,
    );
  const { COMMANDS } = await import('./main.js');
  const commands = Object.keys(COMMANDS);
  const helps = Object.fromEntries(await Promise.all(commands.map(async (name) => [name, (await COMMANDS[name]!()).help] as const)));
  print(SCRIPTS[shell as Shell](completionsFrom(helps)));
  return EXIT_OK;
}

/** Subcommands are the lowercase words after `corral CMD` at the start of a help line; options are every --flag in it. */
export function completionsFrom(helps: Record<string, string>): Completions {
  const subcommands: Record<string, string[]> = {};
  const options: Record<string, string[]> = {};
  const pathOptions = new Set<string>();
  const optionValues: Record<string, string[]> = {};
  for (const [name, text] of Object.entries(helps)) {
    const subs = new Set<string>();
    for (const m of text.matchAll(new RegExp(`^corral ${name} ([a-z]+(?:\\|[a-z]+)*)(?=\\s|$)`, 'gm')))
      for (const word of m[1]!.split('|')) subs.add(word);
    subcommands[name] = [...subs];
    options[name] = [...new Set([...(text.match(/(?<![\w-])--[a-z][a-z0-9-]*/g) ?? []), '--help'])].sort();
    for (const m of text.matchAll(/(?<![\w-])(--[a-z][a-z0-9-]*)[ =]\[?(?:FILE|DIR|PATH|SPEC|HOSTDIR|HOST(?=[:[]))/g))
      pathOptions.add(m[1]!);
    // `--lang c|rust|js`: an option whose help lists its values.
    for (const m of text.matchAll(/(?<![\w-])(--[a-z][a-z0-9-]*)[ =]([a-z0-9]+(?:\|[a-z0-9]+)+)(?![\w|])/g))
      optionValues[m[1]!] = [...new Set([...(optionValues[m[1]!] ?? []), ...m[2]!.split('|')])];
  }
  return { commands: Object.keys(helps), subcommands, options, pathOptions: [...pathOptions].sort(), optionValues };
}

/** Tool names from `corral tools --json`: the "name" of each top-level entry (indented 4). */
const TOOL_NAMES = `corral tools --json 2>/dev/null | sed -n 's/^    "name": "\\(.*\\)",$/\\1/p'`;

const words = (list: string[]) => list.join(' ');

const SCRIPTS: Record<Shell, (c: Completions) => string> = {
  bash: (c) => `# corral completion for bash (corral completion bash)
_corral() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmd=\${COMP_WORDS[1]}
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "${words(c.commands)} --help --version" -- "$cur"))
    return
  fi
  case $prev in
    ${c.pathOptions.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
${Object.entries(c.optionValues)
  .map(([flag, values]) => `    ${flag}) COMPREPLY=($(compgen -W "${words(values)}" -- "$cur")); return ;;`)
  .join('\n')}
  esac
  local list=""
  case $cmd in
${c.commands
  .map(
    (name) =>
      `    ${name}) list="${words([...(c.options[name] ?? [])])}"` +
      (c.subcommands[name]?.length ? `; [[ $COMP_CWORD -eq 2 ]] && list="$list ${words(c.subcommands[name]!)}"` : '') +
      (name === 'run' ? `; [[ $COMP_CWORD -eq 2 && $cur != -* ]] && list="$list $(${TOOL_NAMES})"` : '') +
      ' ;;',
  )
  .join('\n')}
  esac
  COMPREPLY=($(compgen -W "$list" -- "$cur"))
}
complete -o default -F _corral corral
`,
  zsh: (c) => `#compdef corral
# corral completion for zsh (corral completion zsh)
_corral() {
  if (( CURRENT == 2 )); then
    compadd -- ${words(c.commands)} --help --version
    return
  fi
  case $words[CURRENT-1] in
    ${c.pathOptions.join('|')}) _files; return ;;
${Object.entries(c.optionValues)
  .map(([flag, values]) => `    ${flag}) compadd -- ${words(values)}; return ;;`)
  .join('\n')}
  esac
  case $words[2] in
${c.commands
  .map(
    (name) =>
      `    ${name}) compadd -- ${words(c.options[name] ?? [])}` +
      (c.subcommands[name]?.length ? `; (( CURRENT == 3 )) && compadd -- ${words(c.subcommands[name]!)}` : '') +
      (name === 'run' ? `; (( CURRENT == 3 )) && [[ $PREFIX != -* ]] && compadd -- \${(f)"$(${TOOL_NAMES})"}` : '') +
      ' ;;',
  )
  .join('\n')}
  esac
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _corral "$@"
else
  compdef _corral corral
fi
`,
  fish: (c) =>
    [
      '# corral completion for fish (corral completion fish)',
      'complete -c corral -f',
      `complete -c corral -n __fish_use_subcommand -a '${words(c.commands)}'`,
      'complete -c corral -n __fish_use_subcommand -l help -l version',
      ...c.commands.flatMap((name) => [
        ...(c.subcommands[name]?.length
          ? [`complete -c corral -n '__fish_seen_subcommand_from ${name}' -a '${words(c.subcommands[name]!)}'`]
          : []),
        ...(c.options[name] ?? []).map(
          (flag) =>
            `complete -c corral -n '__fish_seen_subcommand_from ${name}' -l ${flag.slice(2)}` +
            (c.optionValues[flag] ? ` -x -a '${words(c.optionValues[flag])}'` : c.pathOptions.includes(flag) ? ' -r -F' : ''),
        ),
      ]),
      `complete -c corral -n '__fish_seen_subcommand_from run' -a '(${TOOL_NAMES.replace(/'/g, "\\'")})'`,
      '',
    ].join('\n'),
};
