/**
 * npm run conformance:inventory [FILE]: loads the dataset of a cases file (default ../shared/inventory-cases.json)
 * through the ingest commands into a fresh workspace, starts `nfv serve`, runs every case over HTTP and prints
 * passed/failed with the differences. Our deliberate departures from PuppetDB are applied to the expectations
 * and listed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { invoke } from '../ops/operation.js';
import { ingestCommand } from '../ops/inventory.js';
import { Workspace } from '../store/workspace.js';
import { REPO, SHARED } from './reference.js';

interface Case {
  name: string;
  method: string;
  path: string;
  params: Record<string, unknown>;
  expect: {
    status: number;
    contentType?: string;
    body?: unknown[];
    bodyContains?: string;
    count?: number;
    ordered?: boolean;
    project?: string[];
    headers?: Record<string, string>;
  };
}

/** Decisions of inventory.md that change what PuppetDB answers, applied to its recorded expectations. */
const DECISIONS = [
  "reports answer agent_version where PuppetDB answers puppet_version (the interface document's name)",
];

const file = path.resolve(process.argv[2] ?? path.join(SHARED, 'inventory-cases.json'));
const { dataset, cases } = JSON.parse(readFileSync(file, 'utf8')) as { dataset: any; cases: Case[] };

const dir = mkdtempSync(path.join(tmpdir(), 'nfv-inventory-'));
const ws = new Workspace(dir);
const ingest = async (body: unknown) => {
  const o = await invoke(ingestCommand, ws, { body: JSON.stringify(body), format: 'json' });
  if (!o.ok) throw new Error(`ingest failed: ${o.error}`);
  return o.reply.value;
};
for (const c of dataset.catalogs) await ingest({ command: 'replace catalog', version: 9, payload: c });
for (const r of dataset.reports) {
  const answer = await ingest({ command: 'store report', version: 8, payload: r.report, received: r.receive_time });
  if (answer.hash !== r.hash) process.stdout.write(`report hash ${answer.hash} differs from the dataset's ${r.hash}\n`);
}
for (const d of dataset.deactivations) await ingest({ command: 'deactivate node', version: 3, payload: d });

const server = spawn(process.execPath, [path.join(REPO, 'bin', 'nfv'), 'serve', '--port', '0', '--workspace', dir], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
const base = await new Promise<string>((resolve, reject) => {
  let err = '';
  server.stderr.on('data', (d: Buffer) => {
    err += d;
    const m = /listening on (\S+)/.exec(err);
    if (m) resolve(m[1]!);
  });
  server.on('exit', () => reject(new Error(`nfv serve exited: ${err}`)));
});

const sortTags = (row: any) => (row && Array.isArray(row.tags) ? { ...row, tags: [...row.tags].sort() } : row);
function normalise(row: any): any {
  if (row === null || typeof row !== 'object') return row;
  if (Array.isArray(row)) return row.map(normalise);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(row).sort()) out[k] = normalise(row[k]);
  const events = (out.resource_events as { data?: unknown[] } | undefined)?.data;
  if (Array.isArray(events))
    (out.resource_events as { data: unknown[] }).data = events
      .map((e) => JSON.stringify(e))
      .sort()
      .map((e) => JSON.parse(e));
  return sortTags(out);
}
/** Our decisions applied to an expected row. */
function decided(row: any): any {
  if (row && typeof row === 'object' && !Array.isArray(row) && 'puppet_version' in row) {
    const { puppet_version, ...rest } = row;
    return { ...rest, agent_version: puppet_version };
  }
  return row;
}

let passed = 0;
const failures: string[] = [];
for (const c of cases) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(c.params)) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const url = `${base}${c.path}${params.size ? `?${params}` : ''}`;
  const res = await fetch(url, { method: c.method });
  const text = await res.text();
  const problems: string[] = [];
  const e = c.expect;
  if (res.status !== e.status) problems.push(`status ${res.status}, expected ${e.status}`);
  if (e.contentType && !(res.headers.get('content-type') ?? '').startsWith(e.contentType))
    problems.push(`content type ${res.headers.get('content-type')}, expected ${e.contentType}`);
  if (e.bodyContains && !text.includes(e.bodyContains))
    problems.push(`body ${JSON.stringify(text.slice(0, 200))} lacks ${JSON.stringify(e.bodyContains)}`);
  for (const [h, v] of Object.entries(e.headers ?? {}))
    if (res.headers.get(h) !== v) problems.push(`header ${h}: ${res.headers.get(h)}, expected ${v}`);
  if (e.body || e.count !== undefined) {
    let actual: any[] = [];
    try {
      actual = JSON.parse(text);
    } catch {
      problems.push(`not JSON: ${text.slice(0, 120)}`);
    }
    if (e.count !== undefined && actual.length !== e.count) problems.push(`${actual.length} rows, expected ${e.count}`);
    if (e.body && Array.isArray(actual)) {
      const project = (r: any) => (e.project ? Object.fromEntries(e.project.map((k) => [k, r[k]])) : r);
      const got = actual.map((r) => JSON.stringify(normalise(project(r))));
      const want = e.body.map((r) => JSON.stringify(normalise(project(decided(r)))));
      const same = e.ordered
        ? got.join('\n') === want.join('\n')
        : [...got].sort().join('\n') === [...want].sort().join('\n');
      if (!same) {
        const missing = want.filter((w) => !got.includes(w));
        const extra = got.filter((g) => !want.includes(g));
        const sample = `missing ${missing.slice(0, 2).join(' ')} extra ${extra.slice(0, 2).join(' ')}`;
        problems.push(`rows differ${e.ordered ? ' (ordered)' : ''}: ${sample}`.slice(0, 900));
      }
    }
  }
  if (problems.length)
    failures.push(`FAIL ${c.name} (${c.path} ${JSON.stringify(c.params).slice(0, 160)}): ${problems.join('; ')}`);
  else passed++;
}
server.kill();
for (const f of failures) process.stdout.write(`${f}\n`);
for (const d of DECISIONS) process.stdout.write(`applied on purpose: ${d}\n`);
process.stdout.write(`inventory conformance: ${passed} passed, ${failures.length} failed (of ${cases.length})\n`);
process.exit(failures.length ? 1 : 0);
