/**
 * `nfv firewall lint | allows | diff`: analyses of a firewall's rules on any rule source. A source is a file (an NFV
 * document with --node naming its firewall, or a firewall node document as `/fwd` takes it; `-` is stdin),
 * `fwd:NID` (a stored `/fwd` node, also --fwd NID), or `simulation:SMID` (a firewall of a stored result, also
 * --simulation SMID; --node names it). Stored sources go to the GET operations, documents to the POST ones. A table
 * on a terminal, JSON when piped; lint exits 1 when it finds something, diff when the lists differ.
 */
import Table from 'cli-table3';
import { Command } from 'commander';
import type {
  AllowsByLineReport,
  AllowsReport,
  DiffReport,
  LintReport,
  RuleRef,
  Side,
} from '../../deploy/analysis/index.js';
import { labelOf } from '../../deploy/analysis/list.js';
import type { Explanation } from '../../deploy/import/explain.js';
import { EXIT, badRequest, quote } from '../../model/errors.js';
import { parseId } from '../../model/ids.js';
import { plural } from '../../model/words.js';
import {
  analysisAllows,
  analysisDiff,
  analysisExplain,
  analysisLint,
  fwdAllows,
  fwdDiff,
  fwdLint,
  simulationsAllows,
  simulationsLint,
  type SourceSpec,
} from '../../ops/analysis.js';
import type { JsonReply, Outcome } from '../../ops/operation.js';
import { decodeUtf8 } from '../../model/codec.js';
import { readInput } from '../files.js';
import { group } from '../op-command.js';
import { outputFormat, state } from '../options.js';
import { plainStyle, writeData } from '../output.js';
import { readingBody, readingOptions } from '../reading.js';
import { printOutcome, runOperation } from '../requests.js';

const SOURCE_HELP = 'FILE (NFV or firewall node document, - for stdin), fwd:NID or simulation:SMID';

interface SourceOptions {
  fwd?: string;
  simulation?: string;
  node?: string;
}

/** Reads a rule source given as an argument: a stored node or result by prefix, else a file. */
async function sourceOf(arg: string, node: string | undefined, flag: string): Promise<SourceSpec> {
  const stored = /^(fwd|simulation):(.*)$/.exec(arg);
  if (stored?.[1] === 'fwd') {
    if (node !== undefined) throw badRequest(`--node: ${arg} is one firewall node already`);
    return { kind: 'fwd', id: parseId(flag, stored[2]!) };
  }
  if (stored?.[1] === 'simulation')
    return { kind: 'simulation', id: parseId(flag, stored[2]!), ...(node === undefined ? {} : { node }) };
  const document = arg === '-' ? await piped() : await readInput(arg);
  const name = arg === '-' ? 'standard input' : arg.startsWith('@') ? arg.slice(1) : arg;
  return { kind: 'document', document, name, ...(node === undefined ? {} : { node }) };
}

/** A document piped to stdin. */
async function piped(): Promise<string> {
  const none = `no rule source: give ${SOURCE_HELP}, or pipe a document`;
  if (process.stdin.isTTY) throw badRequest(none);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const document = decodeUtf8(Buffer.concat(chunks), 'standard input');
  if (document.trim() === '') throw badRequest(none);
  return document;
}

/** The one source of lint and allows: an argument, --fwd, --simulation, or a document piped to stdin. */
async function oneSource(arg: string | undefined, opts: SourceOptions): Promise<SourceSpec> {
  const given = [arg !== undefined, opts.fwd !== undefined, opts.simulation !== undefined].filter(Boolean).length;
  if (given > 1) throw badRequest('give one rule source: SOURCE, --fwd NID or --simulation SMID');
  if (opts.fwd !== undefined) return sourceOf(`fwd:${opts.fwd}`, opts.node, '--fwd');
  if (opts.simulation !== undefined) return sourceOf(`simulation:${opts.simulation}`, opts.node, '--simulation');
  return sourceOf(arg ?? '-', opts.node, 'source');
}

const nodeQuery = (spec: Extract<SourceSpec, { kind: 'simulation' }>, more: Record<string, string> = {}) =>
  new URLSearchParams({ ...(spec.node === undefined ? {} : { node: spec.node }), ...more });

const labels = (refs: RuleRef[]) => refs.map(labelOf).join(', ');

/** The example column, when the answer has examples: its heading, and a row's packet. */
const exHead = (shown: boolean): string[] => (shown ? ['example'] : []);
const exCell = (shown: boolean, packet: string | undefined): string[] => (shown ? [packet ?? ''] : []);

/** The column that says what rests on approximated lines, when something does (analysis/readings.ts). */
const apHead = (rows: readonly { approximated?: string }[]): string[] =>
  rows.some((r) => r.approximated !== undefined) ? ['rests on approximation'] : [];
const apCell = (shown: string[], row: { approximated?: string }): string[] =>
  shown.length ? [row.approximated ?? ''] : [];

/** Prints an analysis: data when piped or asked for, else the table `draw` makes; `exit` sets the exit code. */
function show<V>(self: Command, outcome: Outcome<JsonReply<V>>, draw: (v: V) => string, exit: (v: V) => boolean) {
  if (!outcome.ok || outputFormat(self) !== 'table') state.exitCode = printOutcome(self, outcome);
  else {
    writeData(draw(outcome.reply.value));
    state.exitCode = EXIT.ok;
  }
  if (outcome.ok && state.exitCode === EXIT.ok && exit(outcome.reply.value)) state.exitCode = EXIT.unsatisfied;
}

function why(f: LintReport['findings'][number]): string {
  switch (f.finding) {
    case 'unmatchable':
      return 'matches no packet';
    case 'redundant':
      return `without it, ${labels(f.by)} decide${f.by.length === 1 ? 's' : ''} its packets alike`;
    default:
      return `blocked by ${labels(f.by)}${f.differentAction ? ' (another action)' : ''}`;
  }
}

function lintTable(r: LintReport): string {
  const head = `${r.firewall}: ${plural(r.rules, 'rule')}, default ${r.defaultAction}; `;
  if (!r.findings.length) return `${head}no findings`;
  const example = r.findings.some((f) => f.example !== undefined);
  const ap = apHead(r.findings);
  const table = new Table({
    head: ['rule', 'rule text', 'finding', 'why', ...ap, ...exHead(example)],
    style: plainStyle(),
  });
  for (const f of r.findings) {
    // A live line's text starts with where it is, which the rule column says already.
    const where = f.rule !== 'default' ? f.rule.where : undefined;
    const text = where !== undefined && f.text.startsWith(`${where}: `) ? f.text.slice(where.length + 2) : f.text;
    table.push([labelOf(f.rule), text, f.finding, why(f), ...apCell(ap, f), ...exCell(example, f.example)]);
  }
  return `${head}${plural(r.findings.length, 'finding')}\n${table.toString()}`;
}

const classCells = (c: { source: string; destination: string; protocol: string; srcPort: string; dstPort: string }) => [
  c.source,
  c.destination,
  c.protocol,
  c.srcPort,
  c.dstPort,
];
const CLASS_HEAD = ['source', 'destination', 'protocol', 'src port', 'dst port'];

/** A long list's `allows` by allowing line: each line's packets less those the named earlier lines take. */
function allowsByLineTable(r: AllowsByLineReport, head: string, within: string): string {
  if (!r.lines.length) return `${head}allows nothing${within}`;
  const ap = apHead(r.lines);
  const table = new Table({
    head: ['rule', 'rule text', 'packets', 'less those of', ...ap, 'example'],
    style: plainStyle(),
  });
  for (const l of r.lines) {
    const where = l.rule !== 'default' ? l.rule.where : undefined;
    const text =
      l.text === undefined
        ? ''
        : where !== undefined && l.text.startsWith(`${where}: `)
          ? l.text.slice(where.length + 2)
          : l.text;
    table.push([
      labelOf(l.rule),
      text,
      l.packets,
      l.except ? labels(l.except) || '-' : 'every line',
      ...apCell(ap, l),
      l.example,
    ]);
  }
  const by = `by ${plural(r.lines.length, 'allowing line')} (--classes lists them as packet classes)`;
  return `${head}allows ${r.packets} packets${within}, ${by}\n${table.toString()}`;
}

function allowsTable(r: AllowsReport | AllowsByLineReport): string {
  const w = r.within;
  const filtered = [w.source, w.destination, w.protocol, w.srcPort, w.dstPort].some((x) => x !== '*' && x !== 'ANY');
  const within = filtered ? ` of ${w.protocol} ${w.source}:${w.srcPort} -> ${w.destination}:${w.dstPort}` : '';
  const head = `${r.firewall}: ${plural(r.rules, 'rule')}, default ${r.defaultAction}; `;
  if ('lines' in r) return allowsByLineTable(r, head, within);
  if (!r.classes.length) return `${head}allows nothing${within}`;
  const example = r.classes.some((c) => c.example !== undefined);
  const ap = apHead(r.classes);
  const table = new Table({ head: [...CLASS_HEAD, 'allowed by', ...ap, ...exHead(example)], style: plainStyle() });
  for (const c of r.classes)
    table.push([...classCells(c), labels(c.rules), ...apCell(ap, c), ...exCell(example, c.example)]);
  return `${head}allows ${plural(r.classes.length, 'class', 'classes')} of packets${within}\n${table.toString()}`;
}

const sideCell = (s: Side) => `${s.verdict} (${labelOf(s.rule)})`;

function diffTable(r: DiffReport): string {
  const head = `A: ${r.from}\nB: ${r.to}\n`;
  if (r.equivalent) return `${head}equivalent: every packet gets the same verdict from both`;
  const example = r.classes.some((c) => c.example !== undefined);
  const ap = apHead(r.classes);
  const table = new Table({ head: [...CLASS_HEAD, 'A', 'B', ...ap, ...exHead(example)], style: plainStyle() });
  for (const c of r.classes)
    table.push([...classCells(c), sideCell(c.from), sideCell(c.to), ...apCell(ap, c), ...exCell(example, c.example)]);
  return `${head}${plural(r.classes.length, 'class', 'classes')} of packets treated differently\n${table.toString()}`;
}

const sourceOptions = (cmd: Command) =>
  readingOptions(
    cmd
      .argument('[source]', SOURCE_HELP)
      .option('--fwd <nid>', 'a stored /fwd firewall node (as fwd:NID)')
      .option('--simulation <smid>', 'a firewall of a stored simulation result (as simulation:SMID)')
      .option('--node <name>', 'the firewall node of an NFV document or a result (needed when it holds several)'),
  );

/**
 * The reading flags given, as body fields; with them a source goes to the POST operation, which reads a live file
 * with them and refuses them for any other source.
 */
const readingOf = (opts: object) => readingBody(opts as Record<string, unknown>);

/** `--examples`: the query parameter that asks for one example packet per finding or class. */
const examples = (opts: object): Record<string, string> =>
  (opts as { examples?: boolean }).examples ? { examples: 'true' } : {};
const EXAMPLES_HELP = 'one example packet per finding or class, as firewall explain reads it';

const lintCommand = sourceOptions(
  new Command('lint').description(
    'rules no packet reaches (shadowed, redundant-unreachable, unmatchable) and rules whose removal changes no ' +
      'verdict (redundant), each with the rules that block it; exit 1 when it finds any',
  ),
)
  .option('--examples', EXAMPLES_HELP)
  .action(async (arg: string | undefined, opts: SourceOptions, self: Command) => {
    const spec = await oneSource(arg, opts);
    const reading = await readingOf(opts);
    const posted = spec.kind === 'document' || Object.keys(reading).length > 0;
    const query = new URLSearchParams(examples(opts));
    const body = JSON.stringify({ source: spec, ...reading });
    const outcome = posted
      ? await runOperation(self, analysisLint, { body, format: 'json', query })
      : spec.kind === 'fwd'
        ? await runOperation(self, fwdLint, { params: { nid: spec.id }, query })
        : await runOperation(self, simulationsLint, {
            params: { smid: spec.id },
            query: nodeQuery(spec, examples(opts)),
          });
    show(self, outcome, lintTable, (r) => r.findings.length > 0);
  });

interface AllowsOptions extends SourceOptions {
  src?: string;
  dst?: string;
  proto?: string;
  sport?: string;
  dport?: string;
  classes?: boolean;
}

const allowsCommand = sourceOptions(
  new Command('allows').description(
    'what the rules let through, as disjoint packet classes with the rules that allow them; a list of more than ' +
      '1,000 lines by allowing line: its packets less those earlier lines take, how many, and the first',
  ),
)
  .option('--src <address>', 'only traffic from these sources (an address pattern or prefix A.B.C.D/P)')
  .option('--dst <address>', 'only traffic to these destinations')
  .option('--proto <protocol>', 'only this protocol: ANY, TCP, UDP or OTHER')
  .option('--sport <ports>', 'only these source ports (N or A-B)')
  .option('--dport <ports>', 'only these destination ports')
  .option('--examples', EXAMPLES_HELP)
  .option(
    '--classes',
    'a list of more than 1,000 lines as packet classes, not by allowing line (refused past 200,000 boxes)',
  )
  .action(async (arg: string | undefined, opts: AllowsOptions, self: Command) => {
    const spec = await oneSource(arg, opts);
    const filter: Record<string, string> = { ...examples(opts), ...(opts.classes ? { classes: 'true' } : {}) };
    for (const key of ['src', 'dst', 'proto', 'sport', 'dport'] as const) {
      const v = opts[key];
      if (v !== undefined) filter[key] = v;
    }
    const query = new URLSearchParams(filter);
    const reading = await readingOf(opts);
    const body = JSON.stringify({ source: spec, ...reading });
    const outcome =
      spec.kind === 'document' || Object.keys(reading).length > 0
        ? await runOperation(self, analysisAllows, { body, format: 'json', query })
        : spec.kind === 'fwd'
          ? await runOperation(self, fwdAllows, { params: { nid: spec.id }, query })
          : await runOperation(self, simulationsAllows, { params: { smid: spec.id }, query: nodeQuery(spec, filter) });
    // An answer saying what is allowed is no failure, whatever it allows.
    show(self, outcome, allowsTable, () => false);
  });

const collect = (value: string, previous: string[]) => [...previous, value];

const diffCommand = readingOptions(new Command('diff'))
  .description(
    'the packets two rule lists treat differently, as packet classes with the verdict and deciding rule in each; ' +
      'exit 1 when they differ',
  )
  .argument('<a>', `the earlier rules: ${SOURCE_HELP}`)
  .argument('<b>', 'the later rules, the same kinds')
  .option('--node <name>', 'the firewall of NFV documents and results; twice: of A, then of B', collect, [])
  .option('--examples', EXAMPLES_HELP)
  .action(async (a: string, b: string, opts: { node: string[] } & Record<string, unknown>, self: Command) => {
    if (opts.node.length > 2) throw badRequest(`--node: given ${opts.node.length} times; once for both, or twice`);
    const needs = (arg: string) => !arg.startsWith('fwd:');
    const nodes = opts.node.length === 2 ? opts.node : [opts.node[0], opts.node[0]];
    if (opts.node.length === 1 && !needs(a) && !needs(b))
      throw badRequest(`--node ${quote(opts.node[0])}: ${a} and ${b} are firewall nodes already`);
    const from = await sourceOf(a, needs(a) || opts.node.length === 2 ? nodes[0] : undefined, 'a');
    const to = await sourceOf(b, needs(b) || opts.node.length === 2 ? nodes[1] : undefined, 'b');
    const reading = await readingOf(opts);
    const query = new URLSearchParams(examples(opts));
    const outcome =
      from.kind === 'fwd' && to.kind === 'fwd' && !Object.keys(reading).length
        ? await runOperation(self, fwdDiff, {
            query: new URLSearchParams({ from: String(from.id), to: String(to.id), ...examples(opts) }),
          })
        : await runOperation(self, analysisDiff, {
            body: JSON.stringify({ from, to, ...reading }),
            format: 'json',
            query,
          });
    show(self, outcome, diffTable, (r) => !r.equivalent);
  });

function explainTable(r: Explanation): string {
  const p = r.packet;
  const ports = [p.sport === undefined ? '' : `sport ${p.sport}`, p.dport === undefined ? '' : `dport ${p.dport}`];
  const ifaces = [p.iif === undefined ? '' : `in ${p.iif}`, p.oif === undefined ? '' : `out ${p.oif}`];
  const packet = [p.proto, `${p.src} -> ${p.dst}`, ...ports, ...ifaces].filter(Boolean).join(' ');
  const d = r.decidedBy;
  const head = `${packet}: ${r.verdict}, by ${d.where}${d.why ? ` (${d.why})` : ''}`;
  const table = new Table({ head: ['step', 'chain', 'line', 'text'], style: plainStyle() });
  for (const s of r.trace) table.push([s.kind, s.chain, s.where, s.text.slice(0, 70)]);
  return `${head}\n${table.toString()}`;
}

const explainCommand = readingOptions(
  new Command('explain')
    .description(
      'which line decides one packet, through user chains, gotos and RETURNs: every line it matches, in order, ' +
        'and the deciding one with its file and line; exit 1 when the verdict is unknown',
    )
    .argument('<source>', SOURCE_HELP)
    .argument('<packet>', 'src=A dst=B proto=tcp|udp|NAME [sport=N] [dport=N] [iif=NAME] [oif=NAME]')
    .option('--node <name>', 'the firewall node of an NFV document or a result (needed when it holds several)'),
).action(async (arg: string, packet: string, opts: SourceOptions, self: Command) => {
  const spec = await sourceOf(arg, opts.node, 'source');
  const body = JSON.stringify({ source: spec, packet, ...(await readingOf(opts)) });
  const outcome = await runOperation(self, analysisExplain, { body, format: 'json' });
  show(self, outcome, explainTable, (r) => r.verdict === 'UNKNOWN');
});

export const firewallCommand = group('firewall', 'analyses of a firewall rule list: lint, allows, diff, explain', [
  lintCommand,
  allowsCommand,
  diffCommand,
  explainCommand,
]);
