import Table from 'cli-table3';
import { Command } from 'commander';
import { ingestBatch, ingestCommand, queryEndpoints, rootQuery, type QueryOperations } from '../../ops/inventory.js';
import { invoke } from '../../ops/operation.js';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { EXIT, NfvError } from '../../model/errors.js';
import { parseCount, parseParam } from '../../model/ids.js';
import { readInput } from '../files.js';
import { group } from '../op-command.js';
import { outputFormat, state, workspaceOf } from '../options.js';
import { printOutcome, runOperation } from '../requests.js';
import { badRequest } from '../../model/errors.js';
import { plainStyle, say, sayError, writeData } from '../output.js';
import { plural } from '../../model/words.js';

const VERSIONS = {
  catalog: ['replace catalog', 9],
  facts: ['replace facts', 5],
  report: ['store report', 8],
  deactivate: ['deactivate node', 3],
} as const;

interface CommandLine {
  where: string;
  text: string;
  /** The line parsed, or why it is not JSON. */
  body: unknown;
}

/** Command bodies of JSON Lines files, or of every .jsonl / .json file of a folder (in name order), or stdin. */
async function* commandLines(paths: string[]): AsyncGenerator<CommandLine> {
  const files: string[] = [];
  for (const p of paths.length ? paths : ['-']) {
    if (p !== '-' && (await stat(p).catch(() => undefined))?.isDirectory()) {
      const names = (await readdir(p)).filter((n) => /\.jsonl?$/.test(n)).sort();
      files.push(...names.map((n) => path.join(p, n)));
    } else files.push(p);
  }
  for (const file of files) {
    const text = await readInput(file);
    const lines = text.split('\n');
    for (let k = 0; k < lines.length; k++) {
      const line = lines[k]!.trim();
      if (line === '') continue;
      const where = `${file === '-' ? 'stdin' : file}:${k + 1}`;
      try {
        yield { where, text: line, body: JSON.parse(line) };
      } catch (e) {
        yield { where, text: line, body: badRequest(`not JSON: ${(e as Error).message}`) };
      }
    }
  }
}

/**
 * Batch ingest: commands go in batches through POST /v4/commands/batch, with a progress line on a terminal. Two
 * batches are under way at a time: the next is read and checked while the one before is written.
 */
async function ingestMany(self: Command, paths: string[]): Promise<number> {
  const ws = workspaceOf(self);
  const totals = { commands: 0, applied: 0, ignored: 0, refused: 0 };
  const refusals: { where: string; message: string }[] = [];
  const started = performance.now();
  const showProgress = process.stderr.isTTY && !process.env.CI;
  let batch: CommandLine[] = [];
  let bytes = 0;
  let written: Promise<void> = Promise.resolve();
  /** Sends the batch; resolves when the batch before it is counted (so at most two are under way). */
  const flush = (): Promise<void> => {
    if (!batch.length) return written;
    const sent = batch;
    const good = sent.filter((c) => !(c.body instanceof NfvError));
    // The lines' own text, each checked to be one JSON value: the batch needs no encoding again.
    const outcome = invoke(ingestBatch, ws, { body: `[${good.map((c) => c.text).join(',')}]`, format: 'json' });
    const before = written;
    written = (async () => {
      const answered = await outcome;
      await before;
      if (!answered.ok) throw new NfvError(answered.status, answered.error);
      for (const c of sent) if (c.body instanceof NfvError) refusals.push({ where: c.where, message: c.body.message });
      answered.reply.value.forEach((r, k) => {
        if ('error' in r) refusals.push({ where: good[k]!.where, message: r.error.message });
        else if (r.applied) totals.applied++;
        else totals.ignored++;
      });
      totals.commands += sent.length;
      if (showProgress) {
        const took = ((performance.now() - started) / 1000).toFixed(1);
        process.stderr.write(`\r\x1b[Kingested ${plural(totals.commands, 'command')} (${took} s)`);
      }
    })();
    // Awaited in turn; marked handled now so that its failure is not reported before then.
    written.catch(() => undefined);
    batch = [];
    bytes = 0;
    return before;
  };
  for await (const c of commandLines(paths)) {
    batch.push(c);
    bytes += c.text.length;
    if (batch.length >= 1000 || bytes > 8 * 1024 * 1024) await flush();
  }
  await flush();
  await written;
  if (showProgress) process.stderr.write('\n');
  totals.refused = refusals.length;
  writeData(
    JSON.stringify(
      {
        ...totals,
        seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
        refusals: refusals.slice(0, 20),
      },
      null,
      2,
    ),
  );
  for (const r of refusals.slice(0, 5)) sayError(`${r.where}: ${r.message}`);
  return refusals.length ? EXIT.invalid : EXIT.ok;
}

const ingest = new Command('ingest')
  .description(
    'feed the inventory: a catalog (wire format v9), facts (v5), a report (v8), a node deactivation (v3), ' +
      'or many commands',
  )
  .argument('<kind>', 'catalog, facts, report, deactivate, or commands (JSON Lines of {command, version, payload})')
  .argument('[files...]', 'the payload as JSON; for commands: JSON Lines files or folders of them (- or none: stdin)')
  .action(async (kind: string, files: string[], _opts: unknown, self: Command) => {
    if (kind === 'commands') {
      state.exitCode = await ingestMany(self, files);
      return;
    }
    const spec = VERSIONS[kind as keyof typeof VERSIONS];
    if (!spec) {
      self.error(`error: kind must be catalog, facts, report, deactivate or commands, not '${kind}'`, { exitCode: 2 });
    }
    if (files.length > 1) self.error('error: one payload file at a time (or use: ingest commands)', { exitCode: 2 });
    const file = files[0];
    const text = await readInput(file);
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch (e) {
      self.error(`error: the payload is not JSON: ${(e as Error).message}`, { exitCode: 2 });
    }
    const body = JSON.stringify({ command: spec[0], version: spec[1], payload });
    const outcome = await runOperation(self, ingestCommand, { body, format: 'json' });
    state.exitCode = printOutcome(self, outcome);
  });

interface QueryOptions {
  query?: string;
  limit?: string;
  offset?: string;
  orderBy?: string;
  total?: boolean;
  summarizeBy?: string;
  countBy?: string;
  countsFilter?: string;
}

/** Readable columns per endpoint, for a terminal. */
const COLUMNS: Record<string, [string, (r: any) => unknown][]> = {
  resources: [
    ['certname', (r) => r.certname],
    ['type', (r) => r.type],
    ['title', (r) => r.title],
    ['file:line', (r) => (r.file ? `${r.file}${r.line === null ? '' : `:${r.line}`}` : '')],
  ],
  reports: [
    ['certname', (r) => r.certname],
    ['status', (r) => r.status],
    ['end time', (r) => r.end_time],
    ['hash', (r) => r.hash],
  ],
  events: [
    ['certname', (r) => r.certname],
    ['status', (r) => r.status],
    ['resource', (r) => `${r.resource_type}[${r.resource_title}]`],
    ['timestamp', (r) => r.timestamp],
  ],
  nodes: [
    ['certname', (r) => r.certname],
    ['latest report', (r) => r.latest_report_status],
    ['report time', (r) => r.report_timestamp],
    ['environment', (r) => r.catalog_environment ?? r.facts_environment],
    ['deactivated', (r) => r.deactivated],
  ],
  facts: [
    ['certname', (r) => r.certname],
    ['name', (r) => r.name],
    ['value', (r) => r.value],
  ],
};

function table(endpoint: string, rows: any[]): string {
  // fact-names answers strings: one a line.
  if (rows.every((r) => typeof r === 'string')) return rows.length ? rows.join('\n') : `(no ${endpoint})`;
  const extracted = rows.length > 0 && !COLUMNS[endpoint]?.every(([, get]) => get(rows[0]) !== undefined);
  const cols: [string, (r: any) => unknown][] =
    COLUMNS[endpoint] && !extracted
      ? COLUMNS[endpoint]!
      : [...new Set(rows.flatMap((r) => Object.keys(r)))].map((k) => [k, (r: any) => r[k]]);
  const t = new Table({ head: cols.map(([h]) => h), style: plainStyle() });
  for (const r of rows)
    t.push(
      cols.map(([, get]) => {
        const v = get(r);
        return v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      }),
    );
  return rows.length ? t.toString() : `(no ${endpoint})`;
}

function queryCommand(
  endpoint: string,
  description: string,
  pick: (args: string[]) => { endpoint: QueryOperations; params?: Record<string, string | number> },
  args: string[] = [],
  counts = false,
): Command {
  const cmd = new Command(endpoint).description(description);
  for (const a of args) cmd.argument(`[${a}]`);
  cmd
    .option('-q, --query <json>', 'a v4 query (AST), e.g. \'["=","type","File"]\'')
    .option('--limit <n>', 'at most N rows')
    .option('--offset <n>', 'skip N rows')
    .option('--order-by <json>', 'e.g. \'[{"field":"title","order":"desc"}]\'')
    .option('--total', 'report the number of matching rows (X-Records) on stderr');
  if (counts) {
    cmd
      .requiredOption('--summarize-by <what>', 'resource, containing_class or certname')
      .option('--count-by <what>', 'resource or certname')
      .option('--counts-filter <json>', 'e.g. \'[">","failures",0]\'');
  }
  cmd.action(async (...all: unknown[]) => {
    const self = all.at(-1) as Command;
    const opts = self.opts<QueryOptions>();
    if (opts.limit !== undefined && parseCount('--limit', opts.limit) === 0)
      throw badRequest('--limit 0: give at least 1');
    if (opts.offset !== undefined) parseCount('--offset', opts.offset);
    const values = all.slice(0, args.length).filter((x): x is string => typeof x === 'string');
    const q = new URLSearchParams();
    const set = (k: string, v: string | undefined) => v !== undefined && q.set(k, v);
    set('query', opts.query);
    set('limit', opts.limit);
    set('offset', opts.offset);
    set('order_by', opts.orderBy);
    if (opts.total) q.set('include_total', 'true');
    set('summarize_by', opts.summarizeBy);
    set('count_by', opts.countBy);
    set('counts_filter', opts.countsFilter);
    const picked = pick(values);
    const outcome = await runOperation(self, picked.endpoint.get, { params: picked.params, query: q });
    if (!outcome.ok || outputFormat(self) !== 'table') {
      state.exitCode = printOutcome(self, outcome);
    } else writeData(table(endpoint, outcome.reply.value));
    const total = outcome.ok ? outcome.reply.headers?.['X-Records'] : undefined;
    if (total !== undefined) say(`total: ${total}`);
  });
  return cmd;
}

/** The entity a query names (`["from", "reports", ...]`, `reports { ... }`), when it has readable columns. */
function entityOf(text: string): string {
  let name: unknown = /^\s*([a-z_]+)/.exec(text)?.[1];
  if (/^\s*\[/.test(text)) {
    try {
      name = (JSON.parse(text) as unknown[])[1];
    } catch {
      name = undefined;
    }
  }
  return typeof name === 'string' && Object.hasOwn(COLUMNS, name) ? name : 'rows';
}

/** `inventory query`: PQL or an AST through PuppetDB's root query endpoint, printed as `inventory resources` does. */
const pqlQuery = new Command('query')
  .description('a PQL query, or a v4 AST ["from", entity, ...], of any entity (active nodes only)')
  .argument('<query>', 'e.g. \'resources[certname, title] { type = "File" }\'; - reads it from stdin')
  .option('--limit <n>', 'at most N rows (a limit in the query wins)')
  .option('--offset <n>', 'skip N rows (an offset in the query wins)')
  .option('--order-by <json>', 'e.g. \'[{"field":"title","order":"desc"}]\' (an order by in the query wins)')
  .option('--total', 'report the number of matching rows (X-Records) on stderr')
  .option('--ast-only', 'print the query as the v4 AST instead of running it')
  .action(async (text: string, opts: QueryOptions & { astOnly?: boolean }, self: Command) => {
    if (opts.limit !== undefined && parseCount('--limit', opts.limit) === 0)
      throw badRequest('--limit 0: give at least 1');
    if (opts.offset !== undefined) parseCount('--offset', opts.offset);
    const query = text === '-' ? await readInput('-') : text;
    const q = new URLSearchParams({ query });
    if (opts.limit !== undefined) q.set('limit', opts.limit);
    if (opts.offset !== undefined) q.set('offset', opts.offset);
    if (opts.orderBy !== undefined) q.set('order_by', opts.orderBy);
    if (opts.total) q.set('include_total', 'true');
    if (opts.astOnly) q.set('ast_only', 'true');
    const outcome = await runOperation(self, rootQuery.get, { query: q });
    if (!outcome.ok || outputFormat(self) !== 'table') state.exitCode = printOutcome(self, outcome);
    else if (opts.astOnly) writeData(JSON.stringify(outcome.reply.value, null, 2));
    else writeData(table(entityOf(query), outcome.reply.value));
    const total = outcome.ok ? outcome.reply.headers?.['X-Records'] : undefined;
    if (total !== undefined) say(`total: ${total}`);
  });

/** Resources of all types, of one TYPE, or of one TYPE and TITLE. */
function resourcesOf([type, title]: string[]) {
  if (type === undefined) return { endpoint: queryEndpoints.resources };
  if (title === undefined)
    return { endpoint: queryEndpoints['resources.type'], params: { type: parseParam('type', type) } };
  const params = { type: parseParam('type', type), title: parseParam('title', title) };
  return { endpoint: queryEndpoints['resources.title'], params };
}

export const inventoryCommand = group(
  'inventory',
  'resources, facts, catalogs and run reports of configuration-managed nodes (PuppetDB v4 queries)',
  [
    ingest,
    pqlQuery,
    queryCommand('resources', 'resources of active nodes, optionally of one TYPE (and TITLE)', resourcesOf, [
      'type',
      'title',
    ]),
    queryCommand('reports', 'run reports', () => ({ endpoint: queryEndpoints.reports })),
    queryCommand('events', 'resource events of the reports', () => ({ endpoint: queryEndpoints.events })),
    queryCommand(
      'event-counts',
      'event counts per resource, class or node',
      () => ({ endpoint: queryEndpoints['event-counts'] }),
      [],
      true,
    ),
    queryCommand(
      'aggregate-event-counts',
      'event counts summed over subjects',
      () => ({ endpoint: queryEndpoints['aggregate-event-counts'] }),
      [],
      true,
    ),
    ...(
      [
        ['nodes', 'nodes with their latest report, catalog and facts (active ones unless the query says node_state)'],
        ['facts', "the nodes' top-level facts"],
        ['fact-names', 'the names of facts, sorted'],
        ['factsets', "each node's facts as one record"],
        ['fact-paths', 'the paths of fact leaves, with their types'],
        ['fact-contents', 'the leaves of nested facts, with their paths'],
        ['inventory', "each node's facts, queried with dotted fields (facts.os.family)"],
        ['environments', 'the environments catalogs, facts and reports name'],
        ['producers', 'the producers (Puppet servers) of catalogs, facts and reports'],
        ['catalogs', 'catalogs with their resources and edges'],
        ['edges', 'the edges (relationships) of catalogs'],
      ] as const
    ).map(([name, description]) => queryCommand(name, description, () => ({ endpoint: queryEndpoints[name]! }))),
  ],
);
