/**
 * The recorded inventory cases (../shared/inventory-cases.json): their dataset loaded through the ingest commands,
 * and every case run over HTTP against a running `nfv serve`, compared with PuppetDB's recorded answer. Our
 * deliberate departures from PuppetDB are applied to the expectations and listed. Used by
 * `npm run conformance:inventory` and by the tests, on the folder and on PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { invoke } from '../ops/operation.js';
import { ingestBatch } from '../ops/inventory.js';
import type { Workspace } from '../store/workspace.js';
import { REPO, SHARED } from './reference.js';

export interface Case {
  name: string;
  method: string;
  path: string;
  params: Record<string, unknown>;
  expect: {
    status: number;
    contentType?: string;
    /** Rows; a single-record answer (a JSON 404's `{"error"}`, `/nodes/<certname>`) as itself or as one row. */
    body?: unknown[] | Record<string, unknown>;
    bodyContains?: string;
    count?: number;
    ordered?: boolean;
    project?: string[];
    headers?: Record<string, string>;
  };
}

export interface CaseFile {
  dataset: any;
  cases: Case[];
}

/** Decisions of inventory.md that change what PuppetDB answers, applied to its recorded expectations. */
export const DECISIONS = [
  "reports answer agent_version where PuppetDB answers puppet_version (the interface document's name)",
];

export const CASES_FILE = path.join(SHARED, 'inventory-cases.json');

/**
 * Cases recorded from PuppetDB 7.12.1 by test/fixtures/record-pdb-cases.py over the node, fact, catalog and edge
 * entities, PQL and the root endpoint, at PuppetDB's URLs (so reports keep `puppet_version`); their dataset adds
 * replace facts to the shared one.
 */
export const PDB_CASES_FILE = path.join(REPO, 'test', 'fixtures', 'pdb-cases.json');

export const readCases = (file = CASES_FILE): CaseFile => JSON.parse(readFileSync(file, 'utf8')) as CaseFile;

/** Loads the dataset in the order PuppetDB received it: catalogs, facts (when given), reports, deactivations. */
export async function ingestDataset(ws: Workspace, dataset: any): Promise<void> {
  const facts = (dataset.facts ?? []).map((payload: unknown) => ({ command: 'replace facts', version: 5, payload }));
  const commands = [
    ...dataset.catalogs.map((payload: unknown) => ({ command: 'replace catalog', version: 9, payload })),
    ...facts,
    ...dataset.reports.map((r: any) => ({
      command: 'store report',
      version: 8,
      payload: r.report,
      received: r.receive_time,
    })),
    ...dataset.deactivations.map((payload: unknown) => ({ command: 'deactivate node', version: 3, payload })),
  ];
  const o = await invoke(ingestBatch, ws, { body: JSON.stringify(commands), format: 'json' });
  if (!o.ok) throw new Error(`ingest failed: ${o.error}`);
  const answers = o.reply.value as { applied?: boolean; hash?: string; error?: unknown }[];
  const refused = answers.filter((a) => a.error);
  if (refused.length) throw new Error(`ingest refused ${refused.length} commands: ${JSON.stringify(refused[0])}`);
  dataset.reports.forEach((r: any, k: number) => {
    const hash = answers[dataset.catalogs.length + facts.length + k]!.hash;
    if (hash !== r.hash) throw new Error(`report hash ${hash} differs from the dataset's ${r.hash}`);
  });
}

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

/** What running the cases gave: failures in words, and each case's status and body as answered. */
export interface CaseRun {
  passed: number;
  failures: string[];
  answers: string[];
}

export async function runCases(base: string, cases: Case[]): Promise<CaseRun> {
  let passed = 0;
  const failures: string[] = [];
  const answers: string[] = [];
  for (const c of cases) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(c.params)) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    const url = `${base}${c.path}${params.size ? `?${params}` : ''}`;
    const res = await fetch(url, { method: c.method });
    const text = await res.text();
    answers.push(`${res.status} ${res.headers.get('x-records') ?? ''} ${text}`);
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
        const parsed = JSON.parse(text);
        // A single-record route (`/nodes/<certname>`) is recorded as one row.
        actual = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        problems.push(`not JSON: ${text.slice(0, 120)}`);
      }
      if (e.count !== undefined && actual.length !== e.count)
        problems.push(`${actual.length} rows, expected ${e.count}`);
      if (e.body && Array.isArray(actual)) {
        const project = (r: any) => (e.project ? Object.fromEntries(e.project.map((k) => [k, r[k]])) : r);
        const got = actual.map((r) => JSON.stringify(normalise(project(r))));
        const want = (Array.isArray(e.body) ? e.body : [e.body]).map((r) =>
          JSON.stringify(normalise(project(decided(r)))),
        );
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
  return { passed, failures, answers };
}
