/**
 * Terminal output: where data goes (stdout) and where messages go (stderr), colour that follows NO_COLOR and TTY
 * detection, and tables for humans.
 */
import chalk from 'chalk';
import Table from 'cli-table3';
import { toJson } from '../model/schema.js';
import type { Outcome } from '../ops/operation.js';

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

/** cli-table3 colours its borders even when piped or under NO_COLOR; this turns that off. */
export const plainStyle = () => (chalk.level === 0 || !process.stdout.isTTY ? { head: [], border: [] } : undefined);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A cell: scalars as they are, lists of named things as their names, other lists as a count. */
function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) {
    if (v.every((x) => isRecord(x) && typeof x.name === 'string')) return v.map((x) => (x as { name: string }).name).join(', ');
    if (v.every((x) => typeof x !== 'object')) return v.join(', ');
    return `${v.length} items`;
  }
  if (isRecord(v)) return Object.keys(v).join(', ');
  return String(v);
}

/** Tables for any resource: the rows are its first list of objects, the columns their fields. */
export function tableOf(value: unknown): string {
  if (!isRecord(value)) return Array.isArray(value) ? value.map(cell).join('\n') : cell(value);
  const rowsKey = Object.keys(value).find((k) => Array.isArray(value[k]) && (value[k] as unknown[]).every(isRecord));
  const rows = rowsKey ? (value[rowsKey] as Record<string, unknown>[]) : [value];
  const header = Object.entries(value)
    .filter(([k, v]) => k !== rowsKey && (typeof v !== 'object' || v === null))
    .map(([k, v]) => `${k}: ${v}`)
    .join('  ');
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const table = new Table({ head: columns, style: plainStyle() });
  for (const r of rows) table.push(columns.map((c) => cell(r[c])));
  return `${header ? `${header}\n` : ''}${rows.length ? table.toString() : `(no ${rowsKey ?? 'items'})`}`;
}

/** The table form of an outcome's data, from its JSON model form. */
export function tableOfOutcome(outcome: Outcome): string {
  const kind = outcome.op?.reply;
  if (kind && typeof kind === 'object') {
    const type = kind.envelope;
    return (outcome.reply.content ?? [])
      .map((item) => {
        if (type.item === 'id' || type.item === 'ids') return tableOf(item);
        const t = type.item;
        if (type.many) return tableOf({ [t.name]: (item as unknown[]).map((x) => toJson(t, x)) });
        return tableOf(toJson(t, item));
      })
      .join('\n');
  }
  if (outcome.reply.text) return outcome.reply.text.body;
  return tableOf(outcome.reply.value);
}

export function writeData(text: string): void {
  if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}
