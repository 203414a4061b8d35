/**
 * One manual page per command group (`nfv-graphs.1`, ...), generated from the command table: every subcommand
 * with its arguments and options, EXIT STATUS, and the examples its --help shows. `npm run man` writes them;
 * a test checks that the committed pages are what the table generates.
 */
import type { Command, Option } from 'commander';
import { ROOT_EXAMPLES, examplesOf } from './examples.js';

export const EXIT_STATUS = [
  '0 success (also an empty list); 1 some requirement cannot hold or is unknown (an approximated imported',
  'firewall decides it), or the answer cannot be placed on the substrate hosts (simulate), rules to look at',
  '(firewall lint),',
  'lists that differ (firewall diff), the kernel disagrees with a claim (emulate); 2 invalid input or usage (also',
  'an answer emulate refuses, a missing kernel feature, an input past a bound nfv keeps, the solver out of its',
  'memory); 3 not found; 4 conflict, missing dependency,',
  'damaged workspace file, workspace locked, unwritable or full; 5 solver time limit reached; 70 internal error',
  '(also a solver that crashed twice); 130 interrupted (Ctrl-C; nothing half-done is stored).',
].join('\n');

/** roff-escaped text: backslashes, hyphens, and a leading dot or quote. */
const roff = (text: string) =>
  text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1');

function usage(cmd: Command, prefix: string): string {
  const args = cmd.registeredArguments.map((a) =>
    a.required ? `<${a.name()}>` : `[${a.name()}${a.variadic ? '...' : ''}]`,
  );
  return [prefix, ...args].join(' ');
}

const optionLines = (options: readonly Option[]) =>
  options.flatMap((o) => ['.TP', `.B ${roff(o.flags)}`, roff(o.description)]);

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
      .flatMap(({ cmd, path }) => [
        '.TP',
        `.B ${roff(usage(cmd, path))}`,
        roff(cmd.description()),
        ...(cmd.options.length ? ['.RS', ...optionLines(cmd.options), '.RE'] : []),
      ]),
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

const ENVIRONMENT: [string, string][] = [
  ['NFV_WORKSPACE', 'Workspace folder when -w is not given (default ./workspaces/default).'],
  [
    'NFV_LOCK_TIMEOUT',
    'Seconds to wait for another process holding the workspace lock (default 5; also --lock-timeout).',
  ],
  ['NFV_TOKEN', 'Bearer token that serve requires.'],
  ['NO_COLOR', 'Disables colour.'],
];

/** nfv.1: every top-level command (its group page has the details), the global options, environment, exit status. */
export function mainPage(program: Command, version: string, groups: string[]): string {
  const lines = [
    `.TH NFV 1 "2026-11" "nfv ${version}" "User Commands"`,
    '.SH NAME',
    `nfv \\- ${roff(program.description())}`,
    '.SH SYNOPSIS',
    '.B nfv',
    `[\\fIoptions\\fR] \\fIcommand\\fR ...`,
    '.SH DESCRIPTION',
    roff('nfv keeps a workspace of network graphs, requirement sets and substrates in local JSON files,'),
    roff('places and configures firewalls so that isolation and reachability requirements hold (Z3 MaxSAT),'),
    roff('keeps firewall nodes for deployment, answers PuppetDB v4 inventory queries, and serves the same'),
    roff('operations over HTTP. Data goes to stdout, messages to stderr.'),
    '.SH COMMANDS',
    ...program.commands.flatMap((c) => {
      const subs = c.commands.map((x) => x.name()).join('|');
      const more = groups.includes(`nfv-${c.name()}.1`) ? ` See \\fBnfv\\-${roff(c.name())}\\fR(1).` : '';
      return [
        '.TP',
        `.B ${roff(usage(c, subs ? `${c.name()} ${subs}` : c.name()))}`,
        `${roff(c.description())}.${more}`,
      ];
    }),
    '.SH OPTIONS',
    ...optionLines(program.options),
    '.SH ENVIRONMENT',
    ...ENVIRONMENT.flatMap(([k, v]) => ['.TP', `.B ${k}`, roff(v)]),
    '.SH EXIT STATUS',
    roff(EXIT_STATUS),
    '.SH EXAMPLES',
    ...ROOT_EXAMPLES.flatMap((e) => ['.nf', roff(e), '.fi']),
    '.SH FILES',
    roff('workspaces/default/adp.json, fwd.json, inventory.journal: the workspace.'),
    '.SH SEE ALSO',
    ...groups.map((g) => `.BR ${roff(g.slice(0, -2))} (1)`),
  ];
  return `${lines.join('\n')}\n`;
}

/** nfv.1 and a page for every top-level command except help and completion, by file name. */
export function manPages(program: Command, version: string): Map<string, string> {
  const skip = new Set(['help', 'completion']);
  const groups = new Map(
    program.commands.filter((c) => !skip.has(c.name())).map((c) => [`nfv-${c.name()}.1`, groupPage(c, version)]),
  );
  return new Map([['nfv.1', mainPage(program, version, [...groups.keys()])], ...groups]);
}
