/**
 * The flags for reading a live rule set, defined once from the operations' declaration (`ops/reading.ts`) for
 * every command that reads one (`import iptables|nftables`, `firewall lint|allows|diff|explain`), and the JSON
 * body fields they become (the `--ipset` file read here, its text sent).
 */
import { Option, type Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { badRequest } from '../model/errors.js';
import { READING_FIELDS } from '../ops/reading.js';
import { pathProblem } from './files.js';

const collect = (value: string, previous: string[]) => [...previous, value];

/** Adds the reading flags to a command. */
export function readingOptions(cmd: Command): Command {
  for (const f of READING_FIELDS) {
    const option = new Option(f.flag, f.help);
    if (f.kind === 'list') option.argParser(collect).default([]);
    if (f.choices) option.choices(f.choices);
    cmd.addOption(option);
  }
  return cmd;
}

/** Reads a file a flag names, its problem said with the flag. */
export async function readNamed(flag: string, file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw badRequest(`${flag} ${file}: ${pathProblem(e)}`);
  }
}

const camel = (flag: string) =>
  flag
    .split(' ')[0]!
    .slice(2)
    .replace(/-(.)/g, (_, c: string) => c.toUpperCase());

/** The body fields the reading flags given make. */
export async function readingBody(opts: Record<string, unknown>): Promise<Record<string, unknown>> {
  const body: Record<string, unknown> = {};
  for (const f of READING_FIELDS) {
    const v = opts[camel(f.flag)];
    if (v === undefined || v === false || (Array.isArray(v) && !v.length)) continue;
    body[f.field] = f.kind === 'file' ? await readNamed(f.flag.split(' ')[0]!, String(v)) : v;
  }
  return body;
}
