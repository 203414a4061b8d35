/**
 * Terminal output: where data goes (stdout) and where messages go (stderr), colour that follows NO_COLOR and TTY
 * detection, and tables for humans.
 */
import chalk from 'chalk';
import Table from 'cli-table3';
import { ruleAddressText } from '../model/address.js';
import { toJson } from '../model/schema.js';
import type { Answered } from '../ops/operation.js';

if (process.env.NO_COLOR || !process.stderr.isTTY) chalk.level = 0;

export type OutputFormat = 'xml' | 'json' | 'table';

export const isInteractive = () => Boolean(process.stdin.isTTY && process.stdout.isTTY && !process.env.CI);

/** -q: no messages on stderr but errors. */
export const messages = { quiet: false };

/** A one-line message on stderr (not under --quiet). */
export function say(message: string): void {
  if (!messages.quiet) process.stderr.write(`${message}\n`);
}

export function sayError(message: string): void {
  process.stderr.write(`${chalk.red('nfv:')} ${message.split('\n')[0]}\n`);
}

/**
 * A terminal whose size was never set (`stty size` says `0 0`: script, some CI runners, `docker exec -t`) has 0
 * columns, and progress drawing divides by the width: ora then clears lines without end and the process hangs,
 * Ctrl-C included. Such a stream counts as 80 columns wide, now and after every resize, until the returned
 * function is called.
 */
export function widthAtLeastOne(stream: NodeJS.WriteStream): () => void {
  const fix = () => {
    if (!(stream.columns > 0)) stream.columns = 80;
  };
  fix();
  stream.on('resize', fix);
  return () => stream.off('resize', fix);
}

/** cli-table3 colours its borders even when piped or under NO_COLOR; this turns that off. */
export const plainStyle = () => (chalk.level === 0 || !process.stdout.isTTY ? { head: [], border: [] } : undefined);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** At most this many names in a cell; longer lists are summarised as a count (a graph of 241 nodes is "241"). */
const MAX_NAMES = 3;

/** A cell: scalars as they are; short lists as their names, longer ones as a count; objects as their scalar fields. */
function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) {
    const names = v.map((x) =>
      isRecord(x) ? (typeof x.name === 'string' ? x.name : undefined) : typeof x !== 'object' ? String(x) : undefined,
    );
    if (v.length <= MAX_NAMES && names.every((n) => n !== undefined)) return names.join(', ');
    return String(v.length);
  }
  if (isRecord(v)) {
    // Scalar fields as k=v, list fields as their length: {nodeMetrics: [...3]} is "nodeMetrics: 3".
    const parts = Object.entries(v).flatMap(([k, x]) =>
      x === null || x === undefined
        ? []
        : Array.isArray(x)
          ? [`${k}: ${x.length}`]
          : typeof x === 'object'
            ? [k]
            : [`${k}=${String(x)}`],
    );
    return parts.join(' ');
  }
  return String(v);
}

type Row = Record<string, unknown>;
type Column = [string, (r: Row) => unknown];

const count = (v: unknown) => (Array.isArray(v) ? v.length : 0);
const rulesOf = (r: Row) => ((r.configuration as Row | undefined)?.firewall as Row | undefined) ?? {};
/** The kind of a node's configuration: its one non-id, non-name field (webclient, nat, firewall, ...). */
const configurationKind = (r: Row) =>
  Object.keys((r.configuration as Row | undefined) ?? {}).find(
    (k) => k !== 'id' && k !== 'name' && k !== 'description',
  ) ?? '';

/** Columns per kind of resource, recognised by its fields (the way `kubectl get` chooses columns per kind). */
const KINDS: { is: (r: Row) => boolean; columns: Column[] }[] = [
  {
    is: (r) => r.functionalType === 'FIREWALL' && isRecord(r.configuration),
    columns: [
      ['id', (r) => r.id],
      ['name', (r) => r.name],
      ['default', (r) => rulesOf(r).defaultAction ?? 'DENY'],
      ['rules', (r) => count(rulesOf(r).elements)],
    ],
  },
  {
    is: (r) => Array.isArray(r.node),
    columns: [
      ['id', (r) => r.id],
      ['service graph', (r) => r.serviceGraph ?? false],
      ['nodes', (r) => count(r.node)],
    ],
  },
  {
    is: (r) => typeof r.name === 'string' && ('functionalType' in r || 'neighbour' in r),
    columns: [
      ['id', (r) => r.id],
      ['name', (r) => r.name],
      ['function', (r) => r.functionalType ?? '(allocation place)'],
      ['neighbours', (r) => r.neighbour],
      ['configuration', (r) => configurationKind(r)],
    ],
  },
  {
    is: (r) => Array.isArray(r.property),
    columns: [
      ['id', (r) => r.id],
      ['properties', (r) => count(r.property)],
    ],
  },
  {
    is: (r) => typeof r.src === 'string' && typeof r.dst === 'string',
    columns: [
      ['id', (r) => r.id],
      ['requirement', (r) => r.name],
      ['from', (r) => r.src],
      ['to', (r) => r.dst],
      ['protocol', (r) => r.lv4Proto ?? 'ANY'],
      ['ports', (r) => `${r.srcPort ?? '*'} -> ${r.dstPort ?? '*'}`],
      ['holds', (r) => r.isSat ?? ''],
    ],
  },
  {
    is: (r) => Array.isArray(r.hosts) && Array.isArray(r.connections),
    columns: [
      ['id', (r) => r.id],
      ['hosts', (r) => count(r.hosts)],
      ['connections', (r) => count(r.connections)],
    ],
  },
];

/** A rule address as tables show it: CIDR where it is a prefix (the document keeps the form it was given). */
const shown = (address: unknown) => (typeof address === 'string' ? ruleAddressText(address) : address);

function rulesTable(node: Row): string {
  const rules = (rulesOf(node).elements as Row[] | undefined) ?? [];
  if (!rules.length) return 'no rules';
  const table = new Table({
    head: ['rule', 'action', 'source', 'destination', 'protocol', 'src port', 'dst port'],
    style: plainStyle(),
  });
  for (const r of rules)
    table.push(
      [
        r.id,
        r.action ?? 'DENY',
        shown(r.source),
        shown(r.destination),
        r.protocol ?? 'ANY',
        r.srcPort ?? '*',
        r.dstPort ?? '*',
      ].map(cell),
    );
  return table.toString();
}

/** Tables for any resource: the rows are its first list of objects, the columns chosen per kind, or its fields. */
export function tableOf(value: unknown): string {
  if (Array.isArray(value) && value.every(isRecord)) return tableOf({ items: value });
  if (!isRecord(value)) return Array.isArray(value) ? value.map(cell).join('\n') : cell(value);
  const rowsKey = Object.keys(value).find((k) => Array.isArray(value[k]) && (value[k] as unknown[]).every(isRecord));
  const rows = rowsKey ? (value[rowsKey] as Row[]) : [value];
  const header = Object.entries(value)
    .filter(([k, v]) => k !== rowsKey && (typeof v !== 'object' || v === null))
    .map(([k, v]) => `${k}: ${v}`)
    .join('  ');
  const kind = rows.length ? KINDS.find((k) => rows.every(k.is)) : undefined;
  // One firewall node: its policy as well, rule by rule in first-match order.
  if (rowsKey === undefined && kind === KINDS[0]) return `${tableOf([value])}\n${rulesTable(value)}`;
  const columns: Column[] =
    kind?.columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))].map((c) => [c, (r: Row) => r[c]]);
  const table = new Table({ head: columns.map(([h]) => h), style: plainStyle() });
  for (const r of rows) table.push(columns.map(([, get]) => cell(get(r))));
  const title = rowsKey === undefined && kind ? '' : header ? `${header}\n` : '';
  return `${title}${rows.length ? table.toString() : `(no ${rowsKey ?? 'items'})`}`;
}

/** The table form of an outcome's data, from its JSON model form. */
export function tableOfOutcome({ op, reply }: Answered): string {
  switch (reply.kind) {
    case 'envelope': {
      if (typeof op.reply !== 'object') return tableOf(reply.content);
      const type = op.reply.envelope;
      return reply.content
        .map((item) => {
          if (type.item === 'id' || type.item === 'ids') return tableOf(item);
          const t = type.item;
          if (type.many) return tableOf({ [t.name]: (item as unknown[]).map((x) => toJson(t, x)) });
          return tableOf(toJson(t, item));
        })
        .join('\n');
    }
    case 'text':
      return reply.body;
    case 'json':
      return tableOf(reply.value);
    default:
      return '';
  }
}

export function writeData(text: string): void {
  if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}
