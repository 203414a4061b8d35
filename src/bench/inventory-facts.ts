/**
 * The fact entities at fleet size (part of npm run bench:inventory; alone: `node dist/bench/inventory-facts.js`):
 * NFV_BENCH_FACT_NODES nodes (default 10,000) of Facter-like facts (fleet-facts.ts, ~160 leaves each) ingested as
 * replace facts with `nfv inventory ingest commands` on the folder and, with NFV_DATABASE_URL, on PostgreSQL (a
 * fresh database beside the named one, dropped afterwards); then nodes, facts, fact-contents, inventory and five
 * PQL queries over HTTP on each backend (medians of 5) beside a plain-JavaScript baseline over the parsed commands
 * (filter, sort, JSON encoding of the same rows), whose row count must match nfv's; answers compared byte for byte
 * between the backends; and PQL parse and compile time per query.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Table from 'cli-table3';
import pg from 'pg';
import { factLeaves } from '../inventory/facts.js';
import { parsePql } from '../inventory/query/pql.js';
import { factCommands } from './fleet-facts.js';
import { serve } from './inventory-bench.js';
import { compilePql, meanMicroseconds } from './pql-compile.js';
import { NFV_BIN, median, withThisNode } from './reference.js';

interface Payload {
  certname: string;
  environment: string;
  values: Record<string, any>;
}
type Baseline = (payloads: Payload[]) => unknown[];

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const rowsOf = (ps: Payload[], name: string) =>
  ps.map((p) => ({ certname: p.certname, environment: p.environment, name, value: p.values[name] }));

/** The queries: name, URL path and query text under /pdb/query/v4, and the plain baseline of the same answer. */
const QUERIES: [string, string, string | undefined, Baseline][] = [
  ['nodes (all)', '/nodes', undefined, (ps) => ps.map((p) => ({ certname: p.certname }))],
  ['facts name=os', '/facts', '["=","name","os"]', (ps) => rowsOf(ps, 'os')],
  [
    'fact-contents path=memory.system.total_bytes',
    '/fact-contents',
    '["=","path",["memory","system","total_bytes"]]',
    (ps) => ps.map((p) => ({ certname: p.certname, value: p.values.memory.system.total_bytes })),
  ],
  [
    'inventory facts.os.release.major=12',
    '/inventory',
    '["=","facts.os.release.major","12"]',
    (ps) => ps.filter((p) => p.values.os.release.major === '12'),
  ],
  [
    'PQL nodes whose role fact is db',
    '',
    'nodes[certname] { certname in facts[certname] { name = "role" and value = "db" } }',
    (ps) => ps.filter((p) => p.values.role === 'db').map((p) => ({ certname: p.certname })),
  ],
  [
    'PQL facts uptime_days > 300',
    '',
    'facts[certname, value] { name = "uptime_days" and value > 300 }',
    (ps) => ps.filter((p) => p.values.uptime_days > 300).map((p) => [p.certname, p.values.uptime_days]),
  ],
  [
    'PQL fact_contents ~> interface ips',
    '',
    'fact_contents[certname, path, value] { path ~> ["networking", "interfaces", ".*", "ip"] }',
    (ps) =>
      ps.flatMap((p) =>
        Object.entries(p.values.networking.interfaces as Record<string, { ip: string }>)
          .sort(([a], [b]) => byText(a, b))
          .map(([name, i]) => [p.certname, ['networking', 'interfaces', name, 'ip'], i.ip]),
      ),
  ],
  [
    'PQL inventory web nodes of 8+ cpus',
    '',
    'inventory[certname, facts.os.distro.codename] { facts.role = "web" and facts.processors.count >= 8 }',
    (ps) =>
      ps
        .filter((p) => p.values.role === 'web' && p.values.processors.count >= 8)
        .map((p) => [p.certname, p.values.os.distro.codename]),
  ],
  [
    'PQL facts count() group by name',
    '',
    'facts[name, count()] { group by name }',
    (ps) => {
      const counts = new Map<string, number>();
      for (const p of ps) for (const n of Object.keys(p.values)) counts.set(n, (counts.get(n) ?? 0) + 1);
      return [...counts].sort(([a], [b]) => byText(a, b));
    },
  ],
];

const urlOf = (base: string, p: string, query: string | undefined) =>
  `${base}/pdb/query/v4${p}${query === undefined ? '' : `?${new URLSearchParams({ query })}`}`;

export interface FactsBench {
  lines: string[];
  json: Record<string, unknown>;
}

/** Runs the facts benchmark; `progress` tells a terminal where it is. */
export async function factsBench(
  databaseUrl: string | undefined,
  progress: (text: string) => void,
): Promise<FactsBench> {
  const nodes = Number(process.env.NFV_BENCH_FACT_NODES ?? 10_000);
  const work = mkdtempSync(path.join(tmpdir(), 'nfv-bench-facts-'));
  const admin = databaseUrl ? new pg.Client({ connectionString: databaseUrl }) : null;
  const database = `nfv_bench_facts_${process.pid}`;
  try {
    progress(`generating facts of ${nodes} nodes`);
    const commands = factCommands(nodes);
    const file = path.join(work, 'facts.jsonl');
    writeFileSync(file, `${commands.join('\n')}\n`);
    const payloads = commands.map((c) => (JSON.parse(c) as { payload: Payload }).payload);
    const leaves = payloads.reduce((n, p) => n + factLeaves(p.values).length, 0) / nodes;
    const backends: { name: string; args: string[] }[] = [{ name: 'folder', args: [] }];
    if (admin) {
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      const u = new URL(databaseUrl!);
      u.pathname = `/${database}`;
      backends.push({ name: 'PostgreSQL', args: ['--database', u.toString()] });
    }
    const ingest: Record<string, { seconds: number; nodesPerSecond: number }> = {};
    const answers: Record<string, Record<string, { ms: number; rows: number; sha: string }>> = {};
    for (const b of backends) {
      const workspace = path.join(work, `ws-${b.name}`);
      mkdirSync(workspace);
      if (b.args.length)
        execFileSync(NFV_BIN, ['db', 'migrate', '--workspace', workspace, ...b.args], {
          env: withThisNode(),
          stdio: 'ignore',
        });
      progress(`${b.name}: ingesting facts of ${nodes} nodes`);
      const summary = JSON.parse(
        execFileSync(NFV_BIN, ['inventory', 'ingest', 'commands', file, '--workspace', workspace, ...b.args], {
          env: withThisNode(),
          encoding: 'utf8',
        }),
      ) as { seconds: number; applied: number };
      if (summary.applied !== nodes) throw new Error(`${b.name}: ${summary.applied} of ${nodes} factsets applied`);
      ingest[b.name] = { seconds: summary.seconds, nodesPerSecond: nodes / summary.seconds };
      const s = await serve(workspace, b.args);
      try {
        answers[b.name] = {};
        for (const [name, p, query] of QUERIES) {
          progress(`${b.name}: ${name}`);
          const times: number[] = [];
          let body = '';
          for (let k = 0; k < 5; k++) {
            const t0 = performance.now();
            const res = await fetch(urlOf(s.url, p, query));
            body = await res.text();
            times.push(performance.now() - t0);
            if (res.status !== 200) throw new Error(`${b.name}: ${name}: ${res.status} ${body.slice(0, 300)}`);
          }
          // Facts carry the time each backend's ingest received them; everything else must match byte for byte.
          const compared = body.replace(/"(facts_)?timestamp":"[^"]*"/g, '"$1timestamp":""');
          answers[b.name]![name] = {
            ms: median(times),
            rows: (JSON.parse(body) as unknown[]).length,
            sha: createHash('sha256').update(compared).digest('hex'),
          };
        }
      } finally {
        await s.stop();
      }
    }
    progress('PQL parse and compile');
    const table = new Table({
      head: ['query', 'rows', ...backends.map((b) => `${b.name} ms`), 'plain JS ms', 'same bytes', 'PQL µs'],
      style: { head: [], border: [] },
    });
    const rows: Record<string, unknown>[] = [];
    for (const [name, , query, baseline] of QUERIES) {
      const base: number[] = [];
      let plain: unknown[] = [];
      for (let k = 0; k < 5; k++) {
        const t0 = performance.now();
        plain = baseline(payloads);
        void JSON.stringify(plain);
        base.push(performance.now() - t0);
      }
      const folder = answers.folder![name]!;
      if (plain.length !== folder.rows)
        throw new Error(`${name}: nfv answered ${folder.rows} rows, plain ${plain.length}`);
      const pql = name.startsWith('PQL')
        ? { parse: meanMicroseconds([query!], parsePql, 500), compile: meanMicroseconds([query!], compilePql, 500) }
        : undefined;
      const same = backends.every((b) => answers[b.name]![name]!.sha === folder.sha);
      rows.push({
        query: name,
        rows: folder.rows,
        ...Object.fromEntries(backends.map((b) => [b.name, answers[b.name]![name]!.ms])),
        baselineMs: median(base),
        same,
        pql,
      });
      table.push([
        name,
        folder.rows,
        ...backends.map((b) => answers[b.name]![name]!.ms.toFixed(1)),
        median(base).toFixed(1),
        same,
        pql ? `${pql.parse.toFixed(0)} / ${pql.compile.toFixed(0)}` : '',
      ]);
    }
    const ingestLine = backends
      .map(
        (b) =>
          `${b.name} ${ingest[b.name]!.seconds.toFixed(1)} s = ${ingest[b.name]!.nodesPerSecond.toFixed(0)} nodes/s`,
      )
      .join(', ');
    const lines = [
      `facts: ${nodes} nodes, ${leaves.toFixed(0)} fact leaves per node (fleet-facts.ts); ` +
        `replace facts ingest (nfv inventory ingest commands): ${ingestLine}` +
        (admin ? '' : '; PostgreSQL not measured (set NFV_DATABASE_URL)'),
      `fact queries over HTTP (/pdb/query/v4, medians of 5) beside plain JavaScript over the parsed commands; ` +
        `PQL µs = parse / parse + check + compile to rows and SQL:`,
      table.toString(),
    ];
    return { lines, json: { nodes, leavesPerNode: leaves, ingest, queries: rows } };
  } finally {
    if (admin) {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined);
      await admin.end();
    }
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const progress = (text: string) => process.stderr.isTTY && process.stderr.write(`\r\x1b[K${text}`);
  const url = process.env.NFV_DATABASE_URL;
  delete process.env.NFV_DATABASE_URL; // the children choose their backend by flag only
  const { lines } = await factsBench(url, progress);
  progress('');
  process.stdout.write(`${lines.join('\n')}\n`);
}
