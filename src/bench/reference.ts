/**
 * What the benchmark and conformance tools share: where the reference material is, VEREFOO's recorded answers,
 * and one timed simulation of an input file that never throws.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeDocument } from '../model/codec.js';
import { NfvError } from '../model/errors.js';
import { NfvType } from '../model/resources.js';

import { simulate, type SimulateOptions } from '../engine/simulate.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED = path.resolve(REPO, '..', 'shared');
export const TESTFILES = path.join(SHARED, 'verefoo-testfile');

/** bin/nfv, which the benches run as an operator does: executed, so that its `#!` line gives node its flags. */
export const NFV_BIN = path.join(REPO, 'bin', 'nfv');

/** `env` with the node running the bench first on PATH, where bin/nfv's `#!` line finds it. */
export const withThisNode = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => ({
  ...env,
  PATH: [path.dirname(process.execPath), env.PATH].filter(Boolean).join(path.delimiter),
});

export interface ReferenceRow {
  status: string;
  firewalls: number;
  allocated: number;
  rules: number;
  /** rules_total: every rule of the answer's firewalls (MF's count, which the issue compares with ours). */
  totalRules: number;
  solveSeconds: number;
  note: string;
}

/** VEREFOO's answers per input (relative path) for one algorithm, from ../shared/verefoo-baseline.tsv. */
export function referenceRows(algorithm = 'AP'): Map<string, ReferenceRow> {
  const file = path.join(SHARED, 'verefoo-baseline.tsv');
  const rows = new Map<string, ReferenceRow>();
  if (!existsSync(file)) return rows;
  const [header, ...lines] = readFileSync(file, 'utf8').trimEnd().split('\n');
  const cols = header!.split('\t');
  const at = (cells: string[], name: string) => cells[cols.indexOf(name)] ?? '';
  for (const line of lines) {
    const cells = line.split('\t');
    if (at(cells, 'algo') !== algorithm) continue;
    rows.set(at(cells, 'input'), {
      status: at(cells, 'status'),
      firewalls: Number(at(cells, 'fw_total') || -1),
      allocated: Number(at(cells, 'fw_alloc') || -1),
      // rules_new is negative where VEREFOO removed configured rules (Test7_3); then its total is the bound.
      rules:
        Number(at(cells, 'rules_new') || -1) >= 0
          ? Number(at(cells, 'rules_new'))
          : Number(at(cells, 'rules_total') || -1),
      totalRules: Number(at(cells, 'rules_total') || -1),
      solveSeconds: Number(at(cells, 'solve_s') || NaN),
      note: at(cells, 'note'),
    });
  }
  return rows;
}

export function xmlFilesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.xml')) out.push(full);
    }
  };
  walk(dir);
  return out;
}

export interface Answer {
  verdict: 'SAT' | 'UNSAT' | 'REJECTED' | 'TIMEOUT' | 'CRASH';
  firewalls: number;
  allocated: number;
  rules: number;
  seconds: number;
  message?: string;
}

/** Reads and simulates one input; failures are answers too (400 REJECTED, 504 TIMEOUT, anything else CRASH). */
export async function answer(file: string, options: SimulateOptions = {}): Promise<Answer> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    const nfv = decodeDocument(NfvType, readFileSync(file, 'utf8'));
    const { report } = await simulate(nfv, options);
    return {
      verdict: report.verdict,
      firewalls: report.firewalls,
      allocated: report.allocated,
      rules: report.rules,
      seconds: seconds(),
    };
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 0;
    const verdict = status === 504 ? 'TIMEOUT' : status >= 400 && status < 500 ? 'REJECTED' : 'CRASH';
    return { verdict, firewalls: -1, allocated: -1, rules: -1, seconds: seconds(), message: (e as Error).message };
  }
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};
