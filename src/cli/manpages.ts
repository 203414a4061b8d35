/**
 * One manual page per command group (`nfv-graphs.1`, ...), generated from the command table: every subcommand
 * with its arguments and options, EXIT STATUS, and the examples its --help shows. `npm run man` writes them;
 * a test checks that the committed pages are what the table generates.
 */
import type { Command, Option } from 'commander';
import { examplesOf } from './examples.js';

export const EXIT_STATUS = [
  '0 success (also an empty list); 1 some requirement cannot hold (simulate); 2 invalid input or usage; 3 not found;',
  '4 conflict, missing dependency, damaged workspace file, workspace locked, unwritable or full; 5 solver time limit',
  'reached; 70 internal error (also a solver that crashed twice); 130 interrupted (Ctrl-C; nothing half-done is stored).',
].join('\n');

/** roff-escaped text: backslashes, hyphens, and a leading dot or quote. */
const roff = (text: string) => text.replace(/\\/g, '\\e').replace(/-/g, '\\-').replace(/^([.'])/gm, '\\&$1');

function usage(cmd: Command, prefix: string): string {
  const args = cmd.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}${a.variadic ? '...' : ''}]`));
  return [prefix, ...args].join(' ');
}

const optionLines = (options: readonly Option[]) => options.flatMap((o) => ['.TP', `.B ${roff(o.flags)}`, roff(o.description)]);

function leaves(cmd: Command, prefix: string): { cmd: Command; path: string }[] {
  if (!cmd.commands.length) return [{ cmd, path: prefix }];
  return cmd.commands.flatMap((c) => leaves(c, `${prefix} ${c.name()}`));
}

/** The page of one top-level command, or undefined for the commands nfv.1 describes alone. */
export function groupPage(group: Command, version: string): string {
  const name = `nfv-${group.name()}`;
  const all = leaves(group, `nfv ${group.name()}`);
  const lines = [
    `.TH ${name.toUpperCase()} 1 "2026-11" "nfv ${version}" "User Commands"`,
    '.SH NAME',
    `${name} \\- ${roff(group.description())}`,
    '.SH SYNOPSIS',
    ...all.flatMap(({ cmd, path }) => ['.B', roff(usage(cmd, path)), '.br']),
    '.SH DESCRIPTION',
    roff(group.description()),
    ...(group.commands.length ? ['.SH COMMANDS'] : []),
    ...all
      .filter(({ cmd }) => cmd !== group)
      .flatMap(({ cmd, path }) => ['.TP', `.B ${roff(usage(cmd, path))}`, roff(cmd.description()), ...(cmd.options.length ? ['.RS', ...optionLines(cmd.options), '.RE'] : [])]),
    ...(group.commands.length === 0 && group.options.length ? ['.SH OPTIONS', ...optionLines(group.options)] : []),
    '.SH EXIT STATUS',
    roff(EXIT_STATUS),
    '.SH EXAMPLES',
    ...all.flatMap(({ cmd }) => examplesOf(cmd)).flatMap((e) => ['.nf', roff(e), '.fi']),
    '.SH SEE ALSO',
    '.BR nfv (1)',
  ];
  return `${lines.join('\n')}\n`;
}

/** Pages for every top-level command except help and completion, by file name. */
export function manPages(program: Command, version: string): Map<string, string> {
  const skip = new Set(['help', 'completion']);
  return new Map(program.commands.filter((c) => !skip.has(c.name())).map((c) => [`nfv-${c.name()}.1`, groupPage(c, version)]));
}
