/**
 * `nfv import iptables|nftables FILE --node NAME`: a live firewall as a FIREWALL node (the `/fwd/nodes` body) on
 * stdout, into an NFV document with --into, kept in `/fwd` with --store. Each approximated line is said on stderr
 * in one line; the summary too; the whole report as a table on a terminal or as JSON with --report json (stderr:
 * stdout is the node or the document). With --nat-address the NAT node goes into the document (--into) or is named
 * in the summary.
 */
import Table from 'cli-table3';
import { Command, Option } from 'commander';
import { EXIT } from '../../model/errors.js';
import { plural } from '../../model/words.js';
import type { Node } from '../../model/types.js';
import { fwdImport, type ImportAnswer } from '../../ops/imports.js';
import { readInput, writeUserFile } from '../files.js';
import { readNamed, readingBody, readingOptions } from '../reading.js';
import { state } from '../options.js';
import { plainStyle, say, writeData } from '../output.js';
import { printOutcome, runOperation } from '../requests.js';

interface ImportOptions {
  node: string;
  into?: string;
  output?: string;
  store?: boolean;
  plain?: boolean;
  report?: string;
}

/** One forward table entry as the summary says it: `tcp/80 to 10.0.0.2:8080`. */
const forwardText = (f: { protocol?: string; dstPort?: string; to: string; toPort?: string }) =>
  `${(f.protocol ?? 'ANY').toLowerCase()}${f.dstPort ? `/${f.dstPort}` : ''} to ${f.to}` +
  (f.toPort ? `:${f.toPort}` : '');

/** One translate entry as the summary says it: `tcp/389 131.159.254.42` (from S, when it names a source). */
const translateText = (f: { protocol?: string; src?: string; dst: string; dstPort?: string }) =>
  `${(f.protocol ?? 'ANY').toLowerCase()}${f.dstPort ? `/${f.dstPort}` : ''} ${f.dst}${f.src ? ` from ${f.src}` : ''}`;

function summary(a: ImportAnswer): string {
  const r = a.report;
  const counts = Object.entries(r.counts)
    .filter(([, n]) => n > 0)
    .map(([c, n]) => `${n} ${c}`)
    .join(', ');
  const rules = a.node.configuration?.firewall?.elements?.length ?? 0;
  const reached = `${plural(r.lines.length, 'line')} reached (${counts || 'none'})`;
  const natText = (node: Node) => {
    const n = node.configuration?.nat;
    const hides = n?.source?.length ? ` hides ${n.source.join(', ')}` : '';
    const forwards = n?.forward?.length ? `${hides ? ',' : ''} forwards ${n.forward.map(forwardText).join(', ')}` : '';
    const translates = n?.translate?.length
      ? `${hides || forwards ? ',' : ''} translates to ${n.translate.map(translateText).join(', ')}`
      : '';
    return `; NAT node ${node.name}${hides}${forwards}${translates}`;
  };
  const nat = (a.nat === undefined ? [] : Array.isArray(a.nat) ? a.nat : [a.nat]).map(natText).join('');
  return `${r.file}: ${r.chain}, ${reached}; ${plural(rules, 'nfv rule')}, default ${r.defaultAction}${nat}`;
}

function reportTable(a: ImportAnswer): string {
  const ids = new Map(a.origins.map((o) => [o.where, o.elements]));
  const table = new Table({ head: ['line', 'class', 'rules', 'text', 'why'], style: plainStyle() });
  for (const l of a.report.lines) {
    const el = ids.get(l.where) ?? [];
    const span = el.length ? (el.length === 1 ? String(el[0]) : `${el[0]}-${el[el.length - 1]}`) : '';
    table.push([l.where, l.class, span, l.text.slice(0, 60), (l.reason ?? '').slice(0, 60)]);
  }
  return table.toString();
}

function importCommand(format: 'iptables' | 'nftables', what: string): Command {
  const cmd = new Command(format)
    .description(`${what} as a FIREWALL node (stdout), into an NFV document (--into) or kept in /fwd (--store)`)
    .argument(
      '<file>',
      format === 'iptables'
        ? 'iptables-save output (- for stdin)'
        : 'nft -j list ruleset output, or nft list ruleset text (- for stdin)',
    )
    .requiredOption('--node <name>', 'the firewall node (its name: the address nfv knows it by)');
  // The reading flags, the same on every command reading a rule set; an import without --approximation writes
  // both lists, each rule of one marked.
  return readingOptions(cmd)
    .option('--into <nfv>', "an NFV document: written with the node's configuration replaced")
    .option('-o, --output <file>', 'write the node or document to a file instead of stdout')
    .option('--store', 'also keep the node in /fwd (prints its id)')
    .option('--plain', "plain rules only, as VEREFOO reads them: RETURNs unfolded, no rule's except entries")
    .addOption(new Option('--report <form>', 'the line-by-line report on stderr').choices(['table', 'json']))
    .action(async (file: string, opts: ImportOptions, self: Command) => {
      const text = await readInput(file);
      const body = {
        format,
        text,
        file: file === '-' ? 'standard input' : file,
        node: opts.node,
        ...(await readingBody(opts as unknown as Record<string, unknown>)),
        ...(opts.into === undefined ? {} : { into: await readNamed('--into', opts.into) }),
        ...(opts.store ? { store: true } : {}),
        ...(opts.plain ? { plain: true } : {}),
      };
      const outcome = await runOperation(self, fwdImport, { body: JSON.stringify(body), format: 'json' });
      if (!outcome.ok) {
        state.exitCode = printOutcome(self, outcome);
        return;
      }
      const answer = outcome.reply.value;
      for (const l of answer.report.lines)
        if (l.class === 'approximated') say(`nfv: ${l.where}: ${l.reason ?? 'approximated'}; approximated`);
      if (opts.report === 'json') process.stderr.write(`${JSON.stringify(answer.report, null, 2)}\n`);
      else if (opts.report === 'table' || process.stderr.isTTY) process.stderr.write(`${reportTable(answer)}\n`);
      say(summary(answer));
      const data =
        answer.document ??
        (opts.store ? `${JSON.stringify({ id: answer.id })}\n` : `${JSON.stringify(answer.node, null, 2)}\n`);
      if (opts.output !== undefined) {
        await writeUserFile('-o', opts.output, data);
        say(`wrote ${opts.output}`);
      } else writeData(data);
      state.exitCode = EXIT.ok;
    });
}

export const importCommandGroup = new Command('import')
  .description('a live firewall (iptables-save, nft ruleset) as an nfv FIREWALL node, line by line')
  .addCommand(importCommand('iptables', 'iptables-save output'))
  .addCommand(importCommand('nftables', 'an nft ruleset'));
