import { Command, type Option } from 'commander';
import { badRequest } from '../../model/errors.js';
import { writeData } from '../output.js';

/** Every command path of the program with its subcommands, options and the choices of its options. */
interface Level {
  path: string[];
  commands: { name: string; description: string }[];
  options: Option[];
}

function levels(cmd: Command, path: string[] = [], inherited: Option[] = []): Level[] {
  const options = [...inherited, ...(cmd.options as Option[])];
  const visible = cmd.commands.filter((c) => c.name() !== 'help' || path.length === 0);
  const here: Level = {
    path,
    commands: visible.map((c) => ({ name: c.name(), description: c.description() })),
    options,
  };
  // Global options (on the root) apply at every level.
  const passDown = path.length === 0 ? (cmd.options as Option[]) : inherited;
  return [here, ...visible.flatMap((c) => levels(c, [...path, c.name()], passDown))];
}

const flags = (o: Option) => [o.short, o.long].filter((f): f is string => Boolean(f));
const words = (xs: string[]) => xs.join(' ').replace(/["$`\\]/g, '');

function bash(program: Command): string {
  const all = levels(program);
  // Keys start with "nfv": bash's associative arrays take no empty key.
  const entries = (pick: (l: Level) => string[]) =>
    all.map((l) => `  ["${['nfv', ...l.path].join(' ')}"]="${words(pick(l))}"`).join('\n');
  const choices = new Map<string, string[]>();
  for (const l of all)
    for (const o of l.options) if (o.argChoices) for (const f of flags(o)) choices.set(f, o.argChoices);
  return `# bash completion for nfv (nfv completion bash), generated from its command table
declare -gA _nfv_commands=(
${entries((l) => l.commands.map((c) => c.name))}
)
declare -gA _nfv_options=(
${entries((l) => l.options.flatMap(flags))}
)
declare -gA _nfv_choices=(
${[...choices].map(([f, c]) => `  ["${f}"]="${words(c)}"`).join('\n')}
)
_nfv() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="nfv" word i
  if [[ -n "\${_nfv_choices[$prev]+set}" ]]; then
    COMPREPLY=($(compgen -W "\${_nfv_choices[$prev]}" -- "$cur"))
    return
  fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    if [[ " \${_nfv_commands[$path]} " == *" $word "* ]]; then path="$path $word"; fi
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "\${_nfv_options[$path]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "\${_nfv_commands[$path]}" -- "$cur"))
  fi
}
complete -o default -F _nfv nfv
`;
}

function zsh(program: Command): string {
  return `#compdef nfv
# zsh completion for nfv (nfv completion zsh): the bash completion through zsh's bashcompinit
autoload -U +X bashcompinit && bashcompinit
${bash(program)}`;
}

function fish(program: Command): string {
  const lines = [
    '# fish completion for nfv (nfv completion fish), generated from its command table',
    'complete -c nfv -f',
  ];
  const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  for (const l of levels(program)) {
    const seen = l.path.map((p) => `__fish_seen_subcommand_from ${p}`);
    const none = l.commands.length
      ? [`not __fish_seen_subcommand_from ${l.commands.map((c) => c.name).join(' ')}`]
      : [];
    const condition = (l.path.length ? seen : ['__fish_use_subcommand'])
      .concat(l.path.length ? none : [])
      .join('; and ');
    for (const c of l.commands)
      lines.push(`complete -c nfv -n ${quote(condition)} -a ${c.name} -d ${quote(c.description)}`);
  }
  for (const o of levels(program)[0]!.options) {
    const long = o.long?.replace(/^--/, '');
    if (!long) continue;
    const short = o.short ? ` -s ${o.short.replace(/^-/, '')}` : '';
    const values = o.argChoices ? ` -xa ${quote(o.argChoices.join(' '))}` : '';
    lines.push(`complete -c nfv -l ${long}${short}${values} -d ${quote(o.description)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `nfv completion bash|zsh|fish`: a completion script generated from the command table. */
export function completionCommand(program: () => Command): Command {
  return new Command('completion')
    .description('print a shell completion script: bash, zsh or fish (e.g. source <(nfv completion bash))')
    .argument('<shell>', 'bash, zsh or fish')
    .action((shell: string) => {
      const make = { bash, zsh, fish }[shell as 'bash' | 'zsh' | 'fish'];
      if (!make || !Object.hasOwn({ bash, zsh, fish }, shell))
        throw badRequest(`completion: shell must be bash, zsh or fish, not '${shell.slice(0, 40)}'`);
      writeData(make(program()));
    });
}
