/**
 * npm run bench:inventory: a synthetic inventory (1,000 nodes x 100 resources, 10,000 reports with events) is
 * ingested through the ingest commands, then representative queries are timed through the evaluator and through
 * HTTP (nfv's listener on 127.0.0.1), each beside a baseline measured in the same run: a plain JavaScript filter
 * over the same rows (the resources of active nodes) with the same predicate (plus the same sort and slice for
 * the paging query).
 * Prints a table and writes bench-results/inventory.{md,json}.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { listen } from '../http/server.js';
import { indexOf, resources, type ResourceItem } from '../inventory/entities.js';
import { applyCommand, type InventoryData } from '../inventory/ingest.js';
import { queryEntity } from '../inventory/service.js';
import { INVENTORY_AREA } from '../ops/v4.js';
import { Workspace } from '../store/workspace.js';
import { REPO, median } from './reference.js';

const NODES = 1000;
const PER_NODE = 100;
const REPORTS = 10_000;
const TYPES = ['File', 'Service', 'Package', 'User', 'Exec'];

let seed = 7;
const rand = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) >>> 8) % n;
const node = (k: number) => `node-${String(k).padStart(4, '0')}.example`;
const ts = (day: number, minute = 0) => new Date(Date.UTC(2025, 0, 1 + day, 0, minute)).toISOString();

function commands(): unknown[] {
  const out: unknown[] = [];
  for (let n = 0; n < NODES; n++) {
    const res = Array.from({ length: PER_NODE }, (_, k) => {
      const type = TYPES[k % TYPES.length]!;
      return {
        type,
        title: type === 'File' ? `/etc/conf.d/app-${k}` : `${type.toLowerCase()}-${k}`,
        exported: rand(50) === 0,
        tags: [`role-${rand(20)}`, type.toLowerCase(), 'managed'],
        file: `/etc/puppet/manifests/site-${n % 10}.pp`,
        line: 1 + rand(400),
        parameters: { ensure: rand(10) === 0 ? 'absent' : 'present', owner: `u${rand(5)}`, size: rand(10_000) },
      };
    });
    out.push({ command: 'replace catalog', version: 9, payload: { certname: node(n), version: '1', environment: n % 3 ? 'PROD' : 'DEV', producer_timestamp: ts(0), resources: res } });
  }
  for (let r = 0; r < REPORTS; r++) {
    const certname = node(r % NODES);
    const day = Math.floor(r / NODES);
    out.push({
      command: 'store report',
      version: 8,
      received: ts(day, 5),
      payload: {
        certname, puppet_version: '8.1.0', report_format: 12, configuration_version: `c${day}`, start_time: ts(day), end_time: ts(day, 2),
        producer_timestamp: ts(day, 3), transaction_uuid: null, environment: 'PROD', status: rand(10) === 0 ? 'failed' : 'changed', noop: false,
        metrics: [{ category: 'time', name: 'total', value: rand(100) / 10 }], logs: [],
        resources: Array.from({ length: 3 }, (_, k) => ({
          resource_type: 'Service', resource_title: `service-${k * 5 + 1}`, timestamp: ts(day, 1), skipped: false, file: null, line: null,
          containment_path: ['Stage[main]', 'Role', `Service[service-${k}]`],
          events: [{ status: rand(8) === 0 ? 'failure' : 'success', timestamp: ts(day, 1), property: 'ensure', name: null, new_value: 'running', old_value: 'stopped', message: null }],
        })),
      },
    });
  }
  return out;
}

interface Case {
  name: string;
  params: Record<string, unknown>;
  baseline: (rows: ResourceItem[]) => ResourceItem[];
}

const CASES: Case[] = [
  { name: 'type and title equality', params: { query: ['and', ['=', 'type', 'File'], ['=', 'title', '/etc/conf.d/app-40']] }, baseline: (rows) => rows.filter((r) => r.type === 'File' && r.title === '/etc/conf.d/app-40') },
  { name: 'tag', params: { query: ['=', 'tag', 'role-7'] }, baseline: (rows) => rows.filter((r) => r.tags.includes('role-7')) },
  { name: 'parameter', params: { query: ['=', ['parameter', 'ensure'], 'absent'] }, baseline: (rows) => rows.filter((r) => r.parameters.ensure === 'absent') },
  { name: 'regex on title', params: { query: ['~', 'title', '^/etc/conf\\.d/app-1[0-9]$'] }, baseline: (rows) => rows.filter((r) => /^\/etc\/conf\.d\/app-1[0-9]$/.test(r.title)) },
  { name: 'line range', params: { query: ['and', ['>=', 'line', 100], ['<', 'line', 104]] }, baseline: (rows) => rows.filter((r) => r.line !== null && r.line >= 100 && r.line < 104) },
  {
    name: 'and/or/not nesting',
    params: { query: ['and', ['or', ['=', 'type', 'Service'], ['=', 'type', 'User']], ['not', ['=', 'environment', 'PROD']], ['=', 'exported', true]] },
    baseline: (rows) => rows.filter((r) => (r.type === 'Service' || r.type === 'User') && r.environment !== null && r.environment !== 'PROD' && r.exported),
  },
  {
    name: 'paging with order_by',
    params: { query: ['=', 'type', 'Package'], order_by: [{ field: 'title', order: 'desc' }, { field: 'certname' }], limit: '50', offset: '100' },
    baseline: (rows) =>
      rows
        .filter((r) => r.type === 'Package')
        .sort((a, b) => (a.title < b.title ? 1 : a.title > b.title ? -1 : a.certname < b.certname ? -1 : a.certname > b.certname ? 1 : 0))
        .slice(100, 150),
  },
];

const search = (params: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));

function timed<T>(fn: () => T, runs = 15): { ms: number; result: T } {
  const times: number[] = [];
  let result!: T;
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    result = fn();
    times.push(performance.now() - t0);
  }
  return { ms: median(times), result };
}

const dir = mkdtempSync(path.join(tmpdir(), 'nfv-bench-inventory-'));
const ws = new Workspace(dir);
const all = commands();
let started = performance.now();
await ws.mutate(INVENTORY_AREA, (data) => {
  for (const c of all) applyCommand(data, c, Date.now());
});
const ingestSeconds = (performance.now() - started) / 1000;
started = performance.now();
const data: InventoryData = await ws.read(INVENTORY_AREA);
const index = indexOf(data);
const loadSeconds = (performance.now() - started) / 1000;

const { server, url } = await listen(ws, '127.0.0.1', 0);
const table = new Table({ head: ['query', 'rows', 'baseline ms', 'evaluator ms', 'evaluator/baseline', 'HTTP ms', 'HTTP/baseline'], style: { head: [], border: [] } });
const results: Record<string, unknown>[] = [];
for (const c of CASES) {
  const base = timed(() => c.baseline(index.activeResources));
  const ours = timed(() => queryEntity(resources, data, search(c.params)));
  if (ours.result.rows.length !== base.result.length) throw new Error(`${c.name}: ${ours.result.rows.length} rows, baseline ${base.result.length}`);
  const times: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v4/resources?${search(c.params)}`);
    await res.json();
    times.push(performance.now() - t0);
  }
  const http = median(times);
  const ratio = ours.ms / base.ms;
  results.push({ query: c.name, rows: base.result.length, baselineMs: base.ms, evaluatorMs: ours.ms, ratio, httpMs: http, httpRatio: http / base.ms });
  table.push([c.name, base.result.length, base.ms.toFixed(2), ours.ms.toFixed(2), `${ratio.toFixed(2)}x`, http.toFixed(1), `${(http / base.ms).toFixed(1)}x`]);
}
server.close();
const within = results.filter((r) => (r.ratio as number) <= 3).length;
const lines = [
  `inventory: ${NODES} nodes x ${PER_NODE} resources (${index.resources.length}), ${REPORTS} reports, ${index.events.length} events`,
  `ingest ${ingestSeconds.toFixed(1)} s (one locked write); load + index ${loadSeconds.toFixed(1)} s`,
  table.toString(),
  `evaluator within 3x of the plain filter on ${within} of ${results.length} queries (medians of 15 runs; HTTP: medians of 5, JSON encoding and transfer included)`,
];
process.stdout.write(`${lines.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(path.join(out, 'inventory.md'), `# Inventory benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`);
writeFileSync(path.join(out, 'inventory.json'), `${JSON.stringify({ ingestSeconds, loadSeconds, results }, null, 2)}\n`);
process.exit(0);
