/**
 * npm run bench: solves the RegressioneTestCases, NAT, FWCorrectness and NetworkTopology inputs and the
 * PerformanceTests VEREFOO recorded, in one process. For each: our seconds; a baseline measured in the same run
 * (the same engine with the problem reductions switched off: no decomposition, no collapsing of equivalent
 * allocation places); and VEREFOO AP's recorded solve seconds. Prints a table, writes bench-results/engine.{md,json}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Table from 'cli-table3';
import { REPO, TESTFILES, answer, median, referenceRows, xmlFilesUnder } from './reference.js';

const refs = referenceRows('AP');
const folders = ['RegressioneTestCases', 'NAT', 'FWCorrectness', 'NetworkTopology'];
const inputs = [
  ...folders.flatMap((f) => xmlFilesUnder(path.join(TESTFILES, f))),
  ...[...refs.keys()].filter((k) => k.startsWith('PerformanceTests/')).map((k) => path.join(TESTFILES, k)),
];

await answer(inputs[0]!); // Z3 initialises once per process; not part of any figure.

interface Row {
  input: string;
  ours: number;
  baseline: number;
  reference?: number;
  referenceStatus?: string;
  verdict: string;
}
const rows: Row[] = [];
for (const file of inputs) {
  const rel = path.relative(TESTFILES, file).split(path.sep).join('/');
  const ours = await answer(file);
  const plain = await answer(file, { tuning: { decompose: false, collapse: false, prune: false }, timeoutSeconds: 30 });
  const ref = refs.get(rel);
  rows.push({
    input: rel,
    ours: ours.seconds,
    baseline: plain.seconds,
    reference: ref && Number.isFinite(ref.solveSeconds) ? ref.solveSeconds : undefined,
    referenceStatus: ref?.status,
    verdict: ours.verdict,
  });
  if (process.stderr.isTTY) process.stderr.write('.');
}
if (process.stderr.isTTY) process.stderr.write('\n');

const fmt = (x: number | undefined) => (x === undefined ? '' : x.toFixed(3));
const ratio = (a: number | undefined, b: number) => (a === undefined ? '' : `${(a / b).toFixed(1)}x`);
const table = new Table({
  head: ['input', 'verdict', 'ours s', 'baseline s', 'baseline/ours', 'VEREFOO AP s', 'VEREFOO/ours'],
  style: { head: [], border: [] },
});
for (const r of rows) {
  const refText = r.referenceStatus === 'TIMEOUT' ? `>${fmt(r.reference)} (timeout)` : fmt(r.reference);
  table.push([
    r.input,
    r.verdict,
    fmt(r.ours),
    fmt(r.baseline),
    ratio(r.baseline, r.ours),
    refText,
    ratio(r.reference, r.ours),
  ]);
}
const withRef = rows.filter((r) => r.reference !== undefined);
const summary = {
  inputs: rows.length,
  oursMedian: median(rows.map((r) => r.ours)),
  oursMax: Math.max(...rows.map((r) => r.ours)),
  oursTotal: rows.reduce((s, r) => s + r.ours, 0),
  baselineMedian: median(rows.map((r) => r.baseline)),
  baselineTotal: rows.reduce((s, r) => s + r.baseline, 0),
  withReference: withRef.length,
  oursMedianWhereReference: median(withRef.map((r) => r.ours)),
  referenceMedian: median(withRef.map((r) => r.reference!)),
  referenceTotal: withRef.reduce((s, r) => s + r.reference!, 0),
  oursTotalWhereReference: withRef.reduce((s, r) => s + r.ours, 0),
  over5s: rows.filter((r) => r.ours > 5).map((r) => r.input),
};
const lines = [
  table.toString(),
  '',
  `inputs: ${summary.inputs}; ours: median ${fmt(summary.oursMedian)} s, max ${fmt(summary.oursMax)} s, ` +
    `total ${fmt(summary.oursTotal)} s`,
  `same-run baseline (no reductions): median ${fmt(summary.baselineMedian)} s, ` +
    `total ${fmt(summary.baselineTotal)} s; ratio of medians ${ratio(summary.baselineMedian, summary.oursMedian)}`,
  `VEREFOO AP recorded (${summary.withReference} inputs): median ${fmt(summary.referenceMedian)} s ` +
    `vs ours ${fmt(summary.oursMedianWhereReference)} s ` +
    `(${ratio(summary.referenceMedian, summary.oursMedianWhereReference)}); ` +
    `total ${fmt(summary.referenceTotal)} s vs ${fmt(summary.oursTotalWhereReference)} s ` +
    `(${ratio(summary.referenceTotal, summary.oursTotalWhereReference)})`,
  `inputs over 5 s: ${summary.over5s.length ? summary.over5s.join(', ') : 'none'}`,
];
process.stdout.write(`${lines.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'engine.md'),
  `# Engine benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'engine.json'), `${JSON.stringify({ summary, rows }, null, 2)}\n`);
process.stderr.write(`written to ${path.relative(process.cwd(), out)}/engine.md and engine.json\n`);
process.exit(0);
